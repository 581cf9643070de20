package taskengine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/metrics"
	"github.com/chimesched/chime/tasks"
)

// maxClaims bounds the claims in flight at once. A claim is a few round
// trips, and under a backlog workers free up while it runs: a second claim
// for those workers keeps the pool fed instead of leaving them idle until
// the first returns, so claiming overlaps with running (the drain benchmark
// was bound by one serial claimer). Claims stay disjoint: SKIP LOCKED on
// MySQL, the single writer on SQLite. Each claim reserves the workers it
// asks for before it starts, so the claims together never take more jobs
// than there are free workers.
const maxClaims = 2

// claimCooldown bounds how long a backlogged engine with no claim in flight
// waits for more free workers before claiming for the ones it has: claiming
// each worker alone as it frees up would cost a transaction per job.
const claimCooldown = 5 * time.Millisecond

// heldRetry is how soon the engine claims again after a claim left the
// due jobs of forbid schedules whose rows another transaction held
// (chimedb.ClaimResult.Held): another claim or a fire lets go within
// milliseconds, an admin's session left open may take longer and is asked
// again at this pace rather than at the next poll.
const heldRetry = 250 * time.Millisecond

// floorMaxAge bounds how long the poll loop's claim floor stands, by the
// engine's clock from the start of the claim that last scanned from the
// start. Claims under a backlog start after the floor (see
// chimedb.ClaimParams.After), so a row that appears below it (a higher
// priority fired, a job released or recovered, an admin's write) waits for
// the next claim without one: the claim order's bound holds plus at most
// this. Long enough that a drain's claims mostly skip the dead entries
// their predecessors left, short next to the priority step (a minute).
const floorMaxAge = 250 * time.Millisecond

// claimFloor is where the latest full claim's scan ended, for the next
// claim to start after.
type claimFloor struct {
	at    *chimedb.ClaimCursor // nil: the next claim scans from the start
	since time.Time            // start of the claim that last scanned from the start
	epoch uint64               // bumped when the floor is dropped
}

// drop makes the next claim scan from the start, and claims in flight
// before it unable to set a floor.
func (f *claimFloor) drop() {
	f.at = nil
	f.epoch++
}

// claimResult is what a claim goroutine reports back to the poll loop.
type claimResult struct {
	asked, selected int
	blocked         []int64
	held            bool // it left jobs of held forbid schedules
	err             error
	// The floor the claim started after, the loop's epoch then, its start
	// (engine clock) and where its scan ended.
	after *chimedb.ClaimCursor
	epoch uint64
	began time.Time
	last  *chimedb.ClaimCursor
}

