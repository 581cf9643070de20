package taskengine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsignal"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/tasks"
)

// probe records the calls of probeTask, with the row's status at OnQueue.
type probe struct {
	calls   testsignal.Signal[string]
	mu      sync.Mutex
	statusQ models.JobStatus
}

func newProbe(t *testing.T) *probe {
	p := &probe{}
	p.calls.Init(t)
	return p
}

func (p *probe) add(s string) { p.calls.Signal(s) }

func (p *probe) snapshot() []string { return p.calls.Values() }

// probeTask records OnQueue, Execute and OnComplete; OnQueue returns
// queueErr, after waiting for gate when one is set (ignoring its context
// when deaf is set, as a badly written plugin would).
type probeTask struct {
	tasks.Base
	p        *probe
	st       *store.Store
	queueErr error
	gate     chan struct{}
	deaf     bool
}

func (t *probeTask) OnQueue(ctx context.Context, job *tasks.Job) error {
	var j models.Job
	if err := t.st.DB().Select("status").Take(&j, job.ID).Error; err == nil {
		t.p.mu.Lock()
		t.p.statusQ = j.Status
		t.p.mu.Unlock()
	}
	t.p.add("on_queue")
	if t.gate != nil {
		if t.deaf {
			<-t.gate
		} else {
			select {
			case <-t.gate:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return t.queueErr
}

func (t *probeTask) Execute(context.Context, *tasks.Job) error {
	t.p.add("execute")
	return nil
}

func (t *probeTask) OnComplete(context.Context, *tasks.Job, tasks.Result) error {
	t.p.add("on_complete")
	return nil
}

// occupyPool takes every worker of e's pool behind the engine's back (the
// engine's own accounting does not see them), and returns the function
// that gives them back; it runs at cleanup too, before the engine stops.
func occupyPool(t *testing.T, e *Engine) func() {
	t.Helper()
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	e.exec.mu.Lock()
	pool := e.exec.cur.pool
	e.exec.mu.Unlock()
	for i := 0; i < e.cfg.PoolSize; i++ {
		require.NoError(t, pool.Submit(func() { <-release }))
	}
	t.Cleanup(free)
	return free
}

// startProbeEngine starts an engine of pool size 1 whose registry has
// "probe" tasks built by mk; the engine is stopped at cleanup.
func startProbeEngine(t *testing.T, st *store.Store, mk func() *probeTask) *Engine {
	t.Helper()
	reg := testRegistry()
	reg.MustRegister("probe", func() tasks.Task { return mk() })
	cfg := testConfig(t, nodeName(t))
	cfg.PoolSize = 1
	cfg.Registry = reg
	cfg.PollInterval = time.Hour // the test wakes it once the pool is taken
	return startEngine(t, st, cfg)
}

// OnQueue runs when the job enters the queue, before it is handed to the
// pool: with every pool worker taken, a claimed job's OnQueue still runs
// (and the row is queued, not running); Execute waits for a worker.
func TestOnQueueRunsBeforeThePool(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		p := newProbe(t)
		e := startProbeEngine(t, st, func() *probeTask { return &probeTask{p: p, st: st} })
		freePool := occupyPool(t, e)
		id := adHocJob(t, st, &testdb.DefinitionOpts{Name: "probe", TaskType: "probe"})
		e.Wake()

		require.Equal(t, "on_queue", p.calls.WaitOrTimeout(), "OnQueue while every pool worker is taken")
		require.Equal(t, []string{"on_queue"}, p.snapshot())
		p.mu.Lock()
		require.Equal(t, models.JobQueued, p.statusQ)
		p.mu.Unlock()
		require.Equal(t, models.JobQueued, testdb.GetJob(t, st, id).Status, "not started before a worker is free")

		freePool()
		j := waitOutcome(t, e, st, id, models.JobSucceeded)
		require.Equal(t, 1, j.Attempt)
		require.Equal(t, []string{"on_queue", "execute", "on_complete"}, p.snapshot())
	})
}

// An OnQueue error fails the job at once, final, without waiting for or
// taking a pool worker, and without using an attempt.
func TestOnQueueErrorFailsWithoutAWorker(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		p := newProbe(t)
		e := startProbeEngine(t, st, func() *probeTask {
			return &probeTask{p: p, st: st, queueErr: errors.New("quota exhausted")}
		})
		occupyPool(t, e)
		id := adHocJob(t, st, &testdb.DefinitionOpts{Name: "refused", TaskType: "probe", MaxAttempts: 3})
		e.Wake()

		j := waitOutcome(t, e, st, id, models.JobFailed)
		require.Equal(t, 0, j.Attempt, "never started")
		require.Nil(t, j.StartedAt)
		require.Contains(t, deref(j.Error), "on_queue: quota exhausted")
		require.Equal(t, []string{"on_queue"}, p.snapshot())
		requireLog(t, db, id, "failed before starting")
		left := waitLeft(t, e, id)
		require.Equal(t, models.JobFailed, left.status)
		require.True(t, left.freed, "the reserved worker given back")
	})
}

