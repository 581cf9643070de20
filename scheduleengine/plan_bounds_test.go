package scheduleengine

import (
	"fmt"
	"github.com/chimesched/chime/chimedb"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/trigger"
)

// maxPlanAsks bounds how often one computePlan may ask its trigger: the
// window's walk, the main walk, the jump to the last missed fire and the
// on-time fires of a day's misfire threshold at one per second.
const maxPlanAsks = 5 * maxWalk

// countedTrigger panics when a plan asks it more than maxPlanAsks times:
// a walk that does not end fails the test instead of eating the machine.
type countedTrigger struct {
	trigger.Trigger
	asks *int
}

func (c countedTrigger) Next(t time.Time) time.Time {
	if *c.asks++; *c.asks > maxPlanAsks {
		panic(fmt.Sprintf("plan asked its trigger more than %d times", maxPlanAsks))
	}
	return c.Trigger.Next(t)
}

func counted(t *testing.T, s models.Schedule) (trigger.Trigger, *int) {
	t.Helper()
	trig, err := trigger.New(&s, nil)
	require.NoError(t, err)
	asks := new(int)
	return countedTrigger{Trigger: trig, asks: asks}, asks
}

// A schedule whose last fire (or creation) an admin set centuries back
// is caught up with one catch-up at its latest missed fire, in a bounded
// number of steps. The jump back from now used windows that grew by ×4
// until time.Duration overflowed, then looped for ever.
func TestComputePlanFromCenturiesAgo(t *testing.T) {
	t.Parallel()
	for _, after := range []time.Time{models.MinTime, time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), t0.AddDate(-200, 0, 0)} {
		trig, asks := counted(t, models.Schedule{ScheduleType: models.ScheduleInterval, IntervalSeconds: ptr(60), StartAt: ptr(after)})
		now := t0.Add(90 * time.Second)
		p := computePlan(planInput{trig: trig, after: after, threshold: 5 * time.Second, policy: models.MisfireFireOnce}, now)
		require.Len(t, p.fires, 1, "from %v", after)
		require.True(t, p.fires[0].catchUp)
		require.Equal(t, t0.Add(time.Minute), p.fires[0].at, "from %v: the latest missed fire", after)
		require.Equal(t, t0.Add(2*time.Minute), p.next)
		require.LessOrEqual(t, *asks, maxPlanAsks)
	}
}

// burst fires every second from its first to its last instant, and never
// otherwise.
type burst struct{ first, last time.Time }

func (b burst) Next(t time.Time) time.Time {
	if t.Before(b.first) {
		return b.first
	}
	n := t.Truncate(time.Second).Add(time.Second)
	if n.After(b.last) {
		return time.Time{}
	}
	return n
}

// A burst of fires long past is jumped over in a bounded number of
// steps, whatever lies between it and now: the ×4 windows back from now
// landed in the burst short of its end, and the walk went on one second
// at a time; with centuries between, the windows grew until
// time.Duration overflowed, and the jump never ended.
func TestComputePlanAfterABurst(t *testing.T) {
	t.Parallel()
	for _, b := range []burst{
		{time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2030, 12, 31, 23, 59, 59, 0, time.UTC)},
		{time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1000, 1, 3, 0, 0, 0, 0, time.UTC)},
		{models.MinTime.Add(time.Second), models.MinTime.Add(time.Hour)}, // MinTime itself is the zero time: no fire
	} {
		asks := new(int)
		now := time.Date(2031, 6, 1, 0, 0, 0, 0, time.UTC)
		in := planInput{trig: countedTrigger{Trigger: b, asks: asks}, after: b.first.Add(-time.Nanosecond), threshold: 5 * time.Second,
			policy: models.MisfireFireOnce}
		p := computePlan(in, now)
		require.Len(t, p.fires, 1, "burst %v", b)
		require.Equal(t, b.last, p.fires[0].at, "burst %v: the catch-up is its last fire", b)
		require.True(t, p.next.IsZero())
		require.LessOrEqual(t, *asks, maxPlanAsks)
	}
}

// stepwise fires every second, but answers "none" when asked from further
// ahead than a second past its last answer: a Next that is not monotone,
// which defeats the jump's search.
type stepwise struct{ last *time.Time }

func (s stepwise) Next(t time.Time) time.Time {
	if !s.last.IsZero() && t.After(s.last.Add(time.Second)) {
		return time.Time{}
	}
	n := t.Truncate(time.Second).Add(time.Second)
	if n.After(*s.last) {
		*s.last = n
	}
	return n
}

// Whatever the trigger, one plan's walk is bounded: it stops after
// maxSteps occurrences and leaves the rest, due at once, to the next turn.
func TestComputePlanWalkIsBounded(t *testing.T) {
	t.Parallel()
	asks := new(int)
	now := t0.AddDate(1, 0, 0)
	p := computePlan(planInput{trig: countedTrigger{Trigger: stepwise{last: new(time.Time)}, asks: asks}, after: t0, threshold: 5 * time.Second,
		policy: models.MisfireFireOnce}, now)
	require.LessOrEqual(t, *asks, maxPlanAsks)
	require.Len(t, p.fires, 1)
	require.True(t, p.fires[0].catchUp)
	require.False(t, p.next.IsZero())
	require.False(t, p.next.After(now), "the rest is due: the next turn plans it")
	require.Equal(t, p.last.Add(time.Second), p.next)
}

// A schedule cannot be scheduled when its definition's seconds, or its
// trigger row's times, are out of their bounds: the reason names the
// column, and sync marks the schedule invalid with it.
func TestNewEntryRefusesOutOfBounds(t *testing.T) {
	t.Parallel()
	row := func() chimedb.ScheduleRow {
		return chimedb.ScheduleRow{
			Schedule:   models.Schedule{ID: 1, JobDefinitionID: 7, ScheduleType: models.ScheduleCron, CronExpr: ptr("@hourly"), CreatedAt: t0},
			Definition: &models.JobDefinition{ID: 7},
		}
	}
	r := row()
	r.Definition.TimeoutSeconds = 9223372037
	_, err := newEntry(&r)
	require.ErrorContains(t, err, "job definition 7: job_definitions.timeout_seconds is 9223372037")
	r = row()
	r.Definition.RetryBackoffSeconds = -1
	_, err = newEntry(&r)
	require.ErrorContains(t, err, "job_definitions.retry_backoff_seconds is -1")
	r = row()
	r.Trigger = &models.TimeTrigger{ScheduleID: 1, LastFireAt: ptr(models.MaxTime.Add(time.Second))}
	_, err = newEntry(&r)
	require.ErrorContains(t, err, "time_triggers.last_fire_at")
	r = row()
	r.Schedule.CatchupWindowSeconds = ptr(30)
	en, err := newEntry(&r)
	require.NoError(t, err)
	require.Equal(t, 30*time.Second, *en.window)
}
