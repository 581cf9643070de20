package taskengine

import (
	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/metrics"
)

// ReserveHandoff reserves up to n free workers for jobs this node's
// schedule engine is about to write straight as running on this node, in
// its fire's own transaction (chimedb.WriteFiresParams.HandoffSlots), and
// returns how many it reserved and the task types whose jobs may be handed
// off: those whose OnQueue does nothing, as for a claim that starts its
// jobs (see startKinds). The reservation is the poll loop's: it never takes
// more than the free workers, so claims and hand-offs together stay within
// the pool.
//
// A caller that got slots > 0 must call DeliverHandoff exactly once, with
// the jobs written (none when the write failed), so the rest is given back.
// An engine not running (not started, or stopping) reserves nothing, and
// the fire writes its jobs pending as it does without a task engine.
func (e *Engine) ReserveHandoff(n int) (slots int, kinds []string) {
	if n <= 0 {
		return 0, nil
	}
	kinds = e.startKinds()
	if len(kinds) == 0 {
		return 0, nil
	}
	e.handoffMu.Lock()
	defer e.handoffMu.Unlock()
	if !e.handoffOpen {
		return 0, nil
	}
	slots = e.tryReserve(n)
	if slots == 0 {
		return 0, nil
	}
	// Stop waits for the delivery before it waits for the runs.
	e.handoffWG.Add(1)
	metrics.PoolBusy.Set(float64(e.inflight.Load()))
	return slots, kinds
}

// DeliverHandoff hands the jobs a fire wrote as running on this node
// (chimedb.WriteFiresResult.HandedOff) to the pool, by the path of jobs a
// claim started (enqueue, with ClaimedJob.Started), and gives back the
// slots of ReserveHandoff that no job took. From here on they are the
// engine's like claimed jobs: a job that cannot run (Stop has begun, the
// pool refuses it) goes back to pending with its attempt given back.
func (e *Engine) DeliverHandoff(jobs []chimedb.ClaimedJob, slots int) {
	defer e.handoffWG.Done()
	if extra := len(jobs) - slots; extra > 0 {
		// The store hands off at most the slots; should it write more, they
		// are this node's all the same and must run: count their workers.
		e.inflight.Add(int64(extra))
	}
	e.unreserve(slots - len(jobs))
	e.runWG.Add(len(jobs))
	for i := range jobs {
		cj := &jobs[i]
		go e.enqueue(cj, e.newJob(cj))
	}
	metrics.PoolBusy.Set(float64(e.inflight.Load()))
}

// tryReserve reserves up to n free workers and returns how many it did.
// The poll loop and the schedule engine's hand-off both reserve, from
// different goroutines: the compare-and-swap keeps them within the pool.
func (e *Engine) tryReserve(n int) int {
	for {
		cur := e.inflight.Load()
		free := int64(e.PoolSize()) - cur
		if free <= 0 || n <= 0 {
			return 0
		}
		k := min(int64(n), free)
		if e.inflight.CompareAndSwap(cur, cur+k) {
			return int(k)
		}
	}
}

// closeHandoff stops new reservations and waits for the deliveries of
// those made, so that every job handed off has reached enqueue (and
// runWG) before Stop waits for the runs.
func (e *Engine) closeHandoff() {
	e.handoffMu.Lock()
	e.handoffOpen = false
	e.handoffMu.Unlock()
	e.handoffWG.Wait()
}
