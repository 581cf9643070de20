package scheduleengine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/internal/metrics"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// syncOverlap re-reads rows updated shortly before the last watermark: a
// transaction that committed late may carry an updated_at older than rows
// already seen.
const syncOverlap = 10 * time.Second

// fireBuffer is how many handed-over fires may wait for the writer before
// gocron's task goroutines block on the hand-over.
const fireBuffer = 4096

// writers is how many fire transactions may be in flight at once. Each
// batch holds disjoint schedules (a schedule is in at most one batch in
// flight), so one commit's latency overlaps the next batch's statements and
// the database works on two cores; a schedule's fires stay in order.
const writers = 2

// maxQueued bounds the batches handed to writers and not yet finished: one
// running and one waiting per writer. What is due beyond that stays in
// Engine.due and joins the next batch, so a trickle of fires coalesces
// while the writers are busy instead of queueing as many small batches.
const maxQueued = 2 * writers

// Engine is the schedule engine of one node. One goroutine (run) owns every
// field below mu's block; the others (gocron's timers among them) only
// signal it.
type Engine struct {
	store Store
	cfg   Config
	log   logrus.FieldLogger

	mu      sync.Mutex
	cancel  context.CancelFunc
	stopped chan struct{}
	wg      sync.WaitGroup

	refresh chan struct{}
	// leadNudge: Leadership changed; renew (re-read) at once instead of at
	// the next LeaseTTL/3 tick.
	leadNudge chan struct{}
	fires     chan fireMsg // gocron's timers → the run goroutine
	leader    atomic.Bool

	// The writer goroutines, started by Start. Both are nil when the engine
	// is driven by tests through tick: runOnce then writes inline.
	work   chan *writeReq  // the run goroutine → writers
	done   chan *writeReq  // writers → the run goroutine
	synced chan syncResult // a sync's read → the run goroutine; nil: tick reads inline
	bg     sync.WaitGroup  // writers and sync reads, waited for before the lease is given up

	// Owned by the run goroutine (or by a test driving tick directly).
	cron       gocron.Scheduler // times every schedule; created by Start
	entries    map[int64]*entry
	due        map[int64]*entry // to plan at the next write: handed over by gocron, or found due by sync
	complete   map[int64]bool   // used-up schedules still to mark completed
	heap       dueHeap          // entries by next intended time
	inflight   map[int64]bool   // schedules in a batch a writer has not finished
	queued     int              // batches handed to writers and not finished
	invalid    map[int64]string
	missing    map[int64]TriggerRow  // triggers to create
	respec     map[int64]TriggerSpec // timing changes to record in the trigger rows
	watermark  time.Time
	leaseUntil time.Time
	leaseDue   time.Time
	syncDue    time.Time
	fullDue    time.Time
	fireRetry  time.Time
	syncing    bool // a sync's read is in flight
	leaseGen   int  // counts lease acquisitions
	stale      bool // leader, but no full sync read since the lease was acquired
	// leaderSince is when this engine last started firing. Every occurrence
	// up to it passed while no engine of this node fired, so it is missed
	// whatever the misfire threshold says (the paper's restore rule).
	leaderSince time.Time
}

// syncResult is one LoadSchedules read, made off the run goroutine so a
// large read never holds up the fires.
type syncResult struct {
	gen int // leaseGen when the read started
	p   *LoadSchedulesParams
	res *LoadSchedulesResult
	err error
}

// New returns a stopped engine writing through st.
func New(st Store, cfg *Config) (*Engine, error) {
	if st == nil {
		return nil, errors.New("scheduleengine: nil Store")
	}
	if cfg == nil {
		cfg = &Config{}
	}
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	closed := make(chan struct{})
	close(closed)
	e := &Engine{
		store:   st,
		cfg:     c,
		log:     c.Logger.WithFields(logrus.Fields{"component": "scheduleengine", "node_id": c.NodeID}),
		stopped: closed,
		refresh: make(chan struct{}, 1),
		fires:   make(chan fireMsg, fireBuffer),

		leadNudge: make(chan struct{}, 1),
	}
	if c.Leadership != nil {
		c.Leadership.OnChange(func(bool) {
			select {
			case e.leadNudge <- struct{}{}:
			default:
			}
		})
	}
	e.reset()
	return e, nil
}

