package taskengine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/metrics"
	"github.com/chimesched/chime/internal/startstop"
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
	seq             uint64
	ids             []int64 // for the claimed test signal only
	asked, selected int
	blocked         []int64
	held            bool // it left jobs of held forbid schedules
	limited         bool // a limit held jobs back (chimedb.ClaimResult.Limited)
	retryIn         time.Duration
	err             error
	// The floor the claim started after, the loop's epoch then, its start
	// (engine clock) and where its scan ended.
	after *chimedb.ClaimCursor
	epoch uint64
	began time.Time
	last  *chimedb.ClaimCursor
}

// producer claims due jobs and hands them to the executor: at start,
// every PollInterval (jittered), on Wake (also from the watch, see
// watchLoop), heldRetry after a claim left jobs of held forbid schedules,
// and again at once while claims come back full (there is a backlog), as
// soon as workers are free for it. Its loop
// decides every claim; the claims run on their own goroutines, at most
// maxClaims at once, each for the workers it reserved.
type producer struct {
	startstop.Base
	st      jobStore
	cfg     *Config
	log     logrus.FieldLogger
	workers *workers
	kinds   *kindCache
	exec    *executor
	waiting *waitNotes
	signals *testSignals

	pollInterval atomic.Int64  // SetPollInterval changes it
	wake         chan struct{} // Wake: size 1, sends never block
	retune       chan struct{} // the poll interval changed: size 1
	launched     atomic.Uint64 // claims begun, numbering them
	draining     atomic.Bool   // the node is draining: no claims (see Engine.SetDrain)
	// dueLeft says the last claim came back full: due jobs are waiting in
	// the database. Fires then take no backlog (see Config.Backlog), which
	// would keep this node's workers from claiming them, older and maybe
	// of a higher priority, for as long as fires keep coming.
	dueLeft atomic.Bool
}

// Wake asks for a look for due jobs now. It never blocks; calls while a
// look is pending merge into one. Every wake-up, from this node's fires or
// from outside, comes through here.
func (p *producer) Wake() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *producer) setPollInterval(d time.Duration) {
	p.pollInterval.Store(int64(d))
	select {
	case p.retune <- struct{}{}:
	default:
	}
}

// Start runs the poll loop until Stop or ctx ends. Stop waits for the
// claims in flight: their jobs have reached the executor when it returns.
func (p *producer) Start(ctx context.Context) error {
	// Graceful only so that Stop always waits for the claims in flight.
	ctx, _, finished, ok := p.StartInitGraceful(ctx)
	if !ok {
		return nil
	}
	// Its timers are made here, not on the goroutine: a test's fake clock
	// sees them once Start has returned.
	s := p.newPollState()
	go func() {
		defer finished(nil)
		p.loop(ctx, s)
	}()
	return nil
}

// pollState is the poll loop's; only its goroutine touches it.
type pollState struct {
	gen, seen  uint64 // looks asked for (start, ticks, wakes) and served
	backlog    bool   // the last claim came back full
	inFlight   int    // claims running
	cooling    bool   // cooldown is armed
	cooledDown bool   // cooldown fired: claim whatever is free
	floor      claimFloor
	results    chan claimResult
	claims     sync.WaitGroup // claims in flight
	poll       clockwork.Timer
	cooldown   clockwork.Timer
	retryHeld  clockwork.Timer
	retryRate  clockwork.Timer // a rate-limited queue's next start is due
	limited    bool            // the last claim left jobs a limit held
}

func (p *producer) newPollState() *pollState {
	clock := p.cfg.Clock
	s := &pollState{gen: 1, results: make(chan claimResult, maxClaims),
		poll: clock.NewTimer(jitter(p.interval())), cooldown: clock.NewTimer(claimCooldown), retryHeld: clock.NewTimer(heldRetry),
		retryRate: clock.NewTimer(heldRetry)}
	s.cooldown.Stop()
	s.retryHeld.Stop()
	s.retryRate.Stop()
	return s
}

func (p *producer) loop(ctx context.Context, s *pollState) {
	// Stop waits for this loop, so this loop waits for the watch that
	// wakes it.
	defer p.startWatch(ctx)()
	defer func() {
		s.poll.Stop()
		s.cooldown.Stop()
		s.retryHeld.Stop()
		s.retryRate.Stop()
		// Claims in flight hand their jobs to the executor: Stop waits for
		// them so that the executor, stopped next, knows every job.
		s.claims.Wait()
	}()
	for {
		p.claimWhatIsDue(ctx, s)
		if !p.await(ctx, s) {
			return
		}
	}
}

