package scheduleengine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"
	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/metrics"
	"github.com/chimesched/chime/internal/startstop"
	"github.com/chimesched/chime/internal/testsignal"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/trigger"
)

// Engine is the schedule engine of one node. The run goroutine owns every
// field after the atomics; the others only signal it.
type Engine struct {
	startstop.Base
	store Store
	cfg   Config
	log   logrus.FieldLogger

	refresh, nudge, wake chan struct{} // Refresh, Leadership.OnChange, the alarm: cap 1
	leader               atomic.Bool
	asked                atomic.Int64 // signals sent, so a test can wait until the loop has seen them
	settled              atomic.Pointer[settledState]

	cron     gocron.Scheduler
	alarm    uuid.UUID // the gocron job that wakes run at alarmAt
	alarmAt  time.Time
	work     chan *writeReq  // run → writers
	turns    chan struct{}   // a writer's turn to run statements: cap writers
	done     chan *writeReq  // writers → run
	synced   chan syncResult // a sync's read → run
	bg       sync.WaitGroup  // writers and sync reads
	entries  map[int64]*entry
	heap     dueHeap          // entries by next intended time, until due
	due      map[int64]*entry // to plan at the next write
	complete map[int64]bool   // used-up schedules still to mark completed
	inflight map[int64]bool   // schedules in a batch a writer has not finished
	queued   int              // batches handed to writers and not finished
	invalid  map[int64]string
	missing  map[int64]chimedb.TriggerRow  // triggers to create
	respec   map[int64]chimedb.TriggerSpec // timing changes to record in the trigger rows

	cache      *trigger.Cache                  // parsed expressions, calendars and zones shared by the entries
	specs      map[specKey]string              // specHash by the timing columns: a few distinct among many rows
	defaults   map[*models.JobDefinition]error // default_params checked, by the definition a read returned
	syncCancel context.CancelFunc              // stops the sync read in flight
	sync       syncRun                         // the sync read in flight, while syncing
	epoch      uint32                          // counts full reads: entry.seen holds the last that saw the entry

	watermark, syncDue, fullDue, fireRetry time.Time
	gatherUntil                            time.Time // a small batch waits until then for fires due just after it
	holding, syncing                       bool      // gathering; a sync's read is in flight
	stale                                  bool      // leading, but no full sync read since it started leading
	leadGen                                int       // counts gains of the lead
	leaderSince                            time.Time // every occurrence before it is missed (the restore rule)

	testSignals testSignals
}

// testSignals let a test wait for what the engine did instead of polling
// the database for it. Each is a no-op until a test Inits it; a test Inits
// only those it reads (the engine does not wait for readers).
type testSignals struct {
	fired  testsignal.Signal[firedBatch] // a fire batch finished, written or not
	synced testsignal.Signal[syncedRead] // a sync read finished: its last page merged, or it failed
}

// firedBatch is what one fire batch did.
type firedBatch struct {
	jobs      int   // jobs written, catch-ups included
	handedOff int   // of them, written running on this node
	err       error // the batch was not written
}

// syncedRead is how one sync read ended.
type syncedRead struct {
	full bool
	err  error
}

// settledState is what the run loop last published: the asked count it
// had seen and, while nothing is in flight, its next wake-up.
type settledState struct {
	asked int64
	until time.Time
}

// syncResult is one page of a sync's read: a LoadSchedules call.
type syncResult struct {
	gen   int  // leadGen when the read started
	full  bool // the read is of every active schedule
	final bool // the read's last page, or its error
	res   *chimedb.LoadSchedulesResult
	err   error
}

// syncRun is what the run goroutine keeps of the read in flight.
type syncRun struct {
	started    time.Time // engine clock when the read began
	maxUpdated time.Time // latest MaxUpdatedAt of its pages
	pages      int
}

