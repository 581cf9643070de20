package trigger

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/models"
)

func utc(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse("2006-01-02 15:04", s)
	require.NoError(t, err)
	return v
}

// fires lists the first n fires of s strictly after from, in UTC.
func fires(t *testing.T, s models.Schedule, cal *models.Calendar, from time.Time, n int) []time.Time {
	t.Helper()
	trig, err := New(&s, cal)
	require.NoError(t, err)
	var out []time.Time
	for next := from; len(out) < n; {
		next = trig.Next(next)
		require.False(t, next.IsZero(), "no fire after %v", out)
		out = append(out, next.UTC())
	}
	return out
}

// firesUntil lists the fires of s in (from, until].
func firesUntil(t *testing.T, s models.Schedule, from, until time.Time) []time.Time {
	t.Helper()
	trig, err := New(&s, nil)
	require.NoError(t, err)
	var out []time.Time
	for next := trig.Next(from); !next.IsZero() && !next.After(until); next = trig.Next(next) {
		out = append(out, next.UTC())
		require.Less(t, len(out), 20_000)
	}
	return out
}

// dstZone is one zone's two changes of 2026, as UTC instants of the fires
// a daily cron at gapWall (inside the skipped hour) and overlapWall (inside
// the repeated hour) should have.
type dstZone struct {
	zone string
	// gapExpr fires daily at a wall time the spring-forward day skips;
	// gapFrom is noon UTC two days before. gapBefore and gapAfter are its
	// fires the days either side, gapShifted the first instant after the gap.
	gapExpr                         string
	gapFrom                         string
	gapBefore, gapShifted, gapAfter string
	// overlapExpr fires daily at a wall time the fall-back day repeats.
	overlapExpr                              string
	overlapFrom                              string
	overlapFirst, overlapSecond, overlapNext string
	// gapDay and overlapDay are local midnights (UTC) of the change days.
	gapDay, gapDayEnd, overlapDay, overlapDayEnd string
}

var dstZones = []dstZone{
	{
		zone:    "Europe/Berlin", // 29 March 02:00 CET → 03:00 CEST; 25 October 03:00 CEST → 02:00 CET
		gapExpr: "30 2 * * *", gapFrom: "2026-03-27 12:00",
		gapBefore: "2026-03-28 01:30", gapShifted: "2026-03-29 01:00", gapAfter: "2026-03-30 00:30",
		overlapExpr: "30 2 * * *", overlapFrom: "2026-10-24 12:00",
		overlapFirst: "2026-10-25 00:30", overlapSecond: "2026-10-25 01:30", overlapNext: "2026-10-26 01:30",
		gapDay: "2026-03-28 23:00", gapDayEnd: "2026-03-29 22:00", overlapDay: "2026-10-24 22:00", overlapDayEnd: "2026-10-25 23:00",
	},
	{
		zone:    "America/New_York", // 8 March 02:00 EST → 03:00 EDT; 1 November 02:00 EDT → 01:00 EST
		gapExpr: "30 2 * * *", gapFrom: "2026-03-06 12:00",
		gapBefore: "2026-03-07 07:30", gapShifted: "2026-03-08 07:00", gapAfter: "2026-03-09 06:30",
		overlapExpr: "30 1 * * *", overlapFrom: "2026-10-31 12:00",
		overlapFirst: "2026-11-01 05:30", overlapSecond: "2026-11-01 06:30", overlapNext: "2026-11-02 06:30",
		gapDay: "2026-03-08 05:00", gapDayEnd: "2026-03-09 04:00", overlapDay: "2026-11-01 04:00", overlapDayEnd: "2026-11-02 05:00",
	},
	{
		zone:    "Australia/Sydney", // 4 October 02:00 AEST → 03:00 AEDT; 5 April 03:00 AEDT → 02:00 AEST
		gapExpr: "30 2 * * *", gapFrom: "2026-10-02 00:00",
		gapBefore: "2026-10-02 16:30", gapShifted: "2026-10-03 16:00", gapAfter: "2026-10-04 15:30",
		overlapExpr: "30 2 * * *", overlapFrom: "2026-04-04 00:00",
		overlapFirst: "2026-04-04 15:30", overlapSecond: "2026-04-04 16:30", overlapNext: "2026-04-05 16:30",
		gapDay: "2026-10-03 14:00", gapDayEnd: "2026-10-04 13:00", overlapDay: "2026-04-04 13:00", overlapDayEnd: "2026-04-05 14:00",
	},
}