func (p *producer) interval() time.Duration { return time.Duration(p.pollInterval.Load()) }

// claimWhatIsDue starts the claims the loop's state calls for.
func (p *producer) claimWhatIsDue(ctx context.Context, s *pollState) {
	for s.inFlight < maxClaims && (s.seen < s.gen || s.backlog) && !p.draining.Load() {
		size := int(p.workers.size.Load())
		free := p.workers.free()
		// Under a backlog wait for half the pool, unless nothing is
		// claiming and the cooldown is over.
		enough := free > 0 && (!s.backlog || free >= max(size/2, 1) || (s.inFlight == 0 && s.cooledDown))
		if !enough {
			if free > 0 && s.inFlight == 0 && !s.cooling && !s.cooledDown {
				s.cooldown.Reset(claimCooldown)
				s.cooling = true
			}
			return
		}
		if s.cooling {
			s.cooldown.Stop()
			s.cooling = false
		}
		s.cooledDown = false
		// Reserved until the claim returns. The schedule engine's
		// hand-off may have taken workers since free was read.
		if free = p.workers.tryReserve(free); free == 0 {
			continue
		}
		s.inFlight++
		s.seen = s.gen
		if s.floor.at != nil && p.now().Sub(s.floor.since) >= floorMaxAge {
			s.floor.drop()
		}
		seq := p.launched.Add(1)
		after, epoch := s.floor.at, s.floor.epoch
		s.claims.Go(func() { s.results <- p.claim(ctx, seq, free, after, epoch) })
	}
}

// await waits for the next thing that may call for a claim; false when
// ctx has ended.
func (p *producer) await(ctx context.Context, s *pollState) bool {
	select {
	case <-ctx.Done():
		return false
	case r := <-s.results:
		s.inFlight--
		return p.claimed(ctx, s, r)
	case <-p.workers.freed:
		if s.limited {
			// A job of this node ended: it may have held a slot of a
			// limit that holds due jobs back.
			s.gen++
		}
	case <-s.cooldown.Chan():
		s.cooling, s.cooledDown = false, true
	case <-s.retryHeld.Chan():
		s.gen++
	case <-s.retryRate.Chan():
		// The held jobs may lie below the floor.
		s.gen++
		s.floor.drop()
	case <-s.poll.Chan():
		s.poll.Reset(jitter(p.interval()))
		s.gen++
	case <-p.retune:
		s.poll.Reset(jitter(p.interval()))
	case <-p.wake:
		// A wake says jobs may have appeared, possibly below the floor.
		s.gen++
		s.floor.drop()
	}
	return true
}

