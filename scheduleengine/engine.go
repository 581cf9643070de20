package scheduleengine

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/internal/metrics"
	"github.com/chimesched/chime/models"
)

// syncOverlap re-reads rows updated shortly before the last watermark: a
// transaction that committed late may carry an updated_at older than rows
// already seen.
const syncOverlap = 10 * time.Second

// Engine is the schedule engine of one node. One goroutine (run) owns every
// field below mu's block; the others only signal it.
type Engine struct {
	store Store
	cfg   Config
	log   logrus.FieldLogger

	mu      sync.Mutex
	cancel  context.CancelFunc
	stopped chan struct{}
	wg      sync.WaitGroup

	refresh chan struct{}
	leader  atomic.Bool

	// Owned by the run goroutine (or by a test driving tick directly).
	entries    map[int64]*entry
	heap       fireHeap
	complete   map[int64]bool // used-up schedules still to mark completed
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
	}
	e.reset()
	return e, nil
}

func (e *Engine) reset() {
	e.entries = map[int64]*entry{}
	e.heap = nil
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

func (e *Engine) run(ctx context.Context, stopped chan struct{}) {
	defer e.wg.Done()
	defer close(stopped)
	defer e.resign(ctx)
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
	if err := e.store.ReleaseLease(rctx, e.leaseParams(e.cfg.Clock.Now())); err != nil {
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
	if e.leader.Load() && len(e.heap) > 0 {
		next := e.heap[0].next
		if next.Before(e.fireRetry) {
			next = e.fireRetry
		}
		if next.Before(at) {
			at = next
		}
	}
	return max(at.Sub(now), 0)
}

func (e *Engine) leaseParams(now time.Time) *LeaseParams {
	return &LeaseParams{Name: e.cfg.LeaseName, Holder: e.cfg.NodeID, Now: now, TTL: e.cfg.LeaseTTL}
}

func (e *Engine) renewLease(ctx context.Context, now time.Time) {
	held, err := e.store.AcquireLease(ctx, e.leaseParams(now))
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
		e.apply(r)
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

// apply replaces the engine's view of one schedule with the row's.
func (e *Engine) apply(r *ScheduleRow) {
	id := r.Schedule.ID
	e.remove(id)
	if r.Schedule.Status != models.ScheduleActive {
		return
	}
	en, err := newEntry(r)
	if err != nil {
		e.invalid[id] = err.Error()
		return
	}
	if r.Trigger == nil {
		e.missing[id] = en.triggerRow()
	}
	e.entries[id] = en
	if en.usedUp() {
		e.complete[id] = true
		return
	}
	heap.Push(&e.heap, en)
}

func (e *Engine) remove(id int64) {
	en, ok := e.entries[id]
	if !ok {
		return
	}
	if en.idx >= 0 {
		heap.Remove(&e.heap, en.idx)
	}
	delete(e.entries, id)
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
