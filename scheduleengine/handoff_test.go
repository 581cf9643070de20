package scheduleengine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/taskengine"
	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/tasks/sleep"
)

// Kinds of the hand-off tests' task engine besides sleep (QueueFree).
const (
	hookedKind = "hooked"   // has an OnQueue of its own: never handed off
	gateKind   = "gatefree" // QueueFree, runs until the test opens its gate
)

type hookedTask struct{ tasks.Base }

func (*hookedTask) Execute(context.Context, *tasks.Job) error { return nil }

type gateTask struct {
	tasks.Base
	gate <-chan struct{}
}

func (*gateTask) QueueFree() {}
func (g *gateTask) Execute(ctx context.Context, _ *tasks.Job) error {
	select {
	case <-g.gate:
		return nil
	case <-ctx.Done():
		return tasks.ContextError(ctx)
	}
}

// claimCount counts the task engine's claims and the jobs they took.
type claimCount struct {
	chimedb.TaskStore
	n, done atomic.Int64 // claims begun, returned
	mu      sync.Mutex
	claimed map[int64]bool
}

func (c *claimCount) ClaimJobs(ctx context.Context, p *chimedb.ClaimParams) (*chimedb.ClaimResult, error) {
	c.n.Add(1)
	res, err := c.TaskStore.ClaimJobs(ctx, p)
	defer c.done.Add(1)
	if err == nil {
		c.mu.Lock()
		for _, j := range res.Jobs {
			c.claimed[j.ID] = true
		}
		c.mu.Unlock()
	}
	return res, err
}

func (c *claimCount) wasClaimed(id int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.claimed[id]
}

// failFirstWrite fails the first fire transaction: it runs on a context
// already canceled, so the database refuses it.
type failFirstWrite struct {
	*store.Store
	calls atomic.Int64
}

func (f *failFirstWrite) WriteFires(ctx context.Context, p *chimedb.WriteFiresParams) (*chimedb.WriteFiresResult, error) {
	if f.calls.Add(1) == 1 {
		dead, cancel := context.WithCancel(ctx)
		cancel()
		res, err := f.Store.WriteFires(dead, p)
		if err == nil {
			return nil, errors.New("test: the canceled fire transaction committed")
		}
		return res, err
	}
	return f.Store.WriteFires(ctx, p)
}

// handoffNode is a schedule engine (fake clock) and a task engine (real

// fireFiveGated fires five allow-overlap schedules of gated tasks due at
// the same instant on a node of two workers, and returns the node, the
// instant, the schedules and what opens the gate (also opened at cleanup).
func fireFiveGated(t *testing.T, st Store, opts ...func(*taskengine.Config)) (*handoffNode, time.Time, []int64, func()) {
	t.Helper()
	gate := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(open)
	n := newHandoffNode(t, st, 2, gate, true, opts...)
	start := n.clock.Now()
	var ids []int64
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		ids = append(ids, n.schedule(t, name, gateKind, models.ConcurrencyAllow, start))
	}
	n.e.testSignals.fired.Init(t)
	n.at(t, start)
	return n, start, ids, open
}

// clock, a poll that never ticks) of one node on one database.
type handoffNode struct {
	*bundle
	te     *taskengine.Engine
	claims *claimCount
	defs   map[string]int64 // task kind → definition
}

func newHandoffNode(t *testing.T, st Store, pool int, gate <-chan struct{}, withTasks bool, opts ...func(*taskengine.Config)) *handoffNode {
	t.Helper()
	db := dbOf(st)
	reg := tasks.NewRegistry()
	reg.MustRegister(sleep.Kind, sleep.New)
	reg.MustRegister(hookedKind, func() tasks.Task { return &hookedTask{} })
	reg.MustRegister(gateKind, func() tasks.Task { return &gateTask{gate: gate} })
	n := &handoffNode{claims: &claimCount{TaskStore: db, claimed: map[int64]bool{}}, defs: map[string]int64{}}
	clock := newClock() // both engines': due jobs are due to the claim too
	for _, k := range []string{sleep.Kind, hookedKind, gateKind} {
		d := models.JobDefinition{Name: k, TaskType: k, DefaultParams: models.JSON(`{"duration":"0s"}`), MaxAttempts: 1, NotifyOn: models.NotifyNever}
		require.NoError(t, db.DB().Create(&d).Error)
		n.defs[k] = d.ID
	}
	node := "n-" + t.Name()
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	var seOpts []func(*Config)
	if withTasks {
		cfg := taskengine.Config{NodeID: node, Logger: log, PoolSize: pool, Registry: reg, Clock: clock}
		for _, o := range opts {
			o(&cfg)
		}
		te := startTaskEngine(t, n.claims, cfg)
		// The start's own claim, returned (it reserves the free workers
		// while it runs): every claim after it is one a fire caused.
		require.Eventually(t, func() bool { return n.claims.done.Load() == 1 }, 10*time.Second, time.Millisecond)
		n.te = te
		// As app wires them: fires go through the task engine's
		// decorator of the store, and nudge its claim.
		st = te.HandoffStore(st)
		seOpts = append(seOpts, func(c *Config) { c.OnFire = te.Wake })
	}
	// Registered after the task engine: its Stop runs first at cleanup,
	// as in chime serve.
	n.bundle = setupWithClock(t, st, node, clock, seOpts...)
	return n
}

