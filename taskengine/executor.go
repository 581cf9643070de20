package taskengine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/panjf2000/ants/v2"
	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/metrics"
	"github.com/chimesched/chime/internal/startstop"
	"github.com/chimesched/chime/models"
)

// errShutdown is the cause of the jobs' context once Stop's grace period is over.
var errShutdown = errors.New("taskengine: node shutting down and the grace period is over")

// executor runs the jobs the producer claimed and the schedule engine
// handed off: each job's OnQueue on a goroutine of its own, then its run
// on a worker of an ants pool (running → Execute → OnComplete → outcome),
// with their starts and outcomes through the starter and the completer.
// It keeps the runs under way for control and for Stop.
//
// It is a graceful service. When its run ends (Stop, or Start's ctx) it
// sends jobs that have not reached a worker back to pending, lets running
// jobs finish for ShutdownGrace, then cancels them, gives them the grace
// once more and kills what is left (Kill), then releases the pool. When
// Stop's ctx ends first it cancels and kills at once and does not wait for
// runs that do not return; it starts again only once they have.
type executor struct {
	startstop.Base
	st        jobStore
	cfg       *Config
	log       logrus.FieldLogger
	jobLog    *logrus.Logger
	workers   *workers
	starter   *starter
	completer *completer
	signals   *testSignals
	// herd tells the completer when a hand-off's jobs are starting.
	herd herdWatch

	mu   sync.Mutex
	runs map[int64]*activeRun // jobs on a worker: control and Kill reach them
	cur  *execRun             // the running one's; nil when stopped
	// lastJobs is closed once the jobs of the last run have all returned.
	lastJobs <-chan struct{}

	jobs sync.WaitGroup // jobs taken and not yet done, of the current run

	qmu sync.Mutex // guards bl
	bl  backlog
	// wake asks the producer to claim (jobs given back from the backlog).
	wake func()
}

// execRun is what one run of the executor hands every job it takes.
type execRun struct {
	pool *ants.Pool
	// queue ends when the run does: a job not yet on a worker then goes
	// back to pending instead.
	queue context.Context
	// work is every job's parent context; it ends with errShutdown once
	// the shutdown grace is over.
	work       context.Context
	cancelWork context.CancelCauseFunc
	// db is for the executor's own writes (a job given back): it ends
	// when Stop's ctx does.
	db context.Context
}

func newExecutor(st jobStore, cfg *Config, log logrus.FieldLogger, jobLog *logrus.Logger, w *workers, signals *testSignals) *executor {
	return &executor{st: st, cfg: cfg, log: log, jobLog: jobLog, workers: w, signals: signals,
		runs: map[int64]*activeRun{}, lastJobs: closedCh, herd: newHerdWatch()}
}

var closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// stoppedRun stands for the run of a stopped executor: every job it is
// handed goes back to pending at once.
var stoppedRun = func() *execRun {
	ended, cancel := context.WithCancelCause(context.Background())
	cancel(errShutdown)
	return &execRun{queue: ended, work: ended, cancelWork: cancel, db: context.Background()}
}()

// idle says why the executor cannot start: jobs of its last run, which
// Stop's ctx cut short, have not returned yet. Another run would recover
// (and run again) jobs still running here.
func (x *executor) idle() error {
	x.mu.Lock()
	last := x.lastJobs
	x.mu.Unlock()
	select {
	case <-last:
		return nil
	default:
		return fmt.Errorf("%d jobs of the last run have not returned yet; start again once they have", x.workers.taken.Load())
	}
}

// Start creates the pool and takes jobs until its run ends.
func (x *executor) Start(ctx context.Context) error {
	runCtx, dbCtx, finished, ok := x.StartInitGraceful(ctx)
	if !ok {
		return nil
	}
	if err := x.idle(); err != nil {
		finished(nil)
		return fmt.Errorf("taskengine: start: %w", err)
	}
	r := &execRun{queue: runCtx, db: dbCtx}
	x.mu.Lock()
	pool, err := ants.NewPool(int(x.workers.size.Load()), ants.WithPanicHandler(func(v any) {
		// run recovers task panics itself; this only catches engine bugs.
		x.log.Errorf("panic in a pool worker: %v", v)
	}))
	if err == nil {
		r.pool = pool
		r.work, r.cancelWork = context.WithCancelCause(context.WithoutCancel(ctx))
		x.cur = r
		metrics.PoolCapacity.Set(float64(pool.Cap()))
	}
	x.mu.Unlock()
	if err != nil {
		finished(nil)
		return fmt.Errorf("taskengine: start: create pool: %w", err)
	}
	// The drain begins when the run ends; nothing waits for that meanwhile.
	// Jobs waiting for a worker have not begun: they go back at once.
	context.AfterFunc(runCtx, func() {
		if n := x.releaseBacklog("released to pending: node shutting down before the job started"); n > 0 {
			x.log.WithField("jobs", n).Info("released the jobs waiting for a worker to pending")
		}
		finished(x.drain(r))
	})
	return nil
}

