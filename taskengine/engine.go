package taskengine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/ants/v2"
	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/metrics"
	"github.com/chimesched/chime/internal/startstop"
)

// errShutdown is the cause of the work context once Stop's grace period is over.
var errShutdown = errors.New("taskengine: node shutting down and the grace period is over")

// Engine turns due job rows into running tasks. Build it with New, then
// Start and Stop it; both are idempotent, and Stop before Start is harmless.
type Engine struct {
	st     jobStore
	cfg    Config
	log    logrus.FieldLogger
	jobLog *logrus.Logger

	logs      *logWriter
	starter   *batcher[startReq]
	completer *batcher[completion]
	pool      *ants.Pool

	wake      chan struct{} // Wake: size 1, sends never block
	slotFreed chan struct{} // a run ended: size 1
	inflight  atomic.Int64  // claimed jobs not yet finished; never above PoolSize

	// poolSize and pollInterval start as cfg's and change with
	// SetPoolSize and SetPollInterval (a configurations row); retune tells
	// the poll loop to re-arm its timer.
	poolSize, pollInterval atomic.Int64
	retune                 chan struct{}

	startstop.Base
	mu     sync.Mutex
	used   bool                 // started or stopped once: an engine runs one time only
	endRun func()               // the running Start's, called by Stop
	runs   map[int64]*activeRun // running jobs, for control requests

	kindsMu   sync.Mutex
	queueFree map[string]bool // task kind → tasks.IsQueueFree, asked once
	kindsSeen int             // registered kinds when freeKinds was built
	freeKinds []string        // see startKinds

	waitMu     sync.Mutex
	waitLogged map[int64]bool // forbid-held jobs already logged, until claimed

	handoffMu   sync.Mutex
	handoffOpen bool           // running: ReserveHandoff may reserve
	handoffWG   sync.WaitGroup // reservations not delivered yet

	fetchCtx, queueCtx, workCtx, ctlCtx, flushCtx    context.Context
	fetchCancel, queueCancel, ctlCancel, flushCancel context.CancelFunc
	workCancel                                       context.CancelCauseFunc
	pollWG, runWG, ctlWG                             sync.WaitGroup
	starterRun, completerRun, logsRun                *flusher
	stopErr                                          error // Stop's, read once Stopped is closed

	finished atomic.Int64 // outcomes flushed; benchmarks and tests read it
}

// New builds an engine on st. cfg's zero fields take their defaults.
func New(st chimedb.TaskStore, cfg Config) (*Engine, error) {
	if st == nil {
		return nil, errors.New("taskengine: nil store")
	}
	return newEngine(st, cfg)
}

func newEngine(st jobStore, cfg Config) (*Engine, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	e := &Engine{
		st:         st,
		cfg:        cfg,
		log:        cfg.Logger.WithFields(logrus.Fields{"component": "taskengine", fieldNodeID: cfg.NodeID}),
		wake:       make(chan struct{}, 1),
		slotFreed:  make(chan struct{}, 1),
		runs:       map[int64]*activeRun{},
		waitLogged: map[int64]bool{},
		queueFree:  map[string]bool{},
		retune:     make(chan struct{}, 1),
	}
	e.poolSize.Store(int64(cfg.PoolSize))
	e.pollInterval.Store(int64(cfg.PollInterval))
	e.logs = newLogWriter(st, e.log)
	e.jobLog = newJobLogger(e.logs, cfg.Logger)
	// Batches of a pool's worth: every running job can finish in one flush.
	size := max(cfg.PoolSize, 64)
	e.starter = newBatcher(size, e.flushStarts)
	// A claim's jobs leave OnQueue within microseconds of each other, and
	// each waits for its start: flushing the first alone made the rest wait
	// for that flush and then their own (BenchmarkDrain: start wait 1.9 ×
	// the flush, 1.4 × with the linger, and a third fewer start UPDATEs).
	// Real time, not the engine's clock: it is a pause of microseconds
	// between reads of a channel, not a schedule.
	e.starter.linger = starterLinger
	e.completer = newBatcher(size, e.flushCompletions)
	return e, nil
}

// PoolSize returns the most jobs this engine runs at once.
func (e *Engine) PoolSize() int { return int(e.poolSize.Load()) }

// PollInterval returns how often the engine polls when nothing wakes it.
func (e *Engine) PollInterval() time.Duration { return time.Duration(e.pollInterval.Load()) }