// startTaskEngine starts a task engine on st with cfg, whose poll never
// ticks (fires wake it) and whose other loops are quick, and stops it at
// cleanup, before the schedule engine set up after it.
func startTaskEngine(t *testing.T, st chimedb.TaskStore, cfg taskengine.Config) *taskengine.Engine {
	t.Helper()
	cfg.PollInterval, cfg.ControlInterval, cfg.HeartbeatInterval, cfg.ShutdownGrace = time.Hour, 50*time.Millisecond, 100*time.Millisecond, 5*time.Second
	te, err := taskengine.New(st, &cfg)
	require.NoError(t, err)
	require.NoError(t, te.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, te.Stop(ctx))
	})
	return te
}

// schedule adds an every-minute interval schedule of kind's definition,
// firing first at created.
func (n *handoffNode) schedule(t *testing.T, name, kind string, conc models.Concurrency, created time.Time) int64 {
	t.Helper()
	s := n.bundle.schedule(t, models.Schedule{Name: name, ScheduleType: models.ScheduleInterval, IntervalSeconds: ptr(60), Concurrency: conc}, created)
	require.NoError(t, n.st.DB().Model(&models.Schedule{}).Where("id = ?", s.ID).Update("job_definition_id", n.defs[kind]).Error)
	return s.ID
}

// waitJobs waits, with a deadline, until every job of ids is in want, and
// returns the jobs by schedule.
func (n *handoffNode) waitJobs(t *testing.T, want models.JobStatus, ids ...int64) map[int64]models.Job {
	t.Helper()
	var out map[int64]models.Job
	require.Eventually(t, func() bool {
		out = map[int64]models.Job{}
		var rows []models.Job
		require.NoError(t, n.st.DB().Where("schedule_id IN ?", ids).Find(&rows).Error)
		for _, r := range rows {
			if r.Status != want {
				return false
			}
			out[*r.ScheduleID] = r
		}
		return len(out) == len(ids)
	}, 20*time.Second, 5*time.Millisecond, "jobs of %v not all %s", ids, want)
	return out
}

// handedOff says the row was written running by the fire, not claimed:
// queued_at and started_at are both the fire's instant.
func (n *handoffNode) handedOff(j models.Job, fire time.Time) bool {
	return !n.claims.wasClaimed(j.ID) && j.QueuedAt != nil && j.StartedAt != nil &&
		j.QueuedAt.Equal(*j.StartedAt) && j.StartedAt.Sub(store.DBTime(fire)).Abs() < time.Millisecond
}

// Fired jobs of QueueFree task types go from the fire straight to this
// node's workers and run without any claim.
func TestHandoffRunsFiredJobsWithoutClaim(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		n := newHandoffNode(t, st, 8, nil, true)
		start := n.clock.Now()
		var ids []int64
		for _, name := range []string{"a", "b", "c"} {
			ids = append(ids, n.schedule(t, name, sleep.Kind, models.ConcurrencyAllow, start))
		}
		n.at(t, start)
		jobs := n.waitJobs(t, models.JobSucceeded, ids...)
		for _, j := range jobs {
			require.True(t, n.handedOff(j, start), "job %d: queued_at %v started_at %v", j.ID, j.QueuedAt, j.StartedAt)
			require.Equal(t, 1, j.Attempt)
			require.Equal(t, n.e.cfg.NodeID, j.NodeID)
		}
		require.EqualValues(t, 1, n.claims.n.Load(), "no claim after the start's")
	})
}

// Jobs of a forbid schedule and of a task type with an OnQueue of its own
// are written pending and claimed as before.
func TestHandoffSkipsForbidAndQueuedKinds(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		n := newHandoffNode(t, st, 8, nil, true)
		start := n.clock.Now()
		free := n.schedule(t, "free", sleep.Kind, models.ConcurrencyAllow, start)
		forbid := n.schedule(t, "forbid", sleep.Kind, models.ConcurrencyForbid, start)
		hooked := n.schedule(t, "hooked", hookedKind, models.ConcurrencyAllow, start)
		n.at(t, start)
		jobs := n.waitJobs(t, models.JobSucceeded, free, forbid, hooked)
		require.True(t, n.handedOff(jobs[free], start))
		require.True(t, n.claims.wasClaimed(jobs[forbid].ID), "a forbid schedule's job is claimed")
		require.True(t, n.claims.wasClaimed(jobs[hooked].ID), "a job with an OnQueue is claimed")
	})
}