// tuneLocked resizes the running pool; x.mu is held.
func (x *executor) tuneLocked(n int) {
	if x.cur != nil {
		x.cur.pool.Tune(n)
		metrics.PoolCapacity.Set(float64(n))
		// Workers a larger pool has free take the jobs waiting for one.
		go x.fill()
	}
}

// take runs jobs that are this node's (a claim's, a hand-off's), whose
// workers are reserved.
func (x *executor) take(jobs []chimedb.ClaimedJob) {
	x.mu.Lock()
	r := x.cur
	x.mu.Unlock()
	if r == nil {
		// Not running: a hand-off delivered after Stop began. They go back.
		r = stoppedRun
	}
	x.jobs.Add(len(jobs))
	started := 0
	for i := range jobs {
		if jobs[i].Started {
			started++
		}
	}
	// Counted before any is dispatched: they go to workers before queued
	// jobs (see dispatch).
	x.qmu.Lock()
	x.bl.started += started
	x.qmu.Unlock()
	for i := range jobs {
		cj := &jobs[i]
		if !cj.Started {
			// Its start is on its way: the starter may wait for it.
			x.starter.expect(1)
		}
		go x.enqueue(r, cj, x.newJob(cj))
	}
}

// drain is the end of a run (see executor).
func (x *executor) drain(r *execRun) error {
	runsDone := waitCh(&x.jobs)
	x.mu.Lock()
	x.lastJobs = runsDone
	x.mu.Unlock()
	clock := x.cfg.Clock
	graceTimer := clock.NewTimer(x.cfg.ShutdownGrace)
	defer graceTimer.Stop()
	select {
	case <-runsDone:
	case <-graceTimer.Chan():
		x.log.WithField("running", x.workers.taken.Load()).Warn("shutdown grace period over; stopping running jobs")
		r.cancelWork(errShutdown)
	case <-r.db.Done():
		r.cancelWork(errShutdown)
	}
	// Canceled runs get the shutdown grace once more to end (so a shell
	// job's kill_grace counts for at most that long), then what they left
	// running is killed: no process of a job outlives Stop.
	killTimer := clock.NewTimer(x.cfg.ShutdownGrace)
	defer killTimer.Stop()
	select {
	case <-runsDone:
	case <-killTimer.Chan():
		x.killRuns()
	case <-r.db.Done():
		x.killRuns()
	}
	var err error
	select {
	case <-runsDone:
	default:
		select {
		case <-runsDone:
		case <-r.db.Done():
			err = fmt.Errorf("taskengine: stop: %d jobs did not return: %w", x.workers.taken.Load(), r.db.Err())
		}
	}
	r.cancelWork(context.Canceled)
	x.mu.Lock()
	x.cur = nil
	x.mu.Unlock()
	// ants waits for its workers on real time; they have all returned.
	if perr := r.pool.ReleaseTimeout(5 * time.Second); perr != nil && err == nil {
		err = fmt.Errorf("taskengine: stop: release pool: %w", perr)
	}
	metrics.PoolBusy.Set(0)
	return err
}

// killRuns calls Kill on every running task that has it, all at once,
// and returns when they have (each Kill bounds its own wait).
func (x *executor) killRuns() {
	x.mu.Lock()
	var targets []*activeRun
	for _, ar := range x.runs {
		if _, ok := ar.task.(killer); ok {
			targets = append(targets, ar)
		}
	}
	x.mu.Unlock()
	if len(targets) == 0 {
		return
	}
	x.log.WithField("jobs", len(targets)).Warn("jobs still running after the shutdown grace; killing them")
	var wg sync.WaitGroup
	for _, ar := range targets {
		wg.Go(func() {
			if safeBool(ar.task.(killer).Kill) {
				ar.job.Log().Warn("killed: the job did not end within the shutdown grace after being stopped")
			}
		})
	}
	wg.Wait()
}

func waitCh(wg *sync.WaitGroup) <-chan struct{} {
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	return ch
}

// run returns the job's run registered for control, or nil.
func (x *executor) run(id int64) *activeRun {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.runs[id]
}

// jobDone ends a job's time on this node: its worker is free and Stop no
// longer waits for it.
func (x *executor) jobDone(id int64, status models.JobStatus) {
	x.workers.release(1)
	x.jobLeft(id, status, true)
}

// jobLeft is jobDone for a job whose worker stays taken when freed is
// false (see enqueue).
func (x *executor) jobLeft(id int64, status models.JobStatus, freed bool) {
	x.signals.completed.Signal(completedSignal{id: id, status: status, freed: freed})
	x.jobs.Done()
}
