package taskengine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/startstop"
)

// Engine turns due job rows into running tasks. It is a composition of
// services, each on internal/startstop: the log writer, the completer and
// the starter (flushers), the controller, the executor (pool and runs),
// the hand-off gate and the producer (claims). Build it with New, then
// Start and Stop it: Start is idempotent, Stop before Start is harmless,
// and a stopped engine starts again.
type Engine struct {
	startstop.Base
	cfg     Config
	st      jobStore
	log     logrus.FieldLogger
	workers *workers
	kinds   *kindCache
	signals testSignals

	logs      *logWriter
	node      *nodeJobs
	completer *completer
	starter   *starter
	control   *controller
	exec      *executor
	handoff   *handoffGate
	producer  *producer
	drain     drainState
}

// part is one of the engine's parts: started in order, stopped in reverse.
type part interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// parts lists the engine's parts in the order they start: each needs the
// ones before it running (the producer hands jobs to the executor, whose
// runs feed the starter and the completer, which take the log writer's
// lines), and Stop stops them in reverse.
func (e *Engine) parts() []part {
	return []part{e.logs, e.node, e.completer, e.starter, e.control, e.exec, e.handoff, e.producer}
}

// New builds a stopped engine on st. cfg's zero fields take their
// defaults; nil is all defaults.
func New(st chimedb.TaskStore, cfg *Config) (*Engine, error) {
	if st == nil {
		return nil, errors.New("taskengine: nil store")
	}
	if cfg == nil {
		cfg = &Config{}
	}
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	e := &Engine{cfg: c, st: st, workers: newWorkers(c.PoolSize), kinds: &kindCache{reg: c.Registry}}
	e.workers.backlog.Store(int64(c.Backlog))
	cf := &e.cfg
	e.log = c.Logger.WithFields(logrus.Fields{"component": "taskengine", fieldNodeID: c.NodeID})
	e.logs = newLogWriter(st, e.log, c.Clock, &e.signals)
	jobLog := newJobLogger(e.logs, c.Logger)
	e.node = &nodeJobs{st: st, cfg: cf, log: e.log}
	e.exec = newExecutor(st, cf, e.log, jobLog, e.workers, &e.signals)
	// Batches of a pool's worth: every running job can finish in one flush.
	size := max(c.PoolSize, 64)
	e.completer = newCompleter(st, cf, e.log, size, e.logs, &e.signals, &e.exec.herd)
	e.starter = newStarter(st, cf, e.log, size)
	e.exec.starter, e.exec.completer = e.starter, e.completer
	e.control = &controller{st: st, cfg: cf, log: e.log, exec: e.exec, signals: &e.signals}
	e.handoff = &handoffGate{}
	e.producer = &producer{st: st, cfg: cf, log: e.log, workers: e.workers, kinds: e.kinds, exec: e.exec, signals: &e.signals,
		waiting: &waitNotes{st: st, cfg: cf, log: e.log, jobLog: jobLog, logged: map[int64]bool{}},
		wake:    make(chan struct{}, 1), retune: make(chan struct{}, 1)}
	e.producer.pollInterval.Store(int64(c.PollInterval))
	e.exec.wake = e.producer.Wake
	return e, nil
}

// PoolSize returns the most jobs this engine runs at once.
func (e *Engine) PoolSize() int { return int(e.workers.size.Load()) }

// PollInterval returns how often the engine polls when nothing wakes it.
func (e *Engine) PollInterval() time.Duration { return e.producer.interval() }

// SetPoolSize changes how many jobs run at once, on a running engine too:
// growing lets the producer claim for the new workers at once; shrinking
// lets running jobs finish and claims no more until fewer than n run.
func (e *Engine) SetPoolSize(n int) error {
	if n < 1 {
		return fmt.Errorf("taskengine: pool size must be at least 1, got %d", n)
	}
	e.exec.mu.Lock()
	defer e.exec.mu.Unlock()
	e.workers.resize(n)
	e.exec.tuneLocked(n)
	return nil
}

// SetPollInterval changes the poll interval, on a running engine too; the
// next poll comes within the new interval.
func (e *Engine) SetPollInterval(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("taskengine: poll interval must be positive, got %s", d)
	}
	e.producer.setPollInterval(d)
	return nil
}