func (e *Engine) reset() {
	e.entries = map[int64]*entry{}
	e.due = map[int64]*entry{}
	e.complete = map[int64]bool{}
	e.heap = nil
	e.inflight = map[int64]bool{}
	e.queued = 0
	e.invalid = map[int64]string{}
	e.missing = map[int64]TriggerRow{}
	e.respec = map[int64]TriggerSpec{}
	e.watermark = time.Time{}
	e.leaseUntil, e.leaseDue, e.syncDue, e.fullDue, e.fireRetry = time.Time{}, time.Time{}, time.Time{}, time.Time{}, time.Time{}
	e.syncing, e.stale = false, false
	e.leader.Store(false)
}

// Start runs the engine until Stop or until ctx ends. Calling it on a
// running engine does nothing.
func (e *Engine) Start(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cancel != nil {
		return nil
	}
	e.reset()
	runCtx, cancel := context.WithCancel(ctx)
	if err := e.open(); err != nil {
		cancel()
		return err
	}
	e.cancel = cancel
	e.stopped = make(chan struct{})
	e.work = make(chan *writeReq, maxQueued)
	e.done = make(chan *writeReq, maxQueued)
	e.synced = make(chan syncResult, 1)
	for range writers {
		e.bg.Go(func() { e.writer(runCtx, e.work, e.done) })
	}
	e.wg.Add(1)
	go e.run(runCtx, e.stopped)
	e.log.Info("schedule engine started")
	return nil
}

// Stop ends the loop, waits for it within ctx, and gives up the lease so a
// standby takes over at once. Calling it on a stopped engine does nothing.
func (e *Engine) Stop(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cancel == nil {
		return nil
	}
	e.cancel()
	e.cancel = nil
	done := make(chan struct{})
	go func() { e.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("stop schedule engine: %w", ctx.Err())
	}
	e.log.Info("schedule engine stopped")
	return nil
}

// Stopped is closed when the engine is not running.
func (e *Engine) Stopped() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stopped
}

// IsLeader reports whether this node holds the scheduler lease.
func (e *Engine) IsLeader() bool { return e.leader.Load() }

// Refresh asks the engine to re-read changed schedules now instead of at the
// next sync tick: the API calls it after writing a schedule.
func (e *Engine) Refresh() {
	select {
	case e.refresh <- struct{}{}:
	default:
	}
}

// open creates and starts the gocron scheduler. A scheduler cannot start
// again after Shutdown, so each Start gets a new one.
func (e *Engine) open() error {
	c, err := e.newCron()
	if err != nil {
		return err
	}
	e.cron = c
	return nil
}

// closeCron shuts gocron down: no timer fires after it returns.
func (e *Engine) closeCron() {
	if e.cron == nil {
		return
	}
	if err := e.cron.Shutdown(); err != nil {
		e.log.WithError(err).Warn("gocron did not shut down cleanly")
	}
	e.cron = nil
	for _, en := range e.entries {
		en.timer = nil
	}
}

func (e *Engine) run(ctx context.Context, stopped chan struct{}) {
	defer e.wg.Done()
	defer close(stopped)
	defer e.resign(ctx)
	defer e.bg.Wait() // before resign: no commit after the lease is given up
	defer e.closeCron()
	for {
		now := e.cfg.Clock.Now()
		e.tick(ctx, now)
		wait := e.nextWake(now)
		timer := e.cfg.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.Chan():
		case <-e.refresh:
			timer.Stop()
			e.syncDue = time.Time{}
		case <-e.leadNudge:
			timer.Stop()
			e.leaseDue = time.Time{}
		case m := <-e.fires:
			timer.Stop()
			e.takeFires(ctx, m)
		case r := <-e.done:
			timer.Stop()
			_ = e.finish(r) // logs and schedules the retry itself
		case r := <-e.synced:
			timer.Stop()
			e.afterLoad(ctx, r)
		}
	}
}