// TestDaylightSaving checks, in three zones with changes on different
// dates and hours, each dst_policy of a standard-syntax daily cron, and
// that hourly and finer expressions fire on every real instant whatever
// the policy.
func TestDaylightSaving(t *testing.T) {
	t.Parallel()
	for _, z := range dstZones {
		t.Run(z.zone, func(t *testing.T) {
			t.Parallel()
			cron := func(expr string, p models.DSTPolicy) models.Schedule {
				return models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: &expr, Timezone: z.zone, DSTPolicy: p}
			}
			u := func(s string) time.Time { return utc(t, s) }
			gap := map[models.DSTPolicy][]time.Time{
				"":             {u(z.gapBefore), u(z.gapShifted), u(z.gapAfter)}, // the default is once
				models.DSTOnce: {u(z.gapBefore), u(z.gapShifted), u(z.gapAfter)},
				models.DSTBoth: {u(z.gapBefore), u(z.gapShifted), u(z.gapAfter)},
				models.DSTSkip: {u(z.gapBefore), u(z.gapAfter), u(z.gapAfter).Add(24 * time.Hour)},
				models.DSTWall: {u(z.gapBefore), u(z.gapAfter), u(z.gapAfter).Add(24 * time.Hour)},
			}
			overlap := map[models.DSTPolicy][]time.Time{
				"":             {u(z.overlapFirst), u(z.overlapNext), u(z.overlapNext).Add(24 * time.Hour)},
				models.DSTOnce: {u(z.overlapFirst), u(z.overlapNext), u(z.overlapNext).Add(24 * time.Hour)},
				models.DSTSkip: {u(z.overlapFirst), u(z.overlapNext), u(z.overlapNext).Add(24 * time.Hour)},
				models.DSTBoth: {u(z.overlapFirst), u(z.overlapSecond), u(z.overlapNext)},
				models.DSTWall: {u(z.overlapFirst), u(z.overlapSecond), u(z.overlapNext)},
			}
			for _, p := range []models.DSTPolicy{"", models.DSTOnce, models.DSTSkip, models.DSTBoth, models.DSTWall} {
				t.Run(fmt.Sprintf("policy %q", p), func(t *testing.T) {
					require.Equal(t, gap[p], fires(t, cron(z.gapExpr, p), nil, u(z.gapFrom), 3), "spring forward")
					require.Equal(t, overlap[p], fires(t, cron(z.overlapExpr, p), nil, u(z.overlapFrom), 3), "fall back")
					// Started inside the overlap, between the two occurrences.
					between := u(z.overlapFirst).Add(time.Minute)
					want := u(z.overlapNext)
					if p == models.DSTBoth || p == models.DSTWall {
						want = u(z.overlapSecond)
					}
					require.Equal(t, []time.Time{want}, fires(t, cron(z.overlapExpr, p), nil, between, 1), "from inside the overlap")

					// Hourly and finer: every real instant, one hour (or
					// step) apart, 23 hours on the short day, 25 on the long.
					for _, c := range []struct {
						expr  string
						every time.Duration
					}{{"0 * * * *", time.Hour}, {"*/20 * * * *", 20 * time.Minute}, {"@hourly", time.Hour}, {"0 */15 * * * *", 15 * time.Minute}} {
						for _, day := range [][2]string{{z.gapDay, z.gapDayEnd}, {z.overlapDay, z.overlapDayEnd}} {
							from, until := u(day[0]), u(day[1])
							got := firesUntil(t, cron(c.expr, p), from.Add(-time.Nanosecond), until.Add(-time.Nanosecond))
							require.Len(t, got, int(until.Sub(from)/c.every), "%s from %s", c.expr, day[0])
							for i, f := range got {
								require.Equal(t, from.Add(time.Duration(i)*c.every), f, "%s fire %d", c.expr, i)
							}
						}
					}
				})
			}
		})
	}
}