// A slow OnQueue holds up neither the claim loop nor the other jobs of the
// same claim.
func TestSlowOnQueueDoesNotBlockOthers(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		p := newProbe(t)
		gate := make(chan struct{})
		t.Cleanup(func() {
			select {
			case <-gate:
			default:
				close(gate)
			}
		})
		reg := testRegistry()
		reg.MustRegister("probe", func() tasks.Task { return &probeTask{p: p, st: st, gate: gate} })
		cfg := testConfig(t, nodeName(t))
		cfg.PoolSize = 2
		cfg.Registry = reg
		slow := adHocJob(t, st, &testdb.DefinitionOpts{Name: "slow", TaskType: "probe"})
		quick := adHocJob(t, st, &testdb.DefinitionOpts{Name: "quick", DefaultParams: `{"duration":"0s"}`})
		e := startEngine(t, st, cfg)

		waitOutcome(t, e, st, quick, models.JobSucceeded)
		require.Equal(t, models.JobQueued, testdb.GetJob(t, st, slow).Status)
		close(gate)
		waitOutcome(t, e, st, slow, models.JobSucceeded)
	})
}

// An OnQueue that ignores its context and never returns fails its job
// after OnQueueTimeout; its worker stays reserved until OnQueue does return,
// so a hung plugin cannot make the node claim more than it can run, and
// Stop does not wait for it.
func TestOnQueueTimeout(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		p := newProbe(t)
		gate := make(chan struct{})
		reg := testRegistry()
		reg.MustRegister("probe", func() tasks.Task { return &probeTask{p: p, st: st, gate: gate, deaf: true} })
		cfg := testConfig(t, nodeName(t))
		cfg.PoolSize = 1
		cfg.Registry = reg
		cfg.OnQueueTimeout = 300 * time.Millisecond
		hung := adHocJob(t, st, &testdb.DefinitionOpts{Name: "hung", TaskType: "probe", MaxAttempts: 2})
		e := newTestEngine(t, st, cfg)
		require.NoError(t, e.Start(context.Background()))

		j := waitOutcome(t, e, st, hung, models.JobFailed)
		require.Contains(t, deref(j.Error), "did not return within 300ms")
		require.Equal(t, 0, j.Attempt)
		require.False(t, waitLeft(t, e, hung).freed, "the hung OnQueue keeps its worker reserved")
		require.EqualValues(t, 1, e.workers.taken.Load())

		next := adHocJob(t, st, &testdb.DefinitionOpts{Name: "next", DefaultParams: `{"duration":"0s"}`})
		close(gate)
		waitOutcome(t, e, st, next, models.JobSucceeded)

		// Stop does not wait for an OnQueue that ignores its context.
		gate2 := make(chan struct{})
		defer close(gate2)
		reg.MustRegister("deaf", func() tasks.Task { return &probeTask{p: p, st: st, gate: gate2, deaf: true} })
		held := adHocJob(t, st, &testdb.DefinitionOpts{Name: "held", TaskType: "deaf"})
		waitClaimed(t, e, held)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		require.NoError(t, e.Stop(ctx))
		require.Equal(t, models.JobPending, testdb.GetJob(t, st, held).Status, "released: it never started")
	})
}
