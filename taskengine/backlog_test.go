package taskengine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/tasks/sleep"
)

// backlogEngine starts an engine of one worker whose backlog takes up to
// four jobs, and holds the worker with a job that runs until open. With
// fake, its clock is a fake one (made after the job, which is then due)
// and BacklogWait 1s.
func backlogEngine(t *testing.T, st *store.Store, fake bool) (e *Engine, clock *clockwork.FakeClock, open func()) {
	t.Helper()
	gate, open := openGate(t)
	t.Cleanup(open)
	hold := adHocJob(t, st, &testdb.DefinitionOpts{Name: "hold", TaskType: "wait", DefaultParams: `{"gate":"` + gate + `"}`})
	cfg := testConfig(t, nodeName(t))
	cfg.PoolSize, cfg.Backlog, cfg.BacklogWait = 1, 4, time.Hour
	if fake {
		clock = clockwork.NewFakeClock()
		cfg.Clock, cfg.BacklogWait = clock, time.Second
	}
	e = startEngine(t, st, cfg)
	waitStarted(t, e, hold)
	// The claim of the held job filled the pool's one worker, so it says
	// due jobs may be left; none are, and no claim runs to say so while
	// the worker is held.
	e.producer.dueLeft.Store(false)
	return e, clock, open
}

// deliverBacklog writes n jobs queued on e's node, as a fire's backlog
// does, has e reserve their places and delivers them, and waits until they
// all wait for the busy worker.
func deliverBacklog(t *testing.T, e *Engine, st *store.Store, n int) []int64 {
	t.Helper()
	def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: fmt.Sprintf("burst-%d", time.Now().UnixNano()), TaskType: sleep.Kind,
		DefaultParams: `{"duration":"0s"}`, MaxAttempts: 1})
	// A run timed: the backlog is bounded by Backlog, not by the pool size.
	e.workers.noteHeld(time.Millisecond)
	slots, queued, kinds := e.reserveHandoff(n, true)
	require.Zero(t, slots, "the worker is busy")
	require.Equal(t, n, queued)
	require.Contains(t, kinds, sleep.Kind)
	var jobs []chimedb.ClaimedJob
	var ids []int64
	for range n {
		j := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Status: models.JobQueued, NodeID: e.cfg.NodeID})
		jobs = append(jobs, chimedb.ClaimedJob{Job: j, Definition: &def})
		ids = append(ids, j.ID)
	}
	e.DeliverHandoff(jobs, queued)
	require.Eventually(t, func() bool { return backlogLen(e) == n }, 20*time.Second, time.Millisecond, "jobs in the backlog")
	return ids
}

func backlogLen(e *Engine) int {
	e.exec.qmu.Lock()
	defer e.exec.qmu.Unlock()
	return len(e.exec.bl.waiting)
}

// requireGivenBack checks that job id went back to pending without using
// an attempt, for reason.
func requireGivenBack(t *testing.T, e *Engine, st *store.Store, id int64, reason string) {
	t.Helper()
	require.Equal(t, released, waitLeft(t, e, id).status)
	j := testdb.GetJob(t, st, id)
	require.Equal(t, models.JobPending, j.Status)
	require.Zero(t, j.Attempt)
	require.Empty(t, j.NodeID)
	require.Nil(t, j.StartedAt)
	requireLog(t, st.DB(), id, reason)
}