// New returns a stopped engine writing through st.
func New(st Store, cfg *Config) (*Engine, error) {
	if st == nil {
		return nil, errors.New("scheduleengine: nil Store")
	}
	if cfg == nil {
		cfg = &Config{}
	}
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	e := &Engine{
		store: st, cfg: c,
		log:     c.Logger.WithFields(logrus.Fields{"component": "scheduleengine", "node_id": c.NodeID}),
		refresh: make(chan struct{}, 1), nudge: make(chan struct{}, 1), wake: make(chan struct{}, 1),
	}
	c.Leadership.OnChange(func(bool) { e.signal(e.nudge) })
	return e, nil
}

// Start runs the engine until Stop or ctx ends; a stopped engine starts
// afresh.
func (e *Engine) Start(ctx context.Context) error {
	ctx, finished, ok := e.StartInit(ctx)
	if !ok {
		return nil
	}
	// gocron's own logger stays silent: its one job's errors come back
	// from NewJob, which logs them.
	cron, err := gocron.NewScheduler(gocron.WithClock(e.cfg.Clock), gocron.WithLocation(time.UTC), gocron.WithStopTimeout(5*time.Second))
	if err != nil {
		finished()
		return fmt.Errorf("scheduleengine: create gocron scheduler: %w", err)
	}
	cron.Start()
	e.reset(cron)
	for range maxQueued {
		e.bg.Go(func() { e.writer(ctx) })
	}
	go func() {
		defer finished()
		e.run(ctx)
	}()
	e.log.Info("schedule engine started")
	return nil
}

func (e *Engine) reset(cron gocron.Scheduler) {
	e.cron, e.alarm, e.alarmAt = cron, uuid.Nil, time.Time{}
	e.work, e.done, e.synced = make(chan *writeReq, maxQueued), make(chan *writeReq, maxQueued), make(chan syncResult, 1)
	e.turns = make(chan struct{}, writers)
	e.clearSchedules()
	e.syncCancel = nil
	e.watermark, e.syncDue, e.fullDue, e.fireRetry, e.gatherUntil = time.Time{}, time.Time{}, time.Time{}, time.Time{}, time.Time{}
	e.queued, e.holding, e.syncing, e.stale = 0, false, false, false
	e.setLeader(false)
}

// clearSchedules empties what the engine knows of the schedules: their
// entries and the work pending on them.
func (e *Engine) clearSchedules() {
	e.entries, e.heap, e.due, e.complete, e.inflight = map[int64]*entry{}, nil, map[int64]*entry{}, map[int64]bool{}, map[int64]bool{}
	e.invalid, e.missing, e.respec = map[int64]string{}, map[int64]chimedb.TriggerRow{}, map[int64]chimedb.TriggerSpec{}
	e.cache, e.specs, e.defaults = trigger.NewCache(), map[specKey]string{}, map[*models.JobDefinition]error{}
}

// IsLeader reports whether this engine fires schedules now.
func (e *Engine) IsLeader() bool { return e.leader.Load() }

// Refresh makes the engine re-read changed schedules now: the API calls it
// after writing a schedule.
func (e *Engine) Refresh() { e.signal(e.refresh) }

func (e *Engine) signal(ch chan struct{}) {
	e.asked.Add(1)
	select {
	case ch <- struct{}{}:
	default:
	}
}

var closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (e *Engine) run(ctx context.Context) {
	defer e.shutdown()
	for {
		asked := e.asked.Load() // before the drain: a signal counted here is taken below
		e.drain()
		now := e.cfg.Clock.Now()
		e.tick(ctx, now)
		next := e.nextWake(now)
		wake := closedCh
		if next.After(now) && e.setAlarm(next) {
			wake = e.wake
		}
		e.publish(asked, now, next)
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-e.refresh:
			e.syncDue = time.Time{}
		case <-e.nudge:
		case r := <-e.done:
			e.finish(r)
		case r := <-e.synced:
			e.afterLoad(ctx, r)
		}
	}
}

