package scheduleengine

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"
)

// alarm is the Cron of the engine's one gocron job: it runs once, at the
// run loop's next wake-up, and the loop replaces the job whenever that
// instant changes. gocron.OneTimeJob cannot serve: a start time that
// passes between NewJob's check and the arming of its timer sends gocron's
// scheduler goroutine into an endless loop (v2.21).
type alarm struct {
	at   time.Time
	last atomic.Int64 // what Next returned last: the instant gocron armed
	// again is set when Next returned at for a t in the same wall-clock
	// second: gocron (v2.21, cronJob.next) takes a next run in the same
	// second as the last for a daylight-saving fall-back and calls Next(at)
	// once more, which must say at again.
	again atomic.Bool
}

func (*alarm) IsValid(string, *time.Location, time.Time) error { return nil }

// Next returns the alarm's instant, or once that has passed a time an hour
// on: never zero nor earlier, so gocron's catch-up loops (call Next until
// the result is not before now) end. The one exception is gocron's second
// call described at again; without it an alarm within the current second
// was never armed, and the run loop spun until the instant passed.
func (a *alarm) Next(t time.Time) time.Time {
	n := a.at
	switch {
	case n.After(t):
		a.again.Store(sameWallSecond(t, n))
	case n.Equal(t) && a.again.CompareAndSwap(true, false):
	default:
		n = t.Add(time.Hour)
	}
	a.last.Store(n.UnixNano())
	return n
}

// sameWallSecond is gocron's test for a fall-back repeat: the same date and
// wall-clock second, each read in its own location.
func sameWallSecond(a, b time.Time) bool {
	ay, am, ad := a.Date()
	by, bm, bd := b.Date()
	ah, amin, as := a.Clock()
	bh, bmin, bs := b.Clock()
	return ay == by && am == bm && ad == bd && ah == bh && amin == bmin && as == bs
}

// setAlarm makes gocron wake the run loop at at. It reports false when
// at passed before gocron armed it: the loop must look again at once.
func (e *Engine) setAlarm(at time.Time) bool {
	if at.Equal(e.alarmAt) {
		return true
	}
	if e.alarm != uuid.Nil {
		if err := e.cron.RemoveJob(e.alarm); err != nil && !errors.Is(err, gocron.ErrJobNotFound) {
			e.log.WithError(err).Warn("could not remove the gocron alarm")
		}
	}
	e.alarm, e.alarmAt = uuid.Nil, time.Time{}
	a := &alarm{at: at}
	j, err := e.cron.NewJob(gocron.CronJob("", false), gocron.NewTask(func() { e.signal(e.wake) }),
		gocron.WithName("scheduleengine-wake"), gocron.WithCronImplementation(a))
	if err != nil {
		e.log.WithError(err).Error("could not arm the gocron alarm")
		return false
	}
	if j == nil { // gocron is shutting down
		return false
	}
	e.alarm = j.ID()
	if a.last.Load() != at.UnixNano() {
		return false
	}
	e.alarmAt = at
	return true
}
