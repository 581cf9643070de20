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
	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"
)

// farFuture is what a timer's Next returns once its trigger has no fire
// left. gocron reads a zero time as "no more runs" only in one place; its
// catch-up loops call Next until the result is not before now, and a zero
// time would keep them spinning. The engine removes the gocron job when the
// schedule completes, so a timer never waits this long.
var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// errNotLeader tells gocron's executor to skip a run on a standby.
var errNotLeader = errors.New("scheduleengine: this node does not hold the scheduler lease")

// fireMsg is a gocron timer handing one due schedule to the writer.
type fireMsg struct {
	id int64
	at time.Time // the latest intended time at or before the moment the timer ran
}

// timer is the gocron side of one schedule. It is the job's gocron.Cron, so
// gocron arms its timers at the times the schedule's Trigger yields (cron in
// its time zone, intervals on their anchored grid, once, start_at/end_at),
// and its task, which only hands (schedule_id, intended time) to the
// engine's writer goroutine: no I/O runs on gocron's goroutines.
type timer struct {
	id    int64
	key   string // triggerKey of the row the timer was built from
	trig  Trigger
	clock clockwork.Clock
	out   chan<- fireMsg
	ctx   context.Context // the engine's run context
	wg    *sync.WaitGroup // the engine's, for the lag hand-over goroutine

	job uuid.UUID // set by the engine's goroutine before gocron can run the task

	lagging atomic.Bool
	mu      sync.Mutex
	cursor  time.Time // the latest intended time handed over, or when the timer was armed
}

var _ gocron.Cron = (*timer)(nil)

// IsValid accepts: NewTrigger has already validated the row, and the crontab
// string gocron passes is only the job's label.
func (t *timer) IsValid(string, *time.Location, time.Time) error { return nil }

// Next is the schedule's next intended time after lastRun, which gocron
// passes as the time it last armed (or now, when the job is added).
func (t *timer) Next(lastRun time.Time) time.Time {
	n := t.trig.Next(lastRun)
	if n.IsZero() {
		if lastRun.Before(farFuture) {
			return farFuture
		}
		return lastRun.Add(time.Hour) // strictly later, so gocron's loops end
	}
	if n.Before(t.clock.Now()) && t.lagging.CompareAndSwap(false, true) {
		// gocron re-arms a job only for a future time and silently skips
		// the occurrences it was late for (a busy scheduler goroutine, or a
		// fake clock moved past several). Hand the skipped one over anyway:
		// the writer plans every occurrence since the last fire, so nothing
		// is lost, only written late. Not inline: Next runs on gocron's
		// scheduler goroutine, which must never wait for the writer.
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			t.lagging.Store(false)
			t.fire(t.ctx)
		}()
	}
	return n
}

// fire is the gocron task. ctx is the gocron job's context, cancelled when
// the job is removed or the scheduler shuts down.
func (t *timer) fire(ctx context.Context) {
	now := t.clock.Now()
	t.mu.Lock()
	at := t.trig.Next(t.cursor)
	if at.IsZero() || at.After(now) {
		t.mu.Unlock()
		return // already handed over (a lag hand-over raced the timer)
	}
	for range maxWalk {
		n := t.trig.Next(at)
		if n.IsZero() || n.After(now) {
			break
		}
		at = n
	}
	t.cursor = at
	t.mu.Unlock()
	select {
	case t.out <- fireMsg{id: t.id, at: at}:
	case <-ctx.Done():
	case <-t.ctx.Done():
	}
}

// handedOver records that the engine's sweep has taken the occurrence at,
// so gocron's run for it returns without a hand-over.
func (t *timer) handedOver(at time.Time) {
	t.mu.Lock()
	if at.After(t.cursor) {
		t.cursor = at
	}
	t.mu.Unlock()
}

