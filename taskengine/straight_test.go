package taskengine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsignal"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/tasks"
)

// startCounter counts StartJobs calls and the jobs they carry.
type startCounter struct {
	jobStore
	calls, jobs atomic.Int64
}

func (c *startCounter) StartJobs(ctx context.Context, p *chimedb.StartJobsParams) (map[int64]int, error) {
	c.calls.Add(1)
	c.jobs.Add(int64(len(p.Jobs)))
	return c.jobStore.StartJobs(ctx, p)
}

// A job of a tasks.QueueFree task is claimed straight into running: no
// start UPDATE, started_at written by the claim. A task with an OnQueue of
// its own still goes through queued and the starter.
func TestQueueFreeJobIsClaimedStraightIntoRunning(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		free := adHocJob(t, st, &testdb.DefinitionOpts{Name: "free", DefaultParams: `{"duration":"0s"}`})
		sc := &startCounter{jobStore: st}
		e := startEngine(t, sc, testConfig(t, nodeName(t)))
		j := waitOutcome(t, e, st, free, models.JobSucceeded)
		require.Equal(t, 1, j.Attempt)
		require.NotNil(t, j.StartedAt)
		require.NotNil(t, j.QueuedAt)
		require.False(t, j.StartedAt.Before(*j.QueuedAt))
		require.Zero(t, sc.calls.Load(), "no start UPDATE for a job the claim started")

		hooked := adHocJob(t, st, &testdb.DefinitionOpts{Name: "hooked", TaskType: queuedSleepKind, DefaultParams: `{"duration":"0s"}`})
		waitOutcome(t, e, st, hooked, models.JobSucceeded)
		require.EqualValues(t, 1, sc.jobs.Load(), "the task with an OnQueue is started by the starter")
	})
}

// stopOnClaim asks every job it claims to stop the moment the claim has
// committed: before the engine has the job, let alone registered its run.
type stopOnClaim struct {
	jobStore
	st *store.Store
}

func (s *stopOnClaim) ClaimJobs(ctx context.Context, p *chimedb.ClaimParams) (*chimedb.ClaimResult, error) {
	res, err := s.jobStore.ClaimJobs(ctx, p)
	if err == nil {
		for _, j := range res.Jobs {
			if err := s.st.DB().Exec(`UPDATE jobs SET control = 'stop' WHERE id = ?`, j.ID).Error; err != nil {
				panic(err)
			}
		}
	}
	return res, err
}

// A job claimed straight into running and asked to stop at once (between
// the claim's commit and its run's start) is stopped by its node like any
// running job: it ends stopped with its one attempt, its Execute cut off,
// not canceled as a job that never started would be.
func TestStraightClaimedJobStoppedAtOnce(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		gate, _ := openGate(t) // never opened: only the stop ends the job
		id := adHocJob(t, st, &testdb.DefinitionOpts{Name: "stopped", TaskType: "waitfree", DefaultParams: `{"gate":"` + gate + `"}`})
		e := startEngine(t, &stopOnClaim{jobStore: st, st: st}, testConfig(t, nodeName(t)))
		j := waitOutcome(t, e, st, id, models.JobStopped)
		require.Equal(t, 1, j.Attempt)
		require.Equal(t, models.ControlNone, j.Control)
		require.NotNil(t, j.StartedAt)
		requireLog(t, db, id, "stop requested")
	})
}

// A job claimed straight into running that has not reached a worker when
// Stop begins goes back to pending with its attempt given back, as a
// queued job does: it never began.
func TestStraightClaimedJobReleasedOnShutdown(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		var armed atomic.Bool
		held, entered := make(chan struct{}), make(chan struct{}, 1)
		cfg := testConfig(t, nodeName(t))
		cfg.Registry.MustRegister("held", func() tasks.Task {
			// The engine asks each kind once whether it is QueueFree;
			// once armed, the factory holds the claimed job before the pool.
			if armed.Load() {
				entered <- struct{}{}
				<-held
			}
			return &waitFreeTask{}
		})
		e := newTestEngine(t, st, cfg)
		require.NoError(t, e.Start(context.Background()))
		waitClaimAfter(t, e, 0) // the kinds have been asked
		armed.Store(true)
		id := adHocJob(t, st, &testdb.DefinitionOpts{Name: "held", TaskType: "held", DefaultParams: `{"gate":"never"}`})
		e.Wake()
		<-entered
		require.Equal(t, models.JobRunning, testdb.GetJob(t, st, id).Status, "claimed straight into running")

		e.exec.mu.Lock()
		closing := e.exec.cur.queue.Done()
		e.exec.mu.Unlock()
		stopped := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			stopped <- e.Stop(ctx)
		}()
		<-closing // Stop began
		close(held)
		require.NoError(t, <-stopped)

		j := testdb.GetJob(t, st, id)
		require.Equal(t, models.JobPending, j.Status)
		require.Equal(t, 0, j.Attempt, "the attempt is given back")
		require.Nil(t, j.StartedAt)
		require.Empty(t, j.NodeID)
		requireLog(t, db, id, "released to pending: node shutting down before the job started")
	})
}