// TestDaylightSavingFixedHours covers several fixed-hour wall times on
// one change: under once, all those the gap skips fire together at its
// end, and the overlap's hour fires once.
func TestDaylightSavingFixedHours(t *testing.T) {
	t.Parallel()
	s := models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("0,30 1-3 * * *"), Timezone: "Europe/Berlin"}
	require.Equal(t, []time.Time{
		utc(t, "2026-03-29 00:00"), utc(t, "2026-03-29 00:30"), // 01:00, 01:30 CET
		utc(t, "2026-03-29 01:00"), // 02:00 and 02:30 do not exist: at 03:00 CEST, which is also a fire of its own
		utc(t, "2026-03-29 01:30"), // 03:30 CEST
		utc(t, "2026-03-29 23:00"), // 01:00 CEST the next day
	}, fires(t, s, nil, utc(t, "2026-03-28 22:00"), 5))
	require.Equal(t, []time.Time{
		utc(t, "2026-10-24 23:00"), utc(t, "2026-10-24 23:30"), // 01:00, 01:30 CEST
		utc(t, "2026-10-25 00:00"), utc(t, "2026-10-25 00:30"), // 02:00, 02:30 CEST, the first ones
		utc(t, "2026-10-25 02:00"), utc(t, "2026-10-25 02:30"), // 03:00, 03:30 CET
	}, fires(t, s, nil, utc(t, "2026-10-24 22:00"), 6))
	s.DSTPolicy = models.DSTBoth
	require.Equal(t, []time.Time{
		utc(t, "2026-10-25 00:00"), utc(t, "2026-10-25 00:30"), // 02:00, 02:30 CEST
		utc(t, "2026-10-25 01:00"), utc(t, "2026-10-25 01:30"), // 02:00, 02:30 CET
		utc(t, "2026-10-25 02:00"),
	}, fires(t, s, nil, utc(t, "2026-10-24 23:59"), 5))
}

// Intervals and once schedules are instants: no policy touches them.
func TestDaylightSavingInstants(t *testing.T) {
	t.Parallel()
	s := models.Schedule{ScheduleType: models.ScheduleInterval, IntervalSeconds: ptr(3600), Timezone: "Europe/Berlin", StartAt: ptr(utc(t, "2026-10-24 23:00"))}
	require.Equal(t, []time.Time{utc(t, "2026-10-24 23:00"), utc(t, "2026-10-25 00:00"), utc(t, "2026-10-25 01:00"), utc(t, "2026-10-25 02:00")},
		fires(t, s, nil, utc(t, "2026-10-24 22:59"), 4))
	o := models.Schedule{ScheduleType: models.ScheduleOnce, RunAt: ptr(utc(t, "2026-03-29 01:30")), Timezone: "Europe/Berlin"}
	require.Equal(t, []time.Time{utc(t, "2026-03-29 01:30")}, fires(t, o, nil, utc(t, "2026-03-29 00:00"), 1))
}

// TestDaylightSavingYear walks a whole year (both changes) in each zone:
// under the default a daily fixed-hour job fires exactly once on every
// local day, fires always move forward, and hourly fires are an hour apart.
func TestDaylightSavingYear(t *testing.T) {
	t.Parallel()
	for _, zone := range []string{"Europe/Berlin", "America/New_York", "Australia/Sydney"} {
		t.Run(zone, func(t *testing.T) {
			t.Parallel()
			loc, err := time.LoadLocation(zone)
			require.NoError(t, err)
			from := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
			until := from.AddDate(1, 0, 0)
			for _, expr := range []string{"30 2 * * *", "30 1 * * *", "0 3 * * *", "15 0 * * *"} {
				s := models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr(expr), Timezone: zone}
				got := firesUntil(t, s, from, until)
				days := map[string]int{}
				for i, f := range got {
					if i > 0 {
						require.True(t, f.After(got[i-1]))
					}
					days[f.In(loc).Format(time.DateOnly)]++
				}
				require.Len(t, days, 365, expr)
				for d, n := range days {
					require.Equal(t, 1, n, "%s on %s", expr, d)
				}
			}
			got := firesUntil(t, models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("0 * * * *"), Timezone: zone}, from, until)
			for i := 1; i < len(got); i++ {
				require.Equal(t, time.Hour, got[i].Sub(got[i-1]), "hourly at %v", got[i])
			}
		})
	}
}