// The backlog's places are bounded by Backlog past the pool, and before any
// run has been timed by the pool size; without Backlog there are none.
func TestBacklogReservation(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		cfg := testConfig(t, nodeName(t))
		cfg.PoolSize, cfg.Backlog, cfg.PollInterval = 2, 5, time.Hour
		e := startEngine(t, st, cfg)
		waitClaimAfter(t, e, 0)
		slots, queued, _ := e.reserveHandoff(10, true)
		require.Equal(t, []int{2, 2}, []int{slots, queued}, "untimed: a backlog of the pool size")
		e.DeliverHandoff(nil, slots+queued)
		e.workers.noteHeld(time.Millisecond)
		slots, queued, _ = e.reserveHandoff(10, true)
		require.Equal(t, []int{2, 5}, []int{slots, queued})
		more, _ := e.ReserveHandoff(1)
		require.Zero(t, more, "no free worker")
		e.DeliverHandoff(nil, slots+queued)
		// Due jobs left by a full claim come first: no backlog then.
		e.producer.dueLeft.Store(true)
		slots, queued, _ = e.reserveHandoff(10, true)
		require.Equal(t, []int{2, 0}, []int{slots, queued}, "due jobs wait in the database")
		e.DeliverHandoff(nil, slots+queued)
		e.producer.dueLeft.Store(false)
		// Runs that hold their worker 1 s: the pool starts none within the target.
		e.workers.held.Store(int64(time.Second))
		slots, queued, _ = e.reserveHandoff(10, true)
		require.Equal(t, []int{2, 0}, []int{slots, queued}, "long runs take no backlog")
		e.DeliverHandoff(nil, slots+queued)
		require.Zero(t, e.workers.taken.Load())

		cfg = testConfig(t, nodeName(t)+"-none")
		cfg.PoolSize, cfg.PollInterval = 2, time.Hour
		e = startEngine(t, st, cfg)
		waitClaimAfter(t, e, 0)
		e.workers.noteHeld(time.Millisecond)
		slots, queued, _ = e.reserveHandoff(10, true)
		require.Equal(t, []int{2, 0}, []int{slots, queued}, "Backlog 0: today's hand-off")
		e.DeliverHandoff(nil, slots+queued)
	})
}

// Jobs of the backlog wait for the busy worker and run on it, one after the
// other, as their first attempt, without a claim.
func TestBacklogRunsWhenWorkerFrees(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		e, _, open := backlogEngine(t, st, false)
		ids := deliverBacklog(t, e, st, 3)
		for _, id := range ids {
			require.Equal(t, models.JobQueued, testdb.GetJob(t, st, id).Status, "waiting, not started")
		}
		open()
		for _, id := range ids {
			j := waitOutcome(t, e, st, id, models.JobSucceeded)
			require.Equal(t, 1, j.Attempt)
			require.Equal(t, e.cfg.NodeID, j.NodeID)
			require.NotNil(t, j.StartedAt)
		}
		for _, id := range ids {
			waitLeft(t, e, id)
		}
		require.Zero(t, backlogLen(e))
		// A poll's claim reserves the free worker while it runs.
		require.Eventually(t, e.Idle, 20*time.Second, time.Millisecond)
		for _, id := range ids {
			require.Equal(t, models.JobSucceeded, testdb.GetJob(t, st, id).Status)
		}
	})
}

// Stop gives the backlog back to pending at once, no attempt used, while
// the running job has its grace.
func TestBacklogGivenBackAtStop(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		e, _, open := backlogEngine(t, st, false)
		ids := deliverBacklog(t, e, st, 2)
		stopped := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			stopped <- e.Stop(ctx)
		}()
		for _, id := range ids {
			requireGivenBack(t, e, st, id, "node shutting down before the job started")
		}
		open()
		require.NoError(t, <-stopped)
	})
}

// A draining node gives its backlog back at once, for other nodes, and
// finishes the job it runs.
func TestBacklogGivenBackOnDrain(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		e, _, open := backlogEngine(t, st, false)
		ids := deliverBacklog(t, e, st, 2)
		e.SetDrain(models.NodeDraining)
		for _, id := range ids {
			requireGivenBack(t, e, st, id, "is draining and the job had not started")
		}
		open()
		require.Eventually(t, e.Idle, 20*time.Second, time.Millisecond)
	})
}

// A job that waits BacklogWait for a worker goes back to pending, no
// attempt used, and the node's fires take no backlog for a while.
func TestBacklogWaitBounded(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		e, clock, open := backlogEngine(t, st, true)
		ids := deliverBacklog(t, e, st, 2)
		clock.Advance(999 * time.Millisecond)
		require.Equal(t, 2, backlogLen(e), "given back before BacklogWait")
		clock.Advance(time.Millisecond)
		for _, id := range ids {
			requireGivenBack(t, e, st, id, "came free for it within 1s")
		}
		_, queued, _ := e.reserveHandoff(1, true)
		require.Zero(t, queued, "a backlog just after one waited in vain")
		clock.Advance(backlogPause * time.Second)
		_, queued, _ = e.reserveHandoff(1, true)
		require.Equal(t, 1, queued, "the backlog after the pause")
		e.DeliverHandoff(nil, queued)
		// Stop's grace is on the fake clock: the held job ends first.
		open()
		require.Eventually(t, e.Idle, 20*time.Second, time.Millisecond)
	})
}