// triggerKey lists what a Trigger is built from: a row whose key did not
// change keeps its gocron job, so the periodic full sync does not re-arm
// every schedule.
func triggerKey(s *ScheduleRow) string {
	r := &s.Schedule
	return fmt.Sprint(r.ScheduleType, "|", deref(r.CronExpr), "|", deref(r.IntervalSeconds), "|", timeKey(r.RunAt), "|",
		r.Timezone, "|", timeKey(r.StartAt), "|", timeKey(r.EndAt), "|", r.CreatedAt.UTC().UnixNano())
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func timeKey(t *time.Time) int64 {
	if t == nil {
		return 0
	}
	return t.UTC().UnixNano()
}

// newCron builds the gocron scheduler that times every schedule of this
// engine. Its elector is the scheduler lease: gocron runs a job only while
// this node leads, so a standby's timers tick without firing.
func (e *Engine) newCron() (gocron.Scheduler, error) {
	s, err := gocron.NewScheduler(
		gocron.WithClock(e.cfg.Clock),
		gocron.WithLocation(time.UTC),
		gocron.WithLogger(gocronLogger{e.log.WithField("lib", "gocron")}),
		gocron.WithDistributedElector(leaseElector{&e.leader}),
		gocron.WithStopTimeout(5*time.Second),
	)
	if err != nil {
		return nil, fmt.Errorf("create gocron scheduler: %w", err)
	}
	s.Start()
	return s, nil
}

// arm gives en a gocron job: a new one, or old's job updated to en's
// trigger. It runs on the engine's goroutine.
func (e *Engine) arm(ctx context.Context, en *entry, old *entry) error {
	t := &timer{
		id: en.sched.ID, key: en.key, trig: en.trig, clock: e.cfg.Clock, out: e.fires, ctx: ctx, wg: &e.wg,
		cursor: e.cfg.Clock.Now(),
	}
	def := gocron.CronJob(fmt.Sprintf("schedule %d", en.sched.ID), false)
	opts := []gocron.JobOption{gocron.WithName(fmt.Sprintf("schedule-%d", en.sched.ID)), gocron.WithCronImplementation(t)}
	var (
		job gocron.Job
		err error
	)
	if old != nil && old.timer != nil {
		job, err = e.cron.Update(old.timer.job, def, gocron.NewTask(t.fire), opts...)
		old.timer = nil
	} else {
		job, err = e.cron.NewJob(def, gocron.NewTask(t.fire), opts...)
	}
	if err != nil {
		return fmt.Errorf("register schedule %d with gocron: %w", en.sched.ID, err)
	}
	if job == nil {
		return ctx.Err() // gocron was shutting down
	}
	t.job = job.ID()
	en.timer = t
	return nil
}

// disarm removes en's gocron job, if it has one.
func (e *Engine) disarm(en *entry) {
	if en == nil || en.timer == nil {
		return
	}
	if err := e.cron.RemoveJob(en.timer.job); err != nil && !errors.Is(err, gocron.ErrJobNotFound) {
		e.log.WithError(err).WithField("schedule_id", en.sched.ID).Warn("could not remove the schedule's gocron job")
	}
	en.timer = nil
}

// leaseElector is gocron's Elector backed by the scheduler lease, which the
// engine's goroutine renews; gocron asks before every run, so it reads an
// atomic instead of the database.
type leaseElector struct{ leader *atomic.Bool }

func (l leaseElector) IsLeader(context.Context) error {
	if l.leader.Load() {
		return nil
	}
	return errNotLeader
}

// gocronLogger routes gocron's slog-style lines into logrus.
type gocronLogger struct{ log logrus.FieldLogger }

func (l gocronLogger) with(args []any) logrus.FieldLogger {
	if len(args) == 0 {
		return l.log
	}
	f := make(logrus.Fields, len(args)/2+1)
	for i := 0; i < len(args); i += 2 {
		if i+1 == len(args) {
			f["arg"] = args[i]
			break
		}
		f[fmt.Sprint(args[i])] = args[i+1]
	}
	return l.log.WithFields(f)
}

func (l gocronLogger) Debug(msg string, args ...any) { l.with(args).Debug(msg) }
func (l gocronLogger) Info(msg string, args ...any)  { l.with(args).Debug(msg) } // start/stop chatter; the engine logs its own
func (l gocronLogger) Warn(msg string, args ...any)  { l.with(args).Warn(msg) }
func (l gocronLogger) Error(msg string, args ...any) { l.with(args).Error(msg) }