// A fire hands off no more jobs than there are free workers: the rest are
// written pending and claimed once workers free up.
func TestHandoffBoundedByFreeWorkers(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		n, start, ids, open := fireFiveGated(t, st)
		require.Equal(t, firedBatch{jobs: 5, handedOff: 2}, n.e.testSignals.fired.WaitOrTimeout(),
			"one batch, two of its jobs handed off")
		// The fire's transaction wrote both states; the gate holds the two
		// workers, so nothing has moved since.
		var rows []models.Job
		require.NoError(t, n.st.DB().Where("schedule_id IN ?", ids).Find(&rows).Error)
		var running, pending int
		for _, r := range rows {
			switch r.Status {
			case models.JobRunning:
				require.True(t, n.handedOff(r, start), "the running jobs are the handed-off ones")
				running++
			case models.JobPending:
				pending++
			}
		}
		require.Equal(t, []int{2, 3}, []int{running, pending}, "running, pending")
		open()
		jobs := n.waitJobs(t, models.JobSucceeded, ids...)
		claimed := 0
		for _, j := range jobs {
			if n.claims.wasClaimed(j.ID) {
				claimed++
			}
		}
		require.Equal(t, 3, claimed, "the jobs beyond the free workers were claimed")
	})
}

// A fire transaction that fails gives its reservation back: with a pool of
// two, a kept reservation would leave no worker for the retry, which hands
// both jobs off.
func TestHandoffFailedFireGivesWorkersBack(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ff := &failFirstWrite{Store: st}
		n := newHandoffNode(t, ff, 2, nil, true)
		start := n.clock.Now()
		a := n.schedule(t, "a", sleep.Kind, models.ConcurrencyAllow, start)
		b := n.schedule(t, "b", sleep.Kind, models.ConcurrencyAllow, start)
		n.at(t, start)
		require.EqualValues(t, 1, ff.calls.Load(), "the first write failed")
		retry := start.Add(2 * time.Second) // past RetryDelay, within the misfire threshold
		n.at(t, retry)
		jobs := n.waitJobs(t, models.JobSucceeded, a, b)
		for _, j := range jobs {
			require.True(t, n.handedOff(j, retry), "job %d handed off by the retry", j.ID)
		}
		require.EqualValues(t, 1, n.claims.n.Load(), "no claim after the start's")
	})
}

// A node without a task engine writes its fires pending, as before.
func TestHandoffSchedulerOnlyWritesPending(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		n := newHandoffNode(t, st, 0, nil, false)
		start := n.clock.Now()
		a := n.schedule(t, "a", sleep.Kind, models.ConcurrencyAllow, start)
		n.e.testSignals.fired.Init(t)
		n.at(t, start)
		require.Equal(t, firedBatch{jobs: 1}, n.e.testSignals.fired.WaitOrTimeout())
		jobs := jobsOf(t, n.st, a)
		require.Len(t, jobs, 1)
		j := jobs[0]
		require.Equal(t, models.JobPending, j.Status)
		require.Empty(t, j.NodeID)
		require.Zero(t, j.Attempt)
		require.Nil(t, j.StartedAt)
	})
}

// With a backlog, a fire hands off past the free workers too: those jobs
// are written queued on the node and wait there for a worker, then run
// without any claim; before any run has been timed the backlog is no
// larger than the pool, and the rest is written pending and claimed.
func TestHandoffBacklogQueuesPastFreeWorkers(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		n, _, ids, open := fireFiveGated(t, st, func(c *taskengine.Config) { c.Backlog, c.BacklogWait = 10, time.Hour })
		require.Equal(t, firedBatch{jobs: 5, handedOff: 4}, n.e.testSignals.fired.WaitOrTimeout(),
			"two jobs for the free workers, two for the backlog (no larger than the pool yet)")
		var rows []models.Job
		require.NoError(t, n.st.DB().Where("schedule_id IN ?", ids).Find(&rows).Error)
		count := map[models.JobStatus]int{}
		var queued []int64
		for _, r := range rows {
			count[r.Status]++
			if r.Status == models.JobQueued {
				require.Equal(t, n.e.cfg.NodeID, r.NodeID)
				require.Zero(t, r.Attempt)
				require.Nil(t, r.StartedAt)
				queued = append(queued, r.ID)
			}
		}
		require.Equal(t, map[models.JobStatus]int{models.JobRunning: 2, models.JobQueued: 2, models.JobPending: 1}, count)
		open()
		jobs := n.waitJobs(t, models.JobSucceeded, ids...)
		claimed := 0
		for _, j := range jobs {
			if n.claims.wasClaimed(j.ID) {
				claimed++
				continue
			}
			require.Equal(t, 1, j.Attempt)
			require.Equal(t, n.e.cfg.NodeID, j.NodeID)
			require.NotNil(t, j.StartedAt)
		}
		require.Equal(t, 1, claimed, "only the job past the backlog was claimed")
		for _, id := range queued {
			require.False(t, n.claims.wasClaimed(id))
		}
	})
}