// Wake asks the engine to look for due jobs now instead of at the next
// poll. It never blocks; calls while a look is pending merge into one. app
// makes it the schedule engine's OnFire, called after a commit of due jobs,
// so a fire on this node starts within milliseconds while the poll remains
// the path for jobs written by other nodes.
func (e *Engine) Wake() { e.producer.Wake() }

// Start recovers the jobs a previous process with this NodeID left behind
// (see store.RecoverNode), then starts the parts. The engine runs until
// Stop or until ctx ends; either way it stops gracefully (see Stop). It
// does not start while jobs of its last run, which a Stop's ctx cut short,
// are still running: it would recover them.
func (e *Engine) Start(ctx context.Context) error {
	runCtx, workCtx, finished, ok := e.StartInitGraceful(ctx)
	if !ok {
		return nil
	}
	if err := e.exec.idle(); err != nil {
		finished(nil)
		return fmt.Errorf("taskengine: start: %w", err)
	}
	if err := e.node.recover(ctx); err != nil {
		finished(nil)
		return err
	}
	// The parts run until the engine stops them, in order.
	partCtx := context.WithoutCancel(ctx)
	parts := e.parts()
	for i, p := range parts {
		if err := p.Start(partCtx); err != nil {
			finished(stopParts(workCtx, parts[:i]))
			return err
		}
	}
	// The graceful stop begins when the run ends, by Stop or by ctx.
	context.AfterFunc(runCtx, func() {
		e.log.Info("task engine stopping: no more claims")
		err := stopParts(workCtx, parts)
		e.log.Info("task engine stopped")
		finished(err)
	})
	e.log.WithFields(logrus.Fields{"pool_size": e.PoolSize(), "poll_interval": e.PollInterval()}).Info("task engine started")
	return nil
}

// Stop shuts the engine down gracefully, as the end of Start's ctx does:
// it stops claiming, puts jobs that were claimed but never started back to
// pending (no attempt used), lets running jobs finish for up to
// ShutdownGrace, then cancels them (a run cut off this way has used its
// attempt and is retried if it has attempts left), and flushes every
// outcome and log line before it returns. When ctx ends first, running
// jobs are canceled and killed at once, writes give up, and Stop returns
// once that is done, without waiting for jobs that do not return.
func (e *Engine) Stop(ctx context.Context) error { return e.Base.Stop(ctx) }

// stopParts stops parts in reverse order; ctx ends when a Stop's does.
func stopParts(ctx context.Context, parts []part) error {
	var errs []error
	for i := len(parts) - 1; i >= 0; i-- {
		errs = append(errs, parts[i].Stop(ctx))
	}
	return errors.Join(errs...)
}

// nodeJobs deals with this node's rows as a whole: before the engine
// starts it recovers what a dead process with this NodeID left behind
// (under Start's ctx); as the part stopped after the completer, which may
// still write a queued job's failure, it gives back jobs still queued here.
type nodeJobs struct {
	st  jobStore
	cfg *Config
	log logrus.FieldLogger
}

func (n *nodeJobs) recover(ctx context.Context) error {
	rec, err := n.st.RecoverNode(ctx, &chimedb.RecoverNodeParams{NodeID: n.cfg.NodeID, Now: chimedb.DBTime(n.cfg.Clock.Now())})
	if err != nil {
		return fmt.Errorf("taskengine: start: %w", err)
	}
	if k := len(rec.Released) + len(rec.Recovered) + len(rec.Retried) + len(rec.Failed) + len(rec.Stopped); k > 0 {
		n.log.WithFields(logrus.Fields{
			"released": len(rec.Released), "recovered": len(rec.Recovered), "retried": len(rec.Retried),
			"failed": len(rec.Failed), "stopped": len(rec.Stopped),
		}).Warn("recovered jobs left by a previous process of this node")
	}
	return nil
}

func (n *nodeJobs) Start(context.Context) error { return nil }

// Stop gives back a claimed job whose start failed and that is still queued.
func (n *nodeJobs) Stop(ctx context.Context) error {
	ids, err := n.st.ReleaseJobs(ctx, &chimedb.ReleaseJobsParams{
		NodeID: n.cfg.NodeID, Now: chimedb.DBTime(n.cfg.Clock.Now()), Reason: "released to pending: node shut down before the job started",
	})
	if err != nil {
		return err
	}
	if len(ids) > 0 {
		n.log.WithField("jobs", len(ids)).Info("released queued jobs to pending")
	}
	return nil
}