// SetPoolSize changes how many jobs run at once, on a running engine too:
// growing lets the poll loop claim for the new workers at once; shrinking
// lets running jobs finish and claims no more until fewer than n run.
func (e *Engine) SetPoolSize(n int) error {
	if n < 1 {
		return fmt.Errorf("taskengine: pool size must be at least 1, got %d", n)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.poolSize.Store(int64(n))
	if e.pool != nil && e.running() {
		e.pool.Tune(n)
		metrics.PoolCapacity.Set(float64(n))
	}
	select {
	case e.slotFreed <- struct{}{}:
	default:
	}
	return nil
}

// SetPollInterval changes the poll interval, on a running engine too; the
// next poll comes within the new interval.
func (e *Engine) SetPollInterval(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("taskengine: poll interval must be positive, got %s", d)
	}
	e.pollInterval.Store(int64(d))
	select {
	case e.retune <- struct{}{}:
	default:
	}
	return nil
}

// Wake asks the engine to look for due jobs now instead of at the next
// poll. It never blocks; calls while a look is pending merge into one. The
// schedule engine calls it after committing due jobs, so a fire on this
// node starts within milliseconds while the poll remains the path for jobs
// written by other nodes.
func (e *Engine) Wake() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Start recovers the jobs a previous process with this NodeID left behind
// (see store.RecoverNode), then starts claiming. The engine keeps running
// after ctx ends (only its values are kept): Stop is how it ends, so that a
// canceled serve context still gets a graceful stop.
func (e *Engine) Start(ctx context.Context) error {
	_, finished, ok := e.StartInit(ctx)
	if !ok {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.used {
		finished()
		return errors.New("taskengine: start: engine was stopped; build a new one")
	}
	e.used = true
	rec, err := e.st.RecoverNode(ctx, &chimedb.RecoverNodeParams{NodeID: e.cfg.NodeID, Now: e.now()})
	if err != nil {
		finished()
		return fmt.Errorf("taskengine: start: %w", err)
	}
	if n := len(rec.Released) + len(rec.Recovered) + len(rec.Retried) + len(rec.Failed) + len(rec.Stopped); n > 0 {
		e.log.WithFields(logrus.Fields{
			"released": len(rec.Released), "recovered": len(rec.Recovered), "retried": len(rec.Retried),
			"failed": len(rec.Failed), "stopped": len(rec.Stopped),
		}).Warn("recovered jobs left by a previous process of this node")
	}
	pool, err := ants.NewPool(e.PoolSize(), ants.WithPanicHandler(func(v any) {
		// run recovers task panics itself; this only catches engine bugs.
		e.log.Errorf("panic in a pool worker: %v", v)
	}))
	if err != nil {
		finished()
		return fmt.Errorf("taskengine: start: create pool: %w", err)
	}
	e.pool = pool
	base := context.WithoutCancel(ctx)
	e.fetchCtx, e.fetchCancel = context.WithCancel(base)
	e.queueCtx, e.queueCancel = context.WithCancel(base)
	e.workCtx, e.workCancel = context.WithCancelCause(base)
	e.ctlCtx, e.ctlCancel = context.WithCancel(base)
	e.flushCtx, e.flushCancel = context.WithCancel(base)

	metrics.PoolCapacity.Set(float64(e.PoolSize()))
	e.logsRun = startFlusher(e.flushCtx, e.logs.run)
	e.completerRun = startFlusher(e.flushCtx, e.completer.run)
	e.starterRun = startFlusher(e.flushCtx, e.starter.run)
	e.ctlWG.Add(1)
	go func() { defer e.ctlWG.Done(); e.controlLoop(e.ctlCtx) }()
	e.pollWG.Add(1)
	go func() { defer e.pollWG.Done(); e.pollLoop(e.fetchCtx) }()
	e.endRun = finished
	e.handoffMu.Lock()
	e.handoffOpen = true
	e.handoffMu.Unlock()
	e.log.WithFields(logrus.Fields{"pool_size": e.PoolSize(), "poll_interval": e.PollInterval()}).Info("task engine started")
	return nil
}

// Stop shuts the engine down gracefully: it stops claiming, puts jobs that
// were claimed but never started back to pending (no attempt used), lets
// running jobs finish for up to ShutdownGrace, then cancels them (a run cut
// off this way has used its attempt and is retried if it has attempts
// left), and flushes every outcome and log line before it returns. When ctx
// ends first, Stop returns ctx's error without waiting further.
func (e *Engine) Stop(ctx context.Context) error {
	e.mu.Lock()
	e.used = true
	e.mu.Unlock()
	stopped, ok := e.StopInit()
	if !ok { // not started, or another Stop is under way
		select {
		case <-stopped:
			return e.stopErr
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	e.mu.Lock()
	endRun := e.endRun
	e.mu.Unlock()
	e.stopErr = e.stop(ctx)
	endRun()
	return e.stopErr
}

func (e *Engine) running() bool {
	select {
	case <-e.Stopped():
		return false
	default:
		return true
	}
}

func (e *Engine) stop(ctx context.Context) error {
	// If ctx ends, the writers give up retrying a dead database.
	stopFlush := context.AfterFunc(ctx, e.flushCancel)
	defer stopFlush()
	e.log.Info("task engine stopping: no more claims")
	e.fetchCancel()
	e.pollWG.Wait()
	e.closeHandoff()
	e.queueCancel()

	runsDone := waitCh(&e.runWG)
	graceTimer := e.cfg.Clock.NewTimer(e.cfg.ShutdownGrace)
	defer graceTimer.Stop()
	select {
	case <-runsDone:
	case <-graceTimer.Chan():
		e.log.WithField("running", e.inflight.Load()).Warn("shutdown grace period over; stopping running jobs")
		e.workCancel(errShutdown)
	case <-ctx.Done():
		e.workCancel(errShutdown)
	}
	// Canceled runs get the shutdown grace once more to end (so a shell
	// job's kill_grace counts for at most that long), then what they left
	// running is killed: no process of a job outlives Stop.
	killTimer := e.cfg.Clock.NewTimer(e.cfg.ShutdownGrace)
	select {
	case <-runsDone:
	case <-killTimer.Chan():
		e.killRuns()
	case <-ctx.Done():
		e.killRuns()
	}
	killTimer.Stop()
	var err error
	select {
	case <-runsDone:
	case <-ctx.Done():
		err = fmt.Errorf("taskengine: stop: %d jobs did not return: %w", e.inflight.Load(), ctx.Err())
	}
	e.workCancel(context.Canceled)
	e.ctlCancel()
	e.ctlWG.Wait()
	// Order matters: runs feed the starter and completer, which feed the logs.
	e.starterRun.end()
	e.completerRun.end()
	// A claimed job whose start failed can still be queued here: give it back.
	if ids, rerr := e.st.ReleaseJobs(e.flushCtx, &chimedb.ReleaseJobsParams{
		NodeID: e.cfg.NodeID, Now: e.now(), Reason: "released to pending: node shut down before the job started",
	}); rerr != nil {
		err = errors.Join(err, rerr)
	} else if len(ids) > 0 {
		e.log.WithField("jobs", len(ids)).Info("released queued jobs to pending")
	}
	e.logsRun.end()
	if perr := e.pool.ReleaseTimeout(5 * time.Second); perr != nil && err == nil {
		err = fmt.Errorf("taskengine: stop: release pool: %w", perr)
	}
	metrics.PoolBusy.Set(0)
	e.log.Info("task engine stopped")
	return err
}

// killRuns calls Kill on every running task that has it, all at once,
// and returns when they have (each Kill bounds its own wait).
func (e *Engine) killRuns() {
	e.mu.Lock()
	var targets []*activeRun
	for _, ar := range e.runs {
		if _, ok := ar.task.(killer); ok {
			targets = append(targets, ar)
		}
	}
	e.mu.Unlock()
	if len(targets) == 0 {
		return
	}
	e.log.WithField("jobs", len(targets)).Warn("jobs still running after the shutdown grace; killing them")
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

// starterLinger is how long the starter waits for the next start of a
// batch; at most four times that in all.
const starterLinger = 200 * time.Microsecond

// flusher runs one batching goroutine until end, which closes its stop
// channel and waits until it has flushed what it holds and returned.
type flusher struct{ stop, done chan struct{} }

func startFlusher(ctx context.Context, run func(context.Context, <-chan struct{})) *flusher {
	f := &flusher{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(f.done)
		run(ctx, f.stop)
	}()
	return f
}

func (f *flusher) end() {
	close(f.stop)
	<-f.done
}

func waitCh(wg *sync.WaitGroup) <-chan struct{} {
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	return ch
}

// now is the engine's clock in the form the database stores.
func (e *Engine) now() time.Time { return chimedb.DBTime(e.cfg.Clock.Now()) }
