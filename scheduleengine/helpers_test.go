package scheduleengine

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/taskengine"
)

// switchLeadership is the tests' Leadership: a switch flipped by hand, as
// the cluster's elector flips on the database's clock.
type switchLeadership struct {
	leading atomic.Bool
	mu      sync.Mutex
	fns     []func(bool)
}

// leading returns a switch that is on.
func leading() *switchLeadership {
	l := &switchLeadership{}
	l.leading.Store(true)
	return l
}

func (l *switchLeadership) Leading() bool { return l.leading.Load() }

func (l *switchLeadership) OnChange(fn func(bool)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fns = append(l.fns, fn)
}

func (l *switchLeadership) set(v bool) {
	l.leading.Store(v)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, fn := range l.fns {
		fn(v)
	}
}

// settle waits until e has done everything due up to its clock's now.
// The engine runs on goroutines of its own (gocron's alarm among them), so
// this polls the state the run loop publishes, in real time.
func settle(t *testing.T, e *Engine) {
	t.Helper()
	e.signal(e.nudge) // look at the clock now, even if nothing is due
	asked := e.asked.Load()
	require.Eventually(t, func() bool {
		s := e.settled.Load()
		return s != nil && s.asked >= asked && s.until.After(e.cfg.Clock.Now())
	}, 10*time.Second, time.Millisecond, "the engine did not settle at %s", e.cfg.Clock.Now())
}

// waitFired waits until cond holds, looking again after each fire batch
// the engine finishes: what cond reads changes with a fire, not with
// time. The engine's fired signal must have been Init'ed before Start.
func waitFired(t *testing.T, e *Engine, cond func() bool, msg ...any) {
	t.Helper()
	for !cond() {
		e.testSignals.fired.WaitOrTimeout()
		if t.Failed() {
			t.Fatal(msg...)
		}
	}
}

// bundle is one engine on a fresh database with a fake clock.
type bundle struct {
	st      *store.Store
	e       *Engine
	clock   *clockwork.FakeClock
	def     models.JobDefinition
	fired   *atomic.Int64
	started bool
}

func newClock() *clockwork.FakeClock {
	return clockwork.NewFakeClockAt(time.Now().UTC().Truncate(time.Minute).Add(time.Minute))
}

func setup(t *testing.T, st *store.Store, nodeID string) *bundle {
	t.Helper()
	return setupWithClock(t, st, nodeID, newClock())
}

// setupWithClock builds an engine that leads unless opts set another
// Leadership. It starts at the first at.
func setupWithClock(t *testing.T, st Store, nodeID string, clock *clockwork.FakeClock, opts ...func(*Config)) *bundle {
	t.Helper()
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	b := &bundle{clock: clock, fired: &atomic.Int64{}}
	cfg := &Config{NodeID: nodeID, Clock: clock, Logger: log, Leadership: leading(), OnFire: func() { b.fired.Add(1) }}
	for _, o := range opts {
		o(cfg)
	}
	e, err := New(st, cfg)
	require.NoError(t, err)
	b.e = e
	t.Cleanup(func() { b.stop(t) })
	b.st = dbOf(st)
	db := b.st.DB()
	var def models.JobDefinition
	if db.Where("name = ?", "def").First(&def).Error != nil {
		def = models.JobDefinition{Name: "def", TaskType: "sleep", DefaultParams: models.JSON(`{"a":1,"b":2}`), MaxAttempts: 3, NotifyOn: models.NotifyNever}
		require.NoError(t, db.Create(&def).Error)
	}
	b.def = def
	return b
}

func dbOf(st Store) *store.Store {
	if h, ok := st.(*taskengine.HandoffStore); ok {
		return dbOf(h.ScheduleStore)
	}
	if h, ok := st.(*heldStore); ok {
		return h.Store
	}
	if p, ok := st.(*pagedStore); ok {
		return p.Store
	}
	if f, ok := st.(*failFirstWrite); ok {
		return f.Store
	}
	if en, ok := st.(*ensureStore); ok {
		return en.Store
	}
	if a, ok := st.(*aheadStore); ok {
		return a.Store
	}
	return st.(*store.Store)
}

// at moves the fake clock to now (never back), starts the engine the
// first time, and waits until it has done everything due up to now.
func (b *bundle) at(t *testing.T, now time.Time) {
	t.Helper()
	if d := now.Sub(b.clock.Now()); d > 0 {
		b.clock.Advance(d)
	}
	if !b.started {
		require.NoError(t, b.e.Start(context.WithoutCancel(t.Context())))
		b.started = true
	}
	settle(t, b.e)
}

func (b *bundle) stop(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, b.e.Stop(ctx))
}

// schedule inserts an active schedule created at created.
func (b *bundle) schedule(t *testing.T, s models.Schedule, created time.Time) models.Schedule {
	t.Helper()
	s.JobDefinitionID = b.def.ID
	if s.Name == "" {
		s.Name = t.Name()
	}
	if s.Timezone == "" {
		s.Timezone = "UTC"
	}
	if s.MisfirePolicy == "" {
		s.MisfirePolicy = models.MisfireFireOnce
	}
	if s.Concurrency == "" {
		s.Concurrency = models.ConcurrencyAllow
	}
	if s.Status == "" {
		s.Status = models.ScheduleActive
	}
	s.CreatedAt = store.DBTime(created)
	require.NoError(t, b.st.DB().Create(&s).Error)
	return s
}

func jobsOf(t *testing.T, st *store.Store, scheduleID int64) []models.Job {
	t.Helper()
	var jobs []models.Job
	require.NoError(t, st.DB().Where("schedule_id = ?", scheduleID).Order("scheduled_at").Find(&jobs).Error)
	return jobs
}

func triggerOf(t *testing.T, st *store.Store, scheduleID int64) models.TimeTrigger {
	t.Helper()
	var tt models.TimeTrigger
	require.NoError(t, st.DB().Where("schedule_id = ?", scheduleID).First(&tt).Error)
	return tt
}

func reload(t *testing.T, st *store.Store, s models.Schedule) models.Schedule {
	t.Helper()
	require.NoError(t, st.DB().First(&s, s.ID).Error)
	return s
}

func ptr[T any](v T) *T { return &v }

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
