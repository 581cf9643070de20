package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// The reconciler retries a running job whose heartbeat stopped, releases a
// queued job its node never started, and hands
// an active schedule without a trigger back to the schedule engine by
// touching it, once.
func TestReconcile(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		a := newTestNode(t, st, "a", clockwork.NewFakeClockAt(time.Now()))
		a.sched.renew(ctx) // a live scheduler lease: someone to act on a nudge
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{MaxAttempts: 2})
		old := store.DBTime(time.Now().Add(-time.Minute))
		stalled := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Status: models.JobRunning, NodeID: "a", Attempt: 1, Heartbeat: &old})
		queued := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Status: models.JobQueued, NodeID: "a"})
		require.NoError(t, st.DB().Exec("UPDATE jobs SET updated_at = ?, queued_at = ? WHERE id IN ?", old, old, []int64{stalled.ID, queued.ID}).Error)
		expr := "* * * * *"
		s := models.Schedule{
			Name: "s", JobDefinitionID: def.ID, ScheduleType: models.ScheduleCron, CronExpr: &expr, Timezone: "UTC",
			MisfirePolicy: models.MisfireFireOnce, Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive,
		}
		require.NoError(t, st.DB().Create(&s).Error)
		require.NoError(t, st.DB().Exec("UPDATE schedules SET updated_at = ? WHERE id = ?", store.DBTime(time.Now().Add(-time.Hour)), s.ID).Error)

		rep, err := a.Reconcile(ctx)
		require.NoError(t, err)
		require.Equal(t, []int64{stalled.ID}, rep.Stalled.Retried)
		require.Equal(t, models.JobPending, testdb.GetJob(t, st, stalled.ID).Status)
		require.Equal(t, []int64{queued.ID}, rep.Released)
		require.Equal(t, models.JobPending, testdb.GetJob(t, st, queued.ID).Status)
		require.Equal(t, []int64{s.ID}, rep.Schedules.MissingTrigger)
		require.Equal(t, []int64{s.ID}, rep.Nudged)

		rep, err = a.Reconcile(ctx)
		require.NoError(t, err)
		require.Empty(t, rep.Nudged, "touched once; the schedule engine has it now")

		j, err := a.ResetJob(ctx, stalled.ID)
		require.NoError(t, err, "resetting a pending job is a no-op")
		require.Equal(t, models.JobPending, j.Status)
	})
}

// Retention deletes old finished jobs in batches until none are left.
func TestRetention(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		a := newTestNode(t, st, "a", clockwork.NewRealClock())
		def := testdb.Definition(t, st, nil)
		old := store.DBTime(time.Now().Add(-31 * 24 * time.Hour))
		jobs := make([]models.Job, 25)
		for i := range jobs {
			jobs[i] = models.Job{JobDefinitionID: def.ID, ScheduledAt: old.Add(time.Duration(i) * time.Second), RunAt: old, Status: models.JobSucceeded, FinishedAt: &old}
		}
		require.NoError(t, st.DB().Create(&jobs).Error)
		keep := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Status: models.JobRunning, NodeID: "a", Attempt: 1})
		n, err := a.retain(ctx, func() bool { return true })
		require.NoError(t, err)
		require.Equal(t, 25, n)
		var left []int64
		require.NoError(t, st.DB().Model(&models.Job{}).Pluck("id", &left).Error)
		require.Equal(t, []int64{keep.ID}, left)
	})
}

// Retention deletes audit rows as old as the finished jobs it deletes,
// and keeps the younger ones.
func TestRetentionAudit(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		a := newTestNode(t, st, "a", clockwork.NewRealClock())
		// Each insert writes an audit row.
		testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "d1"})
		testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "d2"})
		var ids []int64
		require.NoError(t, st.DB().Raw("SELECT id FROM audit_log ORDER BY id").Scan(&ids).Error)
		require.GreaterOrEqual(t, len(ids), 2)
		require.NoError(t, st.DB().Exec("UPDATE audit_log SET at = ? WHERE id <> ?",
			store.DBTime(time.Now().Add(-31*24*time.Hour)), ids[len(ids)-1]).Error)
		_, err := a.retain(ctx, func() bool { return true })
		require.NoError(t, err)
		var left []int64
		require.NoError(t, st.DB().Raw("SELECT id FROM audit_log").Scan(&left).Error)
		require.Equal(t, ids[len(ids)-1:], left)
	})
}

// retention_days beyond a century is refused: days × 24h overflows
// time.Duration past about 106751 days, and the overflowed age used to
// delete every finished job. Changing it live is checked the same way.
func TestRetentionDaysBounded(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		_, err := New(st, &Config{NodeID: "a", RetentionDays: 200000, Logger: testLogger()})
		require.ErrorContains(t, err, "RetentionDays")

		a := newTestNode(t, st, "a", clockwork.NewRealClock())
		def := testdb.Definition(t, st, nil)
		done := store.DBTime(time.Now().Add(-time.Minute))
		job := models.Job{JobDefinitionID: def.ID, ScheduledAt: done, RunAt: done, Status: models.JobSucceeded, FinishedAt: &done}
		require.NoError(t, st.DB().Create(&job).Error)
		require.ErrorContains(t, a.SetRetentionDays(200000), "at most 36500")
		require.ErrorContains(t, a.SetRetentionDays(-1), "negative")
		require.Equal(t, 30, a.RetentionDays(), "a refused value leaves the previous one")
		require.NoError(t, a.SetRetentionDays(MaxRetentionDays))
		n, err := a.retain(ctx, func() bool { return true })
		require.NoError(t, err)
		require.Zero(t, n)
		testdb.GetJob(t, st, job.ID)
		require.Equal(t, MaxRetentionDays, a.RetentionDays())
	})
}