// claimed takes claim r's result in; false when ctx has ended.
func (p *producer) claimed(ctx context.Context, s *pollState, r claimResult) bool {
	defer p.signals.claimed.Signal(claimSignal{seq: r.seq, ids: r.ids, err: r.err})
	if r.err != nil {
		if ctx.Err() != nil {
			return false
		}
		p.log.WithError(r.err).Error("claiming jobs failed; retrying at the next poll")
		s.backlog = false
		s.floor.drop()
		return true
	}
	// A wake or tick that came while the claim ran has moved gen past
	// seen, so a short claim does not swallow it.
	s.backlog = r.selected >= r.asked
	p.dueLeft.Store(s.backlog)
	s.floor.note(r, s.backlog)
	p.waiting.note(ctx, r.blocked)
	s.limited = r.limited
	if r.retryIn > 0 {
		s.retryRate.Reset(min(r.retryIn, p.interval()))
	}
	if r.held {
		// Their jobs may lie below where this claim ended.
		s.floor.drop()
		s.retryHeld.Reset(heldRetry)
	}
	return true
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
// for which it has reserved as many workers, hands them to the executor,
// and gives back the workers it found no job for. store.ClaimJobs returns
// an error only when nothing was claimed, so every committed row reaches
// the executor.
func (p *producer) claim(ctx context.Context, seq uint64, asked int, after *chimedb.ClaimCursor, epoch uint64) claimResult {
	// Read here, not by the poll loop: started_at of a job the claim
	// starts is this plus the claim's time, and a forbid schedule's next
	// job must not seem to start before its predecessor finished.
	now := p.now()
	clock := p.cfg.Clock
	began := clock.Now()
	defer func() { metrics.PollDuration.Observe(clock.Since(began).Seconds()) }()
	res, err := p.st.ClaimJobs(ctx, &chimedb.ClaimParams{NodeID: p.cfg.NodeID, Now: now, Limit: asked, StartKinds: p.kinds.startKinds(), After: after,
		NodeTags: p.cfg.NodeTags})
	metrics.ClaimDuration.Observe(clock.Since(began).Seconds())
	r := claimResult{seq: seq, asked: asked, after: after, epoch: epoch, began: now}
	if err != nil {
		p.workers.release(asked)
		r.err = err
		return r
	}
	p.workers.release(asked - len(res.Jobs))
	p.waiting.forget(res.Jobs)
	p.exec.take(res.Jobs)
	p.workers.report()
	r.selected, r.blocked, r.held, r.last = res.Selected, res.Blocked, len(res.Held) > 0, res.Last
	r.limited, r.retryIn = len(res.Limited) > 0, res.RetryIn
	p.waiting.noteLimited(res.Limited)
	if p.signals.claimed.Enabled() {
		for i := range res.Jobs {
			r.ids = append(r.ids, res.Jobs[i].ID)
		}
	}
	return r
}

// now is the engine's clock in the form the database stores.
func (p *producer) now() time.Time { return chimedb.DBTime(p.cfg.Clock.Now()) }

// waitNotes writes, once per job, why a due job of a forbid schedule is
// not started. A job stays noted until a claim takes it (forget): a claim
// reports busy schedules only when it picked one of their rows, so a
// claim that did not must not make the line be written again.
type waitNotes struct {
	st     jobStore
	cfg    *Config
	log    logrus.FieldLogger
	jobLog *logrus.Logger
	mu     sync.Mutex
	logged map[int64]bool   // forbid-held jobs already logged, until claimed
	limits map[int64]string // limit-held jobs already logged, with the kind, until claimed
}

// noteLimited writes, once per job and kind of limit, why a limit held a
// due job back, and counts the holds.
func (w *waitNotes) noteLimited(held []chimedb.LimitedJob) {
	if len(held) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.limits == nil || len(w.limits) > maxWaitNoted {
		w.limits = map[int64]string{}
	}
	for _, h := range held {
		metrics.JobsHeld.WithLabelValues(h.Kind).Inc()
		if w.limits[h.ID] == h.Kind {
			continue
		}
		w.limits[h.ID] = h.Kind
		w.jobLog.WithFields(logrus.Fields{fieldJobID: h.ID, fieldNodeID: w.cfg.NodeID}).Info(h.Reason)
	}
}

func (w *waitNotes) note(ctx context.Context, blocked []int64) {
	if len(blocked) == 0 {
		return
	}
	waiting, err := w.st.WaitingJobs(ctx, &chimedb.WaitingJobsParams{ScheduleIDs: blocked, Now: chimedb.DBTime(w.cfg.Clock.Now()), Limit: 1000})
	if err != nil {
		w.log.WithError(err).Warn("listing jobs held by concurrency = forbid failed")
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.logged) > maxWaitNoted {
		// Canceled jobs are never claimed; bound what they leave behind.
		clear(w.logged)
	}
	for _, j := range waiting {
		if w.logged[j.ID] {
			continue
		}
		w.logged[j.ID] = true
		w.jobLog.WithFields(logrus.Fields{fieldJobID: j.ID, fieldScheduleID: j.ScheduleID, fieldNodeID: w.cfg.NodeID}).
			Info(fmt.Sprintf("waiting: schedule %d has concurrency = forbid and an earlier job of it is still queued, running or paused", j.ScheduleID))
	}
}

// maxWaitNoted bounds the jobs waitNotes remembers.
const maxWaitNoted = 10000

// forget drops claimed jobs from the noted ones.
func (w *waitNotes) forget(jobs []chimedb.ClaimedJob) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.logged) == 0 {
		return
	}
	for i := range jobs {
		delete(w.logged, jobs[i].ID)
		delete(w.limits, jobs[i].ID)
	}
}
