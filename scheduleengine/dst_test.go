package scheduleengine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/models"
)

// TestDaylightSavingEuropeBerlin pins down what a schedule does across the
// two DST changes of 2026 in Europe/Berlin (robfig/cron's rules, which gocron
// uses too, documented in README):
//   - spring forward, 29 March 02:00 → 03:00 CET→CEST: a wall time inside
//     the missing hour (02:30) does not exist, so that day has no 02:30 fire;
//     an hourly schedule simply has one fire fewer.
//   - fall back, 25 October 03:00 → 02:00 CEST→CET: 02:30 happens twice, and
//     a daily 02:30 fires at both, an hour apart (robfig/cron matches wall
//     time, and gocron's CronJob behaves the same);
//   - intervals ignore wall time: 1 h apart in real time across both changes.
func TestDaylightSavingEuropeBerlin(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	at := func(s string) time.Time {
		v, err := time.ParseInLocation("2006-01-02 15:04 MST", s, berlin)
		require.NoError(t, err)
		return v
	}
	utc := func(s string) time.Time {
		v, err := time.Parse("2006-01-02 15:04", s)
		require.NoError(t, err)
		return v
	}
	fires := func(s models.Schedule, from time.Time, n int) []time.Time {
		trig, err := NewTrigger(&s)
		require.NoError(t, err)
		var out []time.Time
		for next := from; len(out) < n; {
			next = trig.Next(next)
			require.False(t, next.IsZero())
			out = append(out, next.UTC())
		}
		return out
	}
	cron := func(expr string) models.Schedule {
		return models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr(expr), Timezone: "Europe/Berlin"}
	}

	t.Run("daily 02:30 on spring forward", func(t *testing.T) {
		got := fires(cron("30 2 * * *"), utc("2026-03-27 12:00"), 3)
		require.Equal(t, []time.Time{
			utc("2026-03-28 01:30"), // 02:30 CET
			utc("2026-03-30 00:30"), // 02:30 CEST; 29 March has no 02:30
			utc("2026-03-31 00:30"),
		}, got)
	})
	t.Run("hourly on spring forward", func(t *testing.T) {
		got := fires(cron("0 * * * *"), at("2026-03-29 00:30 CET"), 3)
		require.Equal(t, []time.Time{utc("2026-03-29 00:00"), utc("2026-03-29 01:00"), utc("2026-03-29 02:00")}, got,
			"01:00 CET, then 03:00 CEST (02:00 does not exist), then 04:00 CEST")
	})
	t.Run("daily 02:30 on fall back", func(t *testing.T) {
		got := fires(cron("30 2 * * *"), utc("2026-10-24 12:00"), 3)
		require.Equal(t, []time.Time{
			utc("2026-10-25 00:30"), // the first 02:30, still CEST
			utc("2026-10-25 01:30"), // the second 02:30, CET
			utc("2026-10-26 01:30"),
		}, got)
	})
	t.Run("interval ignores wall time", func(t *testing.T) {
		s := models.Schedule{ScheduleType: models.ScheduleInterval, IntervalSeconds: ptr(3600), Timezone: "Europe/Berlin", StartAt: ptr(utc("2026-10-24 23:00"))}
		got := fires(s, utc("2026-10-24 22:59"), 4)
		require.Equal(t, []time.Time{utc("2026-10-24 23:00"), utc("2026-10-25 00:00"), utc("2026-10-25 01:00"), utc("2026-10-25 02:00")}, got)
	})
	t.Run("once is an instant", func(t *testing.T) {
		s := models.Schedule{ScheduleType: models.ScheduleOnce, RunAt: ptr(utc("2026-03-29 01:30")), Timezone: "Europe/Berlin"}
		require.Equal(t, []time.Time{utc("2026-03-29 01:30")}, fires(s, utc("2026-03-29 00:00"), 1))
	})
}