// Two engines on one database claim straight into running side by side:
// every job runs exactly once, on one node, with one attempt.
func TestStraightClaimTwoEngines(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		var mu sync.Mutex
		runs := map[int64][]string{}
		var ran testsignal.Signal[int64]
		ran.Init(t)
		reg := testRegistry()
		reg.MustRegister("count", func() tasks.Task { return &countTask{mu: &mu, runs: runs, ran: &ran} })
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "count", TaskType: "count"}).ID
		const n = 400
		insertRows(t, db, n, def, models.JobPending, time.Now().Add(-time.Second))
		engines := map[string]*Engine{}
		for _, node := range []string{nodeName(t) + "-a", nodeName(t) + "-b"} {
			cfg := testConfig(t, node)
			cfg.Registry = reg
			cfg.PoolSize = 16
			engines[node] = startEngine(t, st, cfg)
		}
		runsSeen := 0
		ran.WaitFor(fmt.Sprintf("%d runs", n), func(int64) bool { runsSeen++; return runsSeen == n })
		mu.Lock()
		defer mu.Unlock()
		for id, on := range runs {
			waitOutcome(t, engines[on[0]], st, id, models.JobSucceeded)
		}
		require.Len(t, runs, n)
		nodes := map[string]int{}
		for id, on := range runs {
			require.Len(t, on, 1, "job %d ran more than once: %v", id, on)
			nodes[on[0]]++
		}
		var jobs []models.Job
		require.NoError(t, db.Find(&jobs).Error)
		for _, j := range jobs {
			require.Equal(t, 1, j.Attempt, "job %d", j.ID)
			require.Equal(t, runs[j.ID][0], j.NodeID, "job %d: the row names the node that ran it", j.ID)
		}
		t.Logf("jobs per node: %v", nodes)
	})
}

// countTask records which node ran each job, and signals each run.
type countTask struct {
	tasks.Base
	mu   *sync.Mutex
	runs map[int64][]string
	ran  *testsignal.Signal[int64]
}

func (c *countTask) QueueFree() {}

func (c *countTask) Execute(_ context.Context, job *tasks.Job) error {
	c.mu.Lock()
	c.runs[job.ID] = append(c.runs[job.ID], job.NodeID)
	c.mu.Unlock()
	c.ran.Signal(job.ID)
	return nil
}

// lostStart commits the first StartJobs and then answers with an error, as
// when the database goes away between the commit and its answer; the
// starter's two retries and the first releases fail too, the database
// still being away.
type lostStart struct {
	jobStore
	lost         atomic.Bool
	failStarts   atomic.Int64
	failReleases atomic.Int64
}

func (s *lostStart) StartJobs(ctx context.Context, p *chimedb.StartJobsParams) (map[int64]int, error) {
	if s.lost.CompareAndSwap(false, true) {
		if _, err := s.jobStore.StartJobs(ctx, p); err != nil {
			return nil, err
		}
		return nil, errors.New("invalid connection (the answer to a committed start was lost)")
	}
	if s.failStarts.Add(-1) >= 0 {
		return nil, errors.New("connection refused")
	}
	return s.jobStore.StartJobs(ctx, p)
}

func (s *lostStart) ReleaseJobs(ctx context.Context, p *chimedb.ReleaseJobsParams) ([]int64, error) {
	if s.failReleases.Add(-1) >= 0 {
		return nil, errors.New("connection refused")
	}
	return s.jobStore.ReleaseJobs(ctx, p)
}

// A start whose UPDATE committed but whose answer was lost, with the
// database still away when the job is released: the job goes back to
// pending once the database answers, and runs. It was left running on its
// node instead, never run and never recovered (TestDatabaseOutage).
func TestLostStartIsReleased(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		id := adHocJob(t, st, &testdb.DefinitionOpts{Name: "hooked", TaskType: queuedSleepKind, DefaultParams: `{"duration":"0s"}`})
		ls := &lostStart{jobStore: st}
		ls.failStarts.Store(2)
		ls.failReleases.Store(2)
		e := startEngine(t, ls, testConfig(t, nodeName(t)))
		j := waitOutcome(t, e, st, id, models.JobSucceeded)
		require.True(t, ls.lost.Load(), "the first start's answer was lost")
		require.Equal(t, 1, j.Attempt, "the lost start's attempt was given back")
		require.Positive(t, countLogs(t, st.DB(), id, "released to pending: marking it running failed"))
	})
}
