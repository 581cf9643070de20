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
)

// syncOverlap re-reads rows updated shortly before the last watermark: a
// transaction that committed late may carry an updated_at older than rows
// already seen.
const syncOverlap = 10 * time.Second

// fireBuffer is how many handed-over fires may wait for the writer before
// gocron's task goroutines block on the hand-over.
const fireBuffer = 4096

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
	fires   chan fireMsg // gocron's timers → the run goroutine
	leader  atomic.Bool

	// Owned by the run goroutine (or by a test driving tick directly).
	cron       gocron.Scheduler // times every schedule; created by Start
	entries    map[int64]*entry
	due        map[int64]*entry // to plan at the next write: handed over by gocron, or found due by sync
	complete   map[int64]bool   // used-up schedules still to mark completed
	invalid    map[int64]string
	missing    map[int64]TriggerRow // triggers to create
	watermark  time.Time
	leaseUntil time.Time
	leaseDue   time.Time
	syncDue    time.Time
	fullDue    time.Time
	fireRetry  time.Time
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
	}
	e.reset()
	return e, nil
}

func (e *Engine) reset() {
	e.entries = map[int64]*entry{}
	e.due = map[int64]*entry{}
	e.complete = map[int64]bool{}
	e.invalid = map[int64]string{}
	e.missing = map[int64]TriggerRow{}
	e.watermark = time.Time{}
	e.leaseUntil, e.leaseDue, e.syncDue, e.fullDue, e.fireRetry = time.Time{}, time.Time{}, time.Time{}, time.Time{}, time.Time{}
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
	defer e.closeCron() // before resign: no fire after the lease is given up
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
		case m := <-e.fires:
			timer.Stop()
			e.enqueue(m)
			e.gather(ctx)
		}
	}
}

// resign gives the lease back on the way out. ctx is already done, so the
// release runs on a short context of its own that keeps ctx's values.
func (e *Engine) resign(ctx context.Context) {
	if !e.leader.Load() {
		return
	}
	e.setLeader(false)
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
	if !now.Before(e.syncDue) {
		full := !now.Before(e.fullDue)
		if err := e.sync(ctx, now, full); err != nil {
			e.log.WithError(err).Warn("schedule sync failed; retrying")
			e.syncDue = now.Add(e.cfg.RetryDelay)
		} else {
			e.syncDue = now.Add(e.cfg.SyncInterval)
			if full {
				e.fullDue = now.Add(e.cfg.FullSyncInterval)
			}
		}
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
	if e.syncDue.Before(at) {
		at = e.syncDue
	}
	if e.leader.Load() && (len(e.due) > 0 || len(e.complete) > 0) && e.fireRetry.Before(at) {
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
	held, err := e.store.AcquireLeaseAt(ctx, e.leaseParams(now))
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
			// The last leader advanced triggers this node has not seen.
			e.fullDue, e.syncDue = time.Time{}, time.Time{}
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
		// whatever is still due.
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

// sync merges schedules changed in the database into the engine: all active
// ones when full, else those updated since the watermark.
func (e *Engine) sync(ctx context.Context, now time.Time, full bool) error {
	p := &LoadSchedulesParams{}
	if !full && !e.watermark.IsZero() {
		since := e.watermark.Add(-syncOverlap)
		p.ChangedSince = &since
	}
	res, err := e.store.LoadSchedules(ctx, p)
	if err != nil {
		return err
	}
	seen := make(map[int64]bool, len(res.Rows))
	for i := range res.Rows {
		r := &res.Rows[i]
		seen[r.Schedule.ID] = true
		if err := e.apply(ctx, r); err != nil {
			return err
		}
	}
	if p.ChangedSince == nil {
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
		return e.writeBookkeeping(ctx, now)
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
	en, err := newEntry(r)
	if err != nil {
		e.remove(id)
		e.invalid[id] = err.Error()
		return nil
	}
	if r.Trigger == nil {
		e.missing[id] = en.triggerRow()
	}
	delete(e.due, id)
	delete(e.complete, id)
	if en.usedUp() {
		e.disarm(old)
		e.entries[id] = en
		e.complete[id] = true
		return nil
	}
	if old != nil && old.timer != nil && old.key == en.key {
		en.timer, old.timer = old.timer, nil
	} else if err := e.arm(ctx, en, old); err != nil {
		e.remove(id)
		return err
	}
	e.entries[id] = en
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

func (e *Engine) remove(id int64) {
	en, ok := e.entries[id]
	if !ok {
		return
	}
	e.disarm(en)
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
	return nil
}
