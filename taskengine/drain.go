package taskengine

import (
	"errors"
	"sync"
	"time"

	"github.com/chimesched/chime/internal/metrics"
)

// errHandedBack is the cause of a run's context when its draining node
// hands it back (see Engine.SetDrain).
var errHandedBack = errors.New("taskengine: handed back: the node is draining and its drain_timeout is over")

// drainState is what the engine knows of its node's nodes.drain.
type drainState struct {
	mu         sync.Mutex
	on         bool
	since      time.Time // engine clock: when it saw the drain begin
	handedBack bool      // the runs of this drain were handed back
}

// SetDrain tells the engine its node's nodes.drain, as the cluster reads
// it every heartbeat. Draining ("draining" or "drained"), the engine
// claims nothing and takes no hand-off; the jobs it runs go on. Once
// DrainTimeout (when set) has passed since it first saw the drain, it
// hands the runs still on its workers back: each is canceled (and its
// task's Stop called, as an admin's stop would) and goes back to pending
// at once with its attempt given back, for another node to claim. ""
// lets it claim again. Any other text (plain SQL may write one) counts
// as draining: the safe reading of a request to drain.
func (e *Engine) SetDrain(drain string) {
	on := drain != ""
	now := e.cfg.Clock.Now()
	d := &e.drain
	d.mu.Lock()
	was := d.on
	d.on = on
	if on && !was {
		d.since, d.handedBack = now, false
	}
	handBack := on && e.cfg.DrainTimeout > 0 && !d.handedBack && now.Sub(d.since) >= e.cfg.DrainTimeout
	if handBack {
		d.handedBack = true
	}
	d.mu.Unlock()
	e.producer.draining.Store(on)
	if on {
		metrics.Draining.Set(1)
	} else {
		metrics.Draining.Set(0)
	}
	switch {
	case on && !was:
		e.log.WithField("running", e.workers.taken.Load()).Info("draining: this node claims no more jobs and finishes those it runs")
	case !on && was:
		e.log.Info("undrained: this node claims jobs again")
		e.producer.Wake()
	}
	if on {
		// Jobs waiting for a worker have not begun: another node may run
		// them. At every call, for a fire's hand-off reserved just before
		// the drain began may deliver after it.
		if n := e.exec.releaseBacklog("released to pending: node " + e.cfg.NodeID + " is draining and the job had not started"); n > 0 {
			e.log.WithField("jobs", n).Info("draining: released the jobs waiting for a worker to pending")
		}
	}
	if handBack {
		if n := e.exec.handBack(); n > 0 {
			e.log.WithField("jobs", n).Warn("drain_timeout over: handing the jobs still running back to pending")
		}
	}
}

// Idle says whether the engine has no job of its own: none claimed,
// handed off, starting or running.
func (e *Engine) Idle() bool { return e.workers.taken.Load() == 0 }

// handBack cancels every run on a worker with errHandedBack and asks its
// task to stop, and returns how many.
func (x *executor) handBack() int {
	x.mu.Lock()
	runs := make([]*activeRun, 0, len(x.runs))
	for _, ar := range x.runs {
		runs = append(runs, ar)
	}
	x.mu.Unlock()
	for _, ar := range runs {
		ar.handBack(errHandedBack)
		_ = safeBool(ar.task.Stop)
		ar.job.Log().Warn("handing back: node " + x.cfg.NodeID + " is draining and its drain_timeout is over")
	}
	return len(runs)
}
