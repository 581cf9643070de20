package trigger

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/models"
)

// An integer column out of its models.Bound makes the row invalid, with
// the column named, instead of a duration that wrapped: 9223372037 seconds
// was a negative interval whose Next went backwards, and the engine's plan
// walk looped and allocated until the node died.
func TestNewRefusesSecondsOutOfBounds(t *testing.T) {
	t.Parallel()
	for _, v := range []int{0, -1, math.MinInt64, math.MaxInt32 + 1, 9223372037, math.MaxInt64} {
		s := models.Schedule{ScheduleType: models.ScheduleInterval, IntervalSeconds: ptr(v), CreatedAt: t0}
		_, err := New(&s, nil)
		require.ErrorContains(t, err, "interval_seconds", "interval_seconds = %d", v)
	}
	for _, v := range []int{-1, math.MinInt64, math.MaxInt32 + 1, 9223372037, math.MaxInt64} {
		s := models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("@hourly"), CatchupWindowSeconds: ptr(v)}
		_, err := New(&s, nil)
		require.ErrorContains(t, err, "catchup_window_seconds", "catchup_window_seconds = %d", v)
	}
	// The largest of each is a schedule like any other.
	s := models.Schedule{ScheduleType: models.ScheduleInterval, IntervalSeconds: ptr(math.MaxInt32), CreatedAt: t0,
		CatchupWindowSeconds: ptr(math.MaxInt32)}
	trig, err := New(&s, nil)
	require.NoError(t, err)
	require.Equal(t, t0.Add(math.MaxInt32*time.Second), trig.Next(t0))
}

// An interval anchored centuries before now (a start_at or created_at an
// admin wrote) still fires on its grid: the distance from the anchor no
// longer overflows time.Duration into a fire before the instant asked.
func TestIntervalFarFromItsAnchor(t *testing.T) {
	t.Parallel()
	for _, anchor := range []time.Time{models.MinTime, time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), t0.AddDate(-300, 0, 0).Add(3 * time.Second)} {
		for _, every := range []int{1, 7, 86400, math.MaxInt32} {
			s := models.Schedule{ScheduleType: models.ScheduleInterval, IntervalSeconds: ptr(every), StartAt: ptr(anchor)}
			trig, err := New(&s, nil)
			require.NoError(t, err)
			n := trig.Next(t0)
			if n.IsZero() {
				// Past MaxTime: no fire.
				require.True(t, t0.Add(time.Duration(every)*time.Second).After(models.MaxTime))
				continue
			}
			require.True(t, n.After(t0), "anchor %v every %ds: next %v not after %v", anchor, every, n, t0)
			require.False(t, n.After(t0.Add(time.Duration(every)*time.Second)), "anchor %v every %ds: next %v skips a fire", anchor, every, n)
			require.Zero(t, (n.Unix()-anchor.Unix())%int64(every), "anchor %v every %ds: next %v off the grid", anchor, every, n)
		}
	}
}

// Times out of years 1 to 9999 make a row invalid; no fire lies past
// models.MaxTime.
func TestTimesOutOfBounds(t *testing.T) {
	t.Parallel()
	early, late := models.MinTime.Add(-time.Second), models.MaxTime.Add(time.Nanosecond)
	for name, s := range map[string]models.Schedule{
		"start_at":   {ScheduleType: models.ScheduleCron, CronExpr: ptr("@hourly"), StartAt: ptr(early)},
		"end_at":     {ScheduleType: models.ScheduleCron, CronExpr: ptr("@hourly"), EndAt: ptr(late)},
		"run_at":     {ScheduleType: models.ScheduleOnce, RunAt: ptr(late)},
		"created_at": {ScheduleType: models.ScheduleInterval, IntervalSeconds: ptr(60), CreatedAt: early},
	} {
		_, err := New(&s, nil)
		require.ErrorContains(t, err, name)
	}
	s := models.Schedule{ScheduleType: models.ScheduleInterval, IntervalSeconds: ptr(math.MaxInt32), StartAt: ptr(time.Date(9990, 1, 1, 0, 0, 0, 0, time.UTC))}
	trig, err := New(&s, nil)
	require.NoError(t, err)
	require.Equal(t, *s.StartAt, trig.Next(t0))
	require.True(t, trig.Next(*s.StartAt).IsZero(), "the next fire would be past year 9999")
}

// The Next memo tells apart instants that UnixNano cannot: two centuries
// 2^64 ns (about 584 years) apart had one key, and the second asked got the
// first's answer, a fire centuries before the instant asked.
func TestCacheNextFarInstants(t *testing.T) {
	t.Parallel()
	c := NewCache()
	trig, err := c.New(cronRow("0 9 * * *", "UTC"), nil)
	require.NoError(t, err)
	a := time.Date(1500, 6, 1, 12, 0, 0, 0, time.UTC)
	b := a.Add(time.Duration(math.MaxInt64)).Add(time.Duration(math.MaxInt64)).Add(2 * time.Nanosecond) // a + 2^64 ns
	require.Equal(t, a.UnixNano(), b.UnixNano(), "the two instants share a UnixNano")
	require.Equal(t, trig.Next(a), c.Next(trig, a))
	require.Equal(t, trig.Next(b), c.Next(trig, b))
	require.True(t, c.Next(trig, b).After(b))
}