// takeFires handles gocron's hand-over of m and whatever else is waiting.
// gocron dispatches each schedule's job on its own goroutine, so when ten
// thousand come due in one instant the last run starts long after the first.
// The first one is enough: the sweep queues every schedule whose next
// intended time has come, straight from the heap, and marks their timers so
// gocron's later runs of the same instant hand nothing over (enqueue would
// drop them anyway). A lone fire (schedules whose instants differ by
// microseconds, as intervals anchored at created_at do) still waits
// BatchWait for company.
func (e *Engine) takeFires(ctx context.Context, m fireMsg) {
	e.enqueue(m)
	handed := 1
	for more := true; more; {
		select {
		case m := <-e.fires:
			e.enqueue(m)
			handed++
		default:
			more = false
		}
	}
	e.sweep(e.cfg.Clock.Now())
	if len(e.due) <= handed {
		e.gather(ctx)
		e.sweep(e.cfg.Clock.Now())
	}
}

// sweep queues every schedule due at now. It also tells each one's timer
// that its instant is taken care of, so gocron's own run of it, still to
// come, hands nothing over. It runs only on a gocron hand-over: gocron
// stays the clock that says when to look.
func (e *Engine) sweep(now time.Time) {
	if !e.leader.Load() {
		return
	}
	e.heap.popDue(now, func(en *entry) {
		e.due[en.sched.ID] = en
		if en.timer != nil {
			en.timer.handedOver(en.next)
		}
	})
}

