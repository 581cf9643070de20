package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// A silent node is declared dead and nothing stays on it: queued jobs go
// back to pending without using an attempt, interrupted ones are recovered
// without using an attempt when their definition requests recovery, else
// retried or failed with the reason when no attempt is left. A node judges only after a
// full failover window of its own contact with the database.
func TestDeadNodeFailover(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{MaxAttempts: 2})
		require.NoError(t, st.RegisterNode(ctx, &chimedb.RegisterNodeParams{ID: "dead1", Roles: "worker"}))
		hb := store.DBTime(time.Now())
		queued := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Status: models.JobQueued, NodeID: "dead1"})
		retry := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Status: models.JobRunning, NodeID: "dead1", Attempt: 1, Heartbeat: &hb})
		exhausted := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Status: models.JobRunning, NodeID: "dead1", Attempt: 2, Heartbeat: &hb})
		paused := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Status: models.JobPaused, NodeID: "dead1", Attempt: 1, Heartbeat: &hb})
		recoverDef := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "recover", RequestsRecovery: true})
		recovered := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: recoverDef.ID, Status: models.JobRunning, NodeID: "dead1", Attempt: 1, Heartbeat: &hb})
		ageNode(t, st, "dead1", time.Minute)

		clock := clockwork.NewFakeClockAt(time.Now())
		b := newTestNode(t, st, "b", clock)
		live := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Status: models.JobRunning, NodeID: "b", Attempt: 1, Heartbeat: &hb})
		b.beatOnce(ctx)
		require.Equal(t, chimedb.NodeAlive, nodeStatus(t, st, "dead1"), "no judgement before a full window of contact")

		clock.Advance(testFailover)
		b.beatOnce(ctx)
		require.Equal(t, chimedb.NodeDead, nodeStatus(t, st, "dead1"))

		j := testdb.GetJob(t, st, queued.ID)
		require.Equal(t, models.JobPending, j.Status)
		require.Equal(t, 0, j.Attempt, "a queued job uses no attempt")
		require.Empty(t, j.NodeID)
		for _, id := range []int64{retry.ID, paused.ID} {
			j = testdb.GetJob(t, st, id)
			require.Equal(t, models.JobPending, j.Status)
			require.Empty(t, j.NodeID)
		}
		j = testdb.GetJob(t, st, recovered.ID)
		require.Equal(t, models.JobPending, j.Status)
		require.Equal(t, 0, j.Attempt, "recovered: the lost run used no attempt")
		require.Equal(t, 1, j.Recoveries)
		j = testdb.GetJob(t, st, exhausted.ID)
		require.Equal(t, models.JobFailed, j.Status)
		require.NotNil(t, j.Error)
		require.Contains(t, *j.Error, "node dead1 died")
		require.Equal(t, models.JobRunning, testdb.GetJob(t, st, live.ID).Status)

		var left int64
		require.NoError(t, st.DB().Model(&models.Job{}).Where("node_id = ? AND status IN ?", "dead1",
			[]models.JobStatus{models.JobQueued, models.JobRunning, models.JobPaused}).Count(&left).Error)
		require.Zero(t, left, "nothing stays on a dead node")
	})
}

// Two nodes with their loops running: the leader's process dies without a
// word (its loops stop, nothing is released); the other declares it dead,
// takes the scheduler lease once it expires and recovers its job. How long
// the takeover took is logged, not asserted: a loaded machine stretches it.
func TestCrashedLeaderIsReplaced(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		const hb, failover = 100 * time.Millisecond, 600 * time.Millisecond
		cfg := func(id string) *Config {
			return &Config{NodeID: id, Roles: "scheduler,worker", Heartbeat: hb, FailoverAfter: failover, Logger: testLogger()}
		}
		n1, err := New(st, cfg("n1"))
		require.NoError(t, err)
		n2, err := New(st, cfg("n2"))
		require.NoError(t, err)
		lead1, lead2 := make(chan bool, 4), make(chan bool, 4)
		n1.sched.OnChange(func(v bool) { lead1 <- v })
		n2.sched.OnChange(func(v bool) { lead2 <- v })
		ctx1, crash := context.WithCancel(context.Background())
		require.NoError(t, n1.Start(ctx1))
		require.True(t, next(t, lead1))
		require.NoError(t, n2.Start(context.Background()))
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = n2.Stop(ctx)
			_ = n1.Stop(ctx)
		})
		def := testdb.Definition(t, st, nil)
		now := store.DBTime(time.Now())
		job := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Status: models.JobRunning, NodeID: "n1", Attempt: 1, Heartbeat: &now})
		// n2 must have been in contact for a window before it may judge.
		require.Eventually(t, func() bool { return n2.members.ContactFor() >= failover }, 5*time.Second, 10*time.Millisecond)

		crash()
		killed := time.Now()
		require.True(t, next(t, lead2))
		took := time.Since(killed)
		require.Eventually(t, func() bool { return nodeStatus(t, st, "n1") == chimedb.NodeDead }, 5*time.Second, 10*time.Millisecond)
		// Nobody heartbeats this job (there is no task engine here), so the
		// reconciler may fail it before the reaper does; either way it ends
		// failed with a reason.
		require.Eventually(t, func() bool { return testdb.GetJob(t, st, job.ID).Status == models.JobFailed }, 5*time.Second, 10*time.Millisecond)
		require.NotNil(t, testdb.GetJob(t, st, job.ID).Error)
		t.Logf("lease taken over %s after the leader died (failover %s, heartbeat %s)", took.Round(time.Millisecond), failover, hb)
	})
}