// pollLoop claims due jobs: at start, every PollInterval, on Wake (also
// from the watch, see watchLoop), and again at once while claims come back
// full (there is a backlog), as soon as workers are free for it. It
// decides every claim; the claims themselves run on their own goroutines,
// at most maxClaims at once.
func (e *Engine) pollLoop(ctx context.Context) {
	// Stop waits for this loop, so this loop waits for the watch that
	// wakes it.
	defer e.startWatch(ctx)()
	timer := e.cfg.Clock.NewTimer(jitter(e.PollInterval()))
	defer timer.Stop()
	results := make(chan claimResult, maxClaims)
	var claims sync.WaitGroup
	// Claims in flight hand their jobs to the pool; Stop waits for this
	// loop before it waits for the runs, so the loop waits for them.
	defer claims.Wait()
	cooldown := time.NewTimer(claimCooldown)
	cooldown.Stop()
	defer cooldown.Stop()
	retryHeld := e.cfg.Clock.NewTimer(heldRetry)
	retryHeld.Stop()
	defer retryHeld.Stop()
	var (
		gen, seen  uint64 = 1, 0 // looks asked for (start, ticks, wakes) and served
		backlog    bool          // the last claim came back full
		inFlight   int           // claims running
		cooling    bool          // cooldown is armed
		cooledDown bool          // cooldown fired: claim whatever is free
		floor      claimFloor
	)
	for {
		more := seen < gen || backlog
		if more && inFlight < maxClaims {
			size := e.PoolSize()
			free := size - int(e.inflight.Load())
			// Under a backlog wait for half the pool, unless nothing is
			// claiming and the cooldown is over.
			enough := free > 0 && (!backlog || free >= max(size/2, 1) || (inFlight == 0 && cooledDown))
			if enough {
				if cooling {
					cooldown.Stop()
					cooling = false
				}
				cooledDown = false
				// Reserved until the claim returns. The schedule engine's
				// hand-off may have taken workers since free was read.
				if free = e.tryReserve(free); free == 0 {
					continue
				}
				inFlight++
				seen = gen
				if floor.at != nil && e.now().Sub(floor.since) >= floorMaxAge {
					floor.drop()
				}
				claims.Add(1)
				go func(asked int, after *chimedb.ClaimCursor, epoch uint64) {
					defer claims.Done()
					results <- e.claim(ctx, asked, after, epoch)
				}(free, floor.at, floor.epoch)
				continue
			}
			if free > 0 && inFlight == 0 && !cooling && !cooledDown {
				cooldown.Reset(claimCooldown)
				cooling = true
			}
		}
		select {
		case <-ctx.Done():
			return
		case r := <-results:
			inFlight--
			switch {
			case r.err != nil:
				if ctx.Err() != nil {
					return
				}
				e.log.WithError(r.err).Error("claiming jobs failed; retrying at the next poll")
				backlog = false
				floor.drop()
			default:
				// A wake or tick that came while the claim ran has moved
				// gen past seen, so a short claim does not swallow it.
				backlog = r.selected >= r.asked
				floor.note(r, backlog)
				e.noteWaiting(ctx, r.blocked)
				if r.held {
					// Their jobs may lie below where this claim ended.
					floor.drop()
					retryHeld.Reset(heldRetry)
				}
			}
		case <-e.slotFreed:
		case <-cooldown.C:
			cooling, cooledDown = false, true
		case <-retryHeld.Chan():
			gen++
		case <-timer.Chan():
			timer.Reset(jitter(e.PollInterval()))
			gen++
		case <-e.retune:
			timer.Reset(jitter(e.PollInterval()))
		case <-e.wake:
			// A wake says jobs may have appeared, possibly below the floor.
			gen++
			floor.drop()
		}
	}
}

// note moves the floor after claim r came back without an error: a full
// claim of the current epoch leaves its end as the floor, and any other
// drops it (a short claim has seen the due rows run out above the floor).
func (f *claimFloor) note(r claimResult, full bool) {
	switch {
	case !full || r.last == nil:
		f.drop()
	case r.epoch != f.epoch:
		// Dropped while the claim ran: it may have started before the
		// rows the drop was for.
	default:
		if r.after == nil && (f.at == nil || r.began.Before(f.since)) {
			f.since = r.began
		}
		f.at = r.last
	}
}

// claim claims up to asked jobs, starting after the floor after when set,
// for which it has reserved as many workers, hands each to enqueue, on its
// way to the pool, and gives back the workers it found no job for.
// store.ClaimJobs returns an error only when nothing was claimed, so every
// committed row reaches enqueue.
func (e *Engine) claim(ctx context.Context, asked int, after *chimedb.ClaimCursor, epoch uint64) claimResult {
	// Read here, not by the poll loop: started_at of a job the claim
	// starts is this plus the claim's time, and a forbid schedule's next
	// job must not seem to start before its predecessor finished.
	now := e.now()
	began := time.Now()
	defer func() { metrics.PollDuration.Observe(time.Since(began).Seconds()) }()
	res, err := e.st.ClaimJobs(ctx, &chimedb.ClaimParams{NodeID: e.cfg.NodeID, Now: now, Limit: asked, StartKinds: e.startKinds(), After: after})
	metrics.ClaimDuration.Observe(time.Since(began).Seconds())
	if err != nil {
		e.unreserve(asked)
		return claimResult{asked: asked, err: err, after: after, epoch: epoch, began: now}
	}
	e.unreserve(asked - len(res.Jobs))
	e.forgetWaiting(res.Jobs)
	e.runWG.Add(len(res.Jobs))
	for i := range res.Jobs {
		cj := &res.Jobs[i]
		// No "queued" log row: node_id and queued_at on the row say it,
		// and a row less per job is a large part of what a job costs.
		go e.enqueue(cj, e.newJob(cj))
	}
	metrics.PoolBusy.Set(float64(e.inflight.Load()))
	return claimResult{asked: asked, selected: res.Selected, blocked: res.Blocked, held: len(res.Held) > 0,
		after: after, epoch: epoch, began: now, last: res.Last}
}