// drain takes the signals already sent, so the tick after it sees them.
func (e *Engine) drain() {
	select {
	case <-e.refresh:
		e.syncDue = time.Time{}
	default:
	}
	select {
	case <-e.nudge:
	default:
	}
}

func (e *Engine) publish(asked int64, now, next time.Time) {
	s := settledState{asked: asked}
	if e.queued == 0 && !e.syncing && next.After(now) {
		s.until = next
	}
	e.settled.Store(&s)
}

// shutdown runs when the loop ends: no alarm and no commit after it.
func (e *Engine) shutdown() {
	if err := e.cron.Shutdown(); err != nil {
		e.log.WithError(err).Warn("gocron did not shut down cleanly")
	}
	e.bg.Wait()
	e.setLeader(false)
	e.publish(0, time.Time{}, time.Time{})
	e.log.Info("schedule engine stopped")
}

// tick does whatever is due at now: follow the lead, sync, write fires.
func (e *Engine) tick(ctx context.Context, now time.Time) {
	e.follow(now)
	if !now.Before(e.syncDue) && !e.syncing {
		e.startSync(ctx, now)
	}
	if !e.leader.Load() {
		return
	}
	e.heap.popDue(now, func(en *entry) { e.due[en.sched.ID] = en })
	e.holding = e.gathering(now)
	if e.holding || now.Before(e.fireRetry) {
		return
	}
	if err := e.runOnce(ctx, now); err != nil {
		if ctx.Err() == nil {
			e.log.WithError(err).Warn("writing fires failed; retrying")
		}
		e.fireRetry = now.Add(e.cfg.RetryDelay)
	}
}

// gathering holds a small batch back while the next fires are due within
// BatchWait of its first. A herd due in one instant never waits.
func (e *Engine) gathering(now time.Time) bool {
	if len(e.due) == 0 || e.queued > 0 {
		e.gatherUntil = time.Time{}
		return false
	}
	if e.gatherUntil.IsZero() {
		e.gatherUntil = now.Add(e.cfg.BatchWait)
	}
	n := e.heap.peek()
	return len(e.due) < e.cfg.BatchSize && !n.IsZero() && !n.After(e.gatherUntil) && !e.stale
}

// follow takes the Leadership's word. A node that has just started leading
// writes nothing until a full sync started from now has been merged: the
// last leader advanced triggers it has not read.
func (e *Engine) follow(now time.Time) {
	lead := e.cfg.Leadership.Leading()
	if lead == e.leader.Load() {
		return
	}
	if lead && e.syncing && e.syncCancel != nil {
		// A read begun as a standby cannot end the staleness: stop it
		// rather than wait for it, so the full read this node needs
		// starts now, not after a restore's worth of pages.
		e.syncCancel()
	}
	e.setLeader(lead)
	if lead {
		e.log.Info("leading: this node fires schedules")
		e.fullDue, e.syncDue = time.Time{}, time.Time{}
		e.leadGen++
		e.stale = true
		e.leaderSince = now
		return
	}
	e.log.Warn("no longer leading; standing by")
	for id, en := range e.due {
		if e.entries[id] == en {
			e.heap.track(en)
		}
	}
	clear(e.due)
}

// nextWake is the next sync, fire (a leader's) or retry.
func (e *Engine) nextWake(now time.Time) time.Time {
	at := now.Add(e.cfg.FullSyncInterval) // a bound: a sync in flight wakes the loop itself
	if !e.syncing {
		at = earlier(at, e.syncDue)
	}
	if e.leader.Load() && !e.stale {
		if n := e.heap.peek(); !n.IsZero() {
			at = earlier(at, n)
		}
		if !e.holding && e.writable() {
			at = earlier(at, e.fireRetry)
		}
	}
	return at
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func (e *Engine) setLeader(v bool) {
	e.leader.Store(v)
	if v {
		metrics.IsLeader.Set(1)
	} else {
		metrics.IsLeader.Set(0)
	}
}
