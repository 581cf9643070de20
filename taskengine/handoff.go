package taskengine

import (
	"context"
	"sync"

	"github.com/chimesched/chime/chimedb"
)

// ReserveHandoff reserves up to n free workers for jobs this node's
// schedule engine is about to write straight as running on this node, in
// its fire's own transaction (chimedb.WriteFiresParams.HandoffSlots), and
// returns how many it reserved and the task types whose jobs may be handed
// off: those whose OnQueue does nothing, as for a claim that starts its
// jobs (see kindCache). The reservation is the producer's: it never takes
// more than the free workers, so claims and hand-offs together stay within
// the pool.
//
// A caller that got slots > 0 must call DeliverHandoff exactly once, with
// the jobs written (none when the write failed), so the rest is given back.
// An engine not running (not started, or stopping) reserves nothing, and
// the fire writes its jobs pending as it does without a task engine.
func (e *Engine) ReserveHandoff(n int) (slots int, kinds []string) {
	slots, _, kinds = e.reserveHandoff(n, false)
	return slots, kinds
}

// reserveHandoff is ReserveHandoff, and with backlog also up to n − slots
// places of the backlog (Config.Backlog) for jobs the fire writes queued
// here (chimedb.WriteFiresParams.HandoffQueued); DeliverHandoff takes
// slots + queued.
func (e *Engine) reserveHandoff(n int, backlog bool) (slots, queued int, kinds []string) {
	if n <= 0 || e.producer.draining.Load() {
		return 0, 0, nil
	}
	kinds = e.kinds.startKinds()
	if len(kinds) == 0 {
		return 0, 0, nil
	}
	backlog = backlog && e.workers.backlog.Load() > 0 && !e.producer.dueLeft.Load() && e.exec.backlogOpen()
	if !e.handoff.admit(func() bool {
		slots = e.workers.tryReserve(n)
		if backlog && slots < n {
			queued = e.workers.tryReserveBacklog(n-slots, e.cfg.BacklogWait/backlogTarget)
		}
		return slots+queued > 0
	}) {
		return 0, 0, nil
	}
	e.workers.report()
	return slots, queued, kinds
}

// DeliverHandoff hands the jobs a fire wrote as running (or queued) on
// this node (chimedb.WriteFiresResult.HandedOff) to the executor, by the
// path of jobs a claim started (ClaimedJob.Started) or queued, and gives
// back the slots of ReserveHandoff that no job took. From here on they are the engine's like
// claimed jobs: a job that cannot run (Stop has begun, the pool refuses
// it) goes back to pending with its attempt given back.
func (e *Engine) DeliverHandoff(jobs []chimedb.ClaimedJob, slots int) {
	defer e.handoff.delivered()
	if extra := len(jobs) - slots; extra > 0 {
		// The store hands off at most the slots; should it write more, they
		// are this node's all the same and must run: count their workers.
		e.workers.add(extra)
	}
	e.workers.release(slots - len(jobs))
	if len(jobs) > 0 {
		e.exec.herd.handedOff()
	}
	e.exec.take(jobs)
	e.workers.report()
}

// handoffGate admits the schedule engine's hand-offs while the engine
// runs. The engine stops it after the producer and before the executor:
// Stop refuses new reservations and waits for the deliveries of those it
// admitted, so every job handed off has reached the executor before the
// executor drains.
type handoffGate struct {
	mu      sync.Mutex
	open    bool
	pending sync.WaitGroup // admitted, not delivered yet
}

func (g *handoffGate) Start(context.Context) error {
	g.mu.Lock()
	g.open = true
	g.mu.Unlock()
	return nil
}

func (g *handoffGate) Stop(context.Context) error {
	g.mu.Lock()
	g.open = false
	g.mu.Unlock()
	g.pending.Wait()
	return nil
}

// admit runs reserve while the gate is open; when it reserved something
// the gate waits for its delivery.
func (g *handoffGate) admit(reserve func() bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.open || !reserve() {
		return false
	}
	g.pending.Add(1)
	return true
}

func (g *handoffGate) delivered() { g.pending.Done() }