// resign gives the lease back on the way out. ctx is already done, so the
// release runs on a short context of its own that keeps ctx's values.
func (e *Engine) resign(ctx context.Context) {
	if !e.leader.Load() {
		return
	}
	e.setLeader(false)
	if e.cfg.Leadership != nil {
		return // the lease is the cluster's to give back
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := e.store.ReleaseLeaseAt(rctx, e.leaseParams(e.cfg.Clock.Now())); err != nil {
		e.log.WithError(err).Warn("could not release the scheduler lease; a standby takes over when it expires")
	}
}

// tick does whatever is due at now: renew the lease, sync, fire.
func (e *Engine) tick(ctx context.Context, now time.Time) {
	if !now.Before(e.leaseDue) {
		e.renewLease(ctx, now)
	}
	if !now.Before(e.syncDue) && !e.syncing {
		e.startSync(ctx, now)
	}
	if e.leader.Load() && !now.Before(e.fireRetry) {
		if err := e.runOnce(ctx, now); err != nil {
			if ctx.Err() == nil {
				e.log.WithError(err).Warn("writing fires failed; retrying")
			}
			e.fireRetry = now.Add(e.cfg.RetryDelay)
		}
	}
}

func (e *Engine) nextWake(now time.Time) time.Duration {
	at := e.leaseDue
	if e.syncDue.Before(at) && !e.syncing {
		at = e.syncDue
	}
	if e.leader.Load() && e.writable() && e.fireRetry.Before(at) {
		// The timers for what is due already fired; only a failed write
		// makes it wait.
		at = e.fireRetry
	}
	return max(at.Sub(now), 0)
}

func (e *Engine) leaseParams(now time.Time) *LeaseParams {
	return &LeaseParams{Name: e.cfg.LeaseName, Holder: e.cfg.NodeID, Now: now, TTL: e.cfg.LeaseTTL}
}

func (e *Engine) renewLease(ctx context.Context, now time.Time) {
	var (
		held bool
		err  error
	)
	if e.cfg.Leadership != nil {
		held = e.cfg.Leadership.Leading()
	} else {
		held, err = e.store.AcquireLeaseAt(ctx, e.leaseParams(now))
	}
	switch {
	case err != nil:
		e.leaseDue = now.Add(e.cfg.RetryDelay)
		if e.leader.Load() && !now.Before(e.leaseUntil) {
			e.log.WithError(err).Warn("scheduler lease expired while the database was unreachable; standing by")
			e.setLeader(false)
		} else if ctx.Err() == nil {
			e.log.WithError(err).Warn("could not renew the scheduler lease")
		}
		return
	case held:
		e.leaseUntil = now.Add(e.cfg.LeaseTTL)
		if !e.leader.Load() {
			e.log.Info("acquired the scheduler lease; this node fires schedules")
			// The last leader advanced triggers this node has not seen:
			// write nothing until a full sync started from now has read
			// them (the read runs beside the run goroutine).
			e.fullDue, e.syncDue = time.Time{}, time.Time{}
			e.leaseGen++
			e.stale = true
			e.leaderSince = now
			e.setLeader(true)
		}
	default:
		if e.leader.Load() {
			e.log.Warn("lost the scheduler lease; standing by")
			e.setLeader(false)
		}
	}
	if !e.leader.Load() {
		// The leader writes these; on taking over, the full sync finds
		// whatever is still due, and the sweep what gocron times.
		for id, en := range e.due {
			if e.entries[id] == en {
				e.heap.track(en)
			}
		}
		clear(e.due)
	}
	e.leaseDue = now.Add(e.cfg.LeaseTTL / 3)
}

func (e *Engine) setLeader(v bool) {
	e.leader.Store(v)
	if v {
		metrics.IsLeader.Set(1)
	} else {
		metrics.IsLeader.Set(0)
	}
}

// startSync reads schedules changed in the database: all active ones when
// the full sync is due, else those updated since the watermark. With the
// engine running the read happens on a goroutine of its own and afterLoad
// merges it on the run goroutine; driven by tests, it all happens inline.
// The next sync is set due here, optimistically; a failed one is retried
// after RetryDelay, and Refresh or a new lease, which clear the due times
// meanwhile, get a sync once this one is merged.
func (e *Engine) startSync(ctx context.Context, now time.Time) {
	full := !now.Before(e.fullDue)
	p := &LoadSchedulesParams{}
	if !full && !e.watermark.IsZero() {
		since := e.watermark.Add(-syncOverlap)
		p.ChangedSince = &since
	}
	e.syncDue = now.Add(e.cfg.SyncInterval)
	if full {
		e.fullDue = now.Add(e.cfg.FullSyncInterval)
	}
	gen := e.leaseGen
	e.syncing = true
	if e.synced == nil {
		res, err := e.store.LoadSchedules(ctx, p)
		e.afterLoad(ctx, syncResult{gen: gen, p: p, res: res, err: err})
		return
	}
	e.bg.Go(func() {
		res, err := e.store.LoadSchedules(ctx, p)
		e.synced <- syncResult{gen: gen, p: p, res: res, err: err} // never blocks: one read at a time, cap 1
	})
}

// afterLoad merges one sync's read into the engine.
func (e *Engine) afterLoad(ctx context.Context, r syncResult) {
	e.syncing = false
	if err := e.merge(ctx, r); err != nil {
		if ctx.Err() == nil {
			e.log.WithError(err).Warn("schedule sync failed; retrying")
		}
		e.syncDue = e.cfg.Clock.Now().Add(e.cfg.RetryDelay)
		if r.p.ChangedSince == nil {
			e.fullDue = time.Time{}
		}
		return
	}
	if r.p.ChangedSince == nil && r.gen == e.leaseGen {
		e.stale = false
	}
}

func (e *Engine) merge(ctx context.Context, r syncResult) error {
	if r.err != nil {
		return r.err
	}
	res := r.res
	seen := make(map[int64]bool, len(res.Rows))
	for i := range res.Rows {
		row := &res.Rows[i]
		seen[row.Schedule.ID] = true
		if err := e.apply(ctx, row); err != nil {
			return err
		}
	}
	if r.p.ChangedSince == nil {
		for id := range e.entries {
			if !seen[id] {
				e.remove(id)
			}
		}
	}
	if res.MaxUpdatedAt.After(e.watermark) {
		e.watermark = res.MaxUpdatedAt
	}
	if e.leader.Load() {
		return e.writeBookkeeping(ctx, e.cfg.Clock.Now())
	}
	return nil
}

// apply replaces the engine's view of one schedule with the row's and
// arms, re-arms or removes its gocron job to match. Occurrences already due
// (restore after a restart, catch-up after a pause or a leader change) are
// not gocron's: gocron only arms future times, so apply queues them for the
// next write, where computePlan applies the misfire policy.
func (e *Engine) apply(ctx context.Context, r *ScheduleRow) error {
	id := r.Schedule.ID
	old := e.entries[id]
	if r.Schedule.Status != models.ScheduleActive {
		e.remove(id)
		return nil
	}
	if old != nil && old.timer != nil && old.unchanged(r) {
		// The row as this entry was built from it (a re-read: the delta
		// scan's overlap, the full sync), and no fire newer than the
		// entry's: keep the entry and its gocron job as they are.
		if r.Trigger == nil {
			e.missing[id] = old.triggerRow()
		} else if r.Trigger.SpecHash == old.spec {
			delete(e.respec, id) // recorded
		}
		if !old.next.After(e.cfg.Clock.Now()) {
			e.due[id] = old
		}
		return nil
	}
	en, err := newEntry(r)
	if err != nil {
		e.remove(id)
		e.invalid[id] = err.Error()
		return nil
	}
	if old == nil && r.Trigger != nil {
		// A schedule this engine did not drive but that has fired before:
		// resumed from paused, or revived from invalid. What passed while
		// it was not driven is missed, however recent.
		en.restoreUpTo = e.cfg.Clock.Now()
	}
	if now := store.DBTime(e.cfg.Clock.Now()); en.since != nil && en.since.After(now) {
		// Only the engine writes spec_changed_at, at the moment it saw an
		// edit; one in the future (a hand-edited row) would hold the
		// schedule back until then.
		en.since = &now
		en.next = en.trig.Next(en.after())
	}
	e.respecced(r, en, old)
	if old != nil && old.last != nil {
		// The row may have been read before a fire this engine committed
		// (a writer's transaction was in flight during the read).
		en.catchUpTo(*old.last, old.fired, old.misfired)
	}
	if r.Trigger == nil {
		e.missing[id] = en.triggerRow()
	}
	delete(e.due, id)
	delete(e.complete, id)
	if en.usedUp() {
		e.disarm(old)
		e.setEntry(en)
		e.complete[id] = true
		return nil
	}
	if old != nil && old.timer != nil && old.key == en.key {
		en.timer, old.timer = old.timer, nil
	} else if err := e.arm(ctx, en, old); err != nil {
		e.remove(id)
		return err
	}
	e.setEntry(en)
	// Read the clock after arming: an occurrence between the sync's start
	// and gocron's arming is not armed, so it must be due here.
	if !en.next.After(e.cfg.Clock.Now()) {
		e.due[id] = en
	}
	return nil
}

// enqueue takes a fire handed over by gocron. A fire the engine has already
// written (found due by sync, or handed over twice) or of a schedule it no
// longer runs is dropped.
func (e *Engine) enqueue(m fireMsg) {
	en, ok := e.entries[m.id]
	if !ok || en.next.IsZero() || en.next.After(m.at) {
		return
	}
	e.due[m.id] = en
}

// gather collects more fires for BatchWait, or until BatchSize schedules are
// due, so a herd due in the same instant is written in few transactions.
func (e *Engine) gather(ctx context.Context) {
	if len(e.due) >= e.cfg.BatchSize {
		return
	}
	t := e.cfg.Clock.NewTimer(e.cfg.BatchWait)
	defer t.Stop()
	for len(e.due) < e.cfg.BatchSize {
		select {
		case m := <-e.fires:
			e.enqueue(m)
		case <-t.Chan():
			return
		case <-ctx.Done():
			return
		}
	}
}

// setEntry makes en the entry of its schedule, in the map and the heap.
func (e *Engine) setEntry(en *entry) {
	if old := e.entries[en.sched.ID]; old != nil && old != en {
		e.heap.untrack(old)
	}
	e.entries[en.sched.ID] = en
	e.heap.track(en)
}

// respecced compares the timing of en, built from r, with the fingerprint
// r's trigger row was computed from. A different one is an edit (through
// the API or a plain UPDATE, while running, paused or down): the schedule
// starts afresh from when this engine saw it, and the leader records that
// instant in the row, so a restart or another leader counts from it too.
// An empty fingerprint is a row from before spec_hash existed: adopted as
// it is, without a reset.
func (e *Engine) respecced(r *ScheduleRow, en, old *entry) {
	id := en.sched.ID
	t := r.Trigger
	if t == nil || t.SpecHash == en.spec {
		delete(e.respec, id)
		return
	}
	sp := TriggerSpec{ScheduleID: id, From: t.SpecHash, Hash: en.spec}
	if t.SpecHash != "" {
		at := store.DBTime(e.cfg.Clock.Now())
		if old != nil && old.spec == en.spec && old.since != nil {
			// Seen already (re-read before the record was written, or on a
			// standby, which writes nothing): keep the first instant.
			at = *old.since
		}
		en.since = &at
		en.next = en.trig.Next(en.after())
		sp.ChangedAt = &at
		if !en.next.IsZero() {
			n := en.next
			sp.NextFireAt = &n
		}
		if e.respec[id].ChangedAt == nil || !e.respec[id].ChangedAt.Equal(at) {
			e.log.WithFields(logrus.Fields{"schedule_id": id, "counting_from": at, "next_fire_at": en.next}).
				Info("schedule timing changed; it starts afresh, with no catch-up for the change")
		}
	}
	e.respec[id] = sp
}

func (e *Engine) remove(id int64) {
	en, ok := e.entries[id]
	if !ok {
		return
	}
	delete(e.respec, id)
	e.disarm(en)
	e.heap.untrack(en)
	delete(e.entries, id)
	delete(e.due, id)
	delete(e.complete, id)
}

// writeBookkeeping records what sync found: invalid rows and missing
// triggers. Only the leader writes, so standbys never touch the tables.
func (e *Engine) writeBookkeeping(ctx context.Context, now time.Time) error {
	for id, reason := range e.invalid {
		e.log.WithFields(logrus.Fields{"schedule_id": id, "reason": reason}).Warn("schedule cannot be scheduled; marking it invalid")
		if err := e.store.MarkInvalid(ctx, &MarkInvalidParams{ScheduleID: id, Reason: reason, Now: now}); err != nil {
			return err
		}
		delete(e.invalid, id)
	}
	if len(e.missing) > 0 {
		rows := make([]TriggerRow, 0, len(e.missing))
		for _, r := range e.missing {
			rows = append(rows, r)
		}
		slices.SortFunc(rows, func(a, b TriggerRow) int { return cmp.Compare(a.ScheduleID, b.ScheduleID) })
		if err := e.store.EnsureTriggers(ctx, &EnsureTriggersParams{Triggers: rows, Now: now}); err != nil {
			return err
		}
		clear(e.missing)
	}
	if len(e.respec) > 0 {
		specs := make([]TriggerSpec, 0, len(e.respec))
		for _, sp := range e.respec {
			specs = append(specs, sp)
		}
		if err := e.store.SetTriggerSpecs(ctx, &SetTriggerSpecsParams{Specs: specs, Now: now}); err != nil {
			return err
		}
		clear(e.respec)
	}
	return nil
}