// startKinds lists the registered task types whose OnQueue does nothing
// (tasks.QueueFree): the claim moves their jobs straight to running. Each
// kind is asked once (a registered kind's factory never changes); kinds
// registered later join at the next claim.
func (e *Engine) startKinds() []string {
	kinds := e.cfg.Registry.Kinds()
	e.kindsMu.Lock()
	defer e.kindsMu.Unlock()
	if len(kinds) == e.kindsSeen {
		return e.freeKinds
	}
	var free []string
	for _, k := range kinds {
		qf, ok := e.queueFree[k]
		if !ok {
			t, err := e.cfg.Registry.New(k)
			qf = err == nil && tasks.IsQueueFree(t)
			e.queueFree[k] = qf
		}
		if qf {
			free = append(free, k)
		}
	}
	e.kindsSeen, e.freeKinds = len(kinds), free
	return free
}

// unreserve gives back n workers reserved for a claim that found no job for them.
func (e *Engine) unreserve(n int) {
	if n <= 0 {
		return
	}
	e.inflight.Add(int64(-n))
	select {
	case e.slotFreed <- struct{}{}:
	default:
	}
}

// noteWaiting writes, once per job, why a due job of a forbid schedule is
// not started. A job stays noted until a claim takes it (forgetWaiting):
// a claim reports busy schedules only when it picked one of their rows,
// so a claim that did not must not make the line be written again.
func (e *Engine) noteWaiting(ctx context.Context, blocked []int64) {
	if len(blocked) == 0 {
		return
	}
	waiting, err := e.st.WaitingJobs(ctx, &chimedb.WaitingJobsParams{ScheduleIDs: blocked, Now: e.now(), Limit: 1000})
	if err != nil {
		e.log.WithError(err).Warn("listing jobs held by concurrency = forbid failed")
		return
	}
	e.waitMu.Lock()
	defer e.waitMu.Unlock()
	if len(e.waitLogged) > maxWaitNoted {
		// Canceled jobs are never claimed; bound what they leave behind.
		clear(e.waitLogged)
	}
	for _, w := range waiting {
		if e.waitLogged[w.ID] {
			continue
		}
		e.waitLogged[w.ID] = true
		e.jobLog.WithFields(logrus.Fields{fieldJobID: w.ID, fieldScheduleID: w.ScheduleID, fieldNodeID: e.cfg.NodeID}).
			Info(fmt.Sprintf("waiting: schedule %d has concurrency = forbid and an earlier job of it is still queued, running or paused", w.ScheduleID))
	}
}

// maxWaitNoted bounds the jobs noteWaiting remembers.
const maxWaitNoted = 10000

// forgetWaiting drops claimed jobs from the noted ones.
func (e *Engine) forgetWaiting(jobs []chimedb.ClaimedJob) {
	e.waitMu.Lock()
	defer e.waitMu.Unlock()
	if len(e.waitLogged) == 0 {
		return
	}
	for i := range jobs {
		delete(e.waitLogged, jobs[i].ID)
	}
}

// runDone ends a claimed job's time on this node: its worker is free and
// Stop no longer waits for it.
func (e *Engine) runDone() {
	e.freeSlot()
	e.runWG.Done()
}

// freeSlot gives back the worker a claim reserved for a job.
func (e *Engine) freeSlot() {
	metrics.PoolBusy.Set(float64(e.inflight.Add(-1)))
	select {
	case e.slotFreed <- struct{}{}:
	default:
	}
}
