package trigger

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/models"
)

func cal(kind models.CalendarKind, def, zone string) *models.Calendar {
	return &models.Calendar{ID: 7, Name: "c", Kind: kind, Definition: models.JSON(def), Timezone: zone}
}

// TestCalendarsExclude checks each kind of calendar on a schedule: the
// fires in excluded times are skipped, the others kept.
func TestCalendarsExclude(t *testing.T) {
	t.Parallel()
	daily9 := models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("0 9 * * *"), Timezone: "Europe/Berlin", CalendarID: ptr(int64(7))}
	hourly := models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("0 * * * *"), Timezone: "UTC", CalendarID: ptr(int64(7))}
	tests := []struct {
		name  string
		sched models.Schedule
		cal   *models.Calendar
		from  string
		want  []string
	}{
		{"holiday", daily9, cal(models.CalendarHoliday, `{"dates": ["2026-12-25", "2026-12-26"]}`, "Europe/Berlin"), "2026-12-24 00:00",
			[]string{"2026-12-24 08:00", "2026-12-27 08:00"}},
		{"annual", daily9, cal(models.CalendarAnnual, `{"days": ["12-25", "01-01"]}`, "Europe/Berlin"), "2027-12-24 00:00",
			[]string{"2027-12-24 08:00", "2027-12-26 08:00", "2027-12-27 08:00"}},
		{"monthly", daily9, cal(models.CalendarMonthly, `{"days": [1, 2, 31]}`, "Europe/Berlin"), "2026-01-30 00:00",
			[]string{"2026-01-30 08:00", "2026-02-03 08:00"}},
		// 2 January 2026 is a Friday.
		{"weekly", daily9, cal(models.CalendarWeekly, `{"days": ["SAT", "sun"]}`, "Europe/Berlin"), "2026-01-02 00:00",
			[]string{"2026-01-02 08:00", "2026-01-05 08:00"}},
		{"daily range", hourly, cal(models.CalendarDaily, `{"from": "09:00", "to": "17:00"}`, "UTC"), "2026-01-01 07:30",
			[]string{"2026-01-01 08:00", "2026-01-01 18:00", "2026-01-01 19:00"}}, // 17:00 is in the range, as in Quartz
		{"daily inverted", hourly, cal(models.CalendarDaily, `{"from": "09:00", "to": "10:59:59", "invert": true}`, "UTC"), "2026-01-01 07:30",
			[]string{"2026-01-01 09:00", "2026-01-01 10:00", "2026-01-02 09:00"}},
		{"daily in its own zone", hourly, cal(models.CalendarDaily, `{"from": "00:00", "to": "22:59:59"}`, "Asia/Tokyo"), "2026-01-01 00:00",
			[]string{"2026-01-01 14:00", "2026-01-02 14:00"}}, // 23:00 Tokyo
		{"cron", hourly, cal(models.CalendarCron, `{"expression": "* * 0-22 ? * *"}`, "UTC"), "2026-01-01 00:00",
			[]string{"2026-01-01 23:00", "2026-01-02 23:00"}},
		{"interval", models.Schedule{ScheduleType: models.ScheduleInterval, IntervalSeconds: ptr(6 * 3600), StartAt: ptr(utc(t, "2026-01-02 00:00")), CalendarID: ptr(int64(7))},
			cal(models.CalendarWeekly, `{"days": ["sat", "sun"]}`, "UTC"), "2026-01-02 12:00",
			[]string{"2026-01-02 18:00", "2026-01-05 00:00", "2026-01-05 06:00"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var want []time.Time
			for _, w := range tt.want {
				want = append(want, utc(t, w))
			}
			require.Equal(t, want, fires(t, tt.sched, tt.cal, utc(t, tt.from), len(want)))
		})
	}
}

// A calendar that leaves no fire ends the schedule instead of searching
// for ever.
func TestCalendarExcludingEveryFire(t *testing.T) {
	t.Parallel()
	s := models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("0 9 * * *"), CalendarID: ptr(int64(7))}
	trig, err := New(&s, cal(models.CalendarCron, `{"expression": "* * 9 ? * *"}`, "UTC"))
	require.NoError(t, err)
	require.True(t, trig.Next(utc(t, "2026-01-01 00:00")).IsZero())
}

func TestCalendarRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cal  *models.Calendar
		want string
	}{
		{"kind", cal("yearly", `{}`, "UTC"), "unknown kind"},
		{"zone", cal(models.CalendarHoliday, `{"dates": []}`, "Mars/Base"), "unknown timezone"},
		{"not json", cal(models.CalendarHoliday, `[1`, "UTC"), "not a JSON object"},
		{"other kind's key", cal(models.CalendarHoliday, `{"days": [1]}`, "UTC"), `no key "days"`},
		{"bad date", cal(models.CalendarHoliday, `{"dates": ["2026-02-30"]}`, "UTC"), "YYYY-MM-DD"},
		{"bad annual day", cal(models.CalendarAnnual, `{"days": ["13-01"]}`, "UTC"), "MM-DD"},
		{"monthly 32", cal(models.CalendarMonthly, `{"days": [32]}`, "UTC"), "between 1 and 31"},
		{"weekly all", cal(models.CalendarWeekly, `{"days": ["sun","mon","tue","wed","thu","fri","sat"]}`, "UTC"), "every day"},
		{"weekly name", cal(models.CalendarWeekly, `{"days": ["funday"]}`, "UTC"), "not a weekday"},
		{"daily order", cal(models.CalendarDaily, `{"from": "17:00", "to": "09:00"}`, "UTC"), "before"},
		{"daily clock", cal(models.CalendarDaily, `{"from": "9am", "to": "17:00"}`, "UTC"), "HH:MM"},
		{"cron empty", cal(models.CalendarCron, `{}`, "UTC"), "needs"},
		{"cron quartz error", cal(models.CalendarCron, `{"expression": "0 0 0 * * 1"}`, "UTC"), "Support for specifying both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseCalendar(tt.cal)
			require.ErrorContains(t, err, tt.want)
		})
	}
	s := models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("@daily"), CalendarID: ptr(int64(3))}
	_, err := New(&s, nil)
	require.ErrorContains(t, err, "calendar 3 does not exist")
}

// TestQuartzSyntax: with cron_syntax quartz an expression means what
// Quartz computes; 1 is Sunday there, Monday in the standard syntax.
func TestQuartzSyntax(t *testing.T) {
	t.Parallel()
	q := models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("0 0 0 ? * 1"), CronSyntax: models.SyntaxQuartz, Timezone: "UTC"}
	got := fires(t, q, nil, utc(t, "2026-01-01 00:00"), 2) // a Thursday
	require.Equal(t, []time.Time{utc(t, "2026-01-04 00:00"), utc(t, "2026-01-11 00:00")}, got)
	require.Equal(t, time.Sunday, got[0].Weekday())

	last := models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("0 15 10 ? * 6L 2026"), CronSyntax: models.SyntaxQuartz, Timezone: "Europe/Berlin"}
	require.Equal(t, []time.Time{utc(t, "2026-01-30 09:15"), utc(t, "2026-02-27 09:15")}, fires(t, last, nil, utc(t, "2026-01-01 00:00"), 2))

	for _, bad := range []string{"0 0 0 * * 1", "0 0 25 * * ?", "*/5 * * * *"} {
		s := models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr(bad), CronSyntax: models.SyntaxQuartz}
		_, err := New(&s, nil)
		require.ErrorContains(t, err, "Quartz syntax", bad)
	}
	std := models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("0 0 0 ? * 1"), CronSyntax: "vixie"}
	_, err := New(&std, nil)
	require.ErrorContains(t, err, "unknown cron_syntax")
	iv := models.Schedule{ScheduleType: models.ScheduleInterval, IntervalSeconds: ptr(5), CronSyntax: models.SyntaxQuartz}
	_, err = New(&iv, nil)
	require.ErrorContains(t, err, "cron schedules only")
}

// A daily range's ends are the instants Quartz's lenient java.util.Calendar
// makes of them on daylight-saving days: an end in the spring-forward gap
// moves past it, and of a fall-back day's repeated hour only the second
// pass (standard time) is in the range (checked against Quartz 2.3.2's
// DailyCalendar.isTimeIncluded).
func TestDailyCalendarAcrossDST(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	for _, tc := range []struct {
		from, to string
		at       time.Time
		excluded bool
	}{
		// 29 March 2026: 02:00 CET jumps to 03:00 CEST; 02:30 is 03:30 CEST.
		{"01:30", "02:30", time.Date(2026, 3, 29, 1, 15, 0, 0, time.UTC), true}, // 03:15 CEST
		{"01:30", "02:30", time.Date(2026, 3, 29, 1, 31, 0, 0, time.UTC), false},
		// 25 October 2026: 03:00 CEST falls back to 02:00 CET.
		{"02:00", "02:30", time.Date(2026, 10, 25, 0, 15, 0, 0, time.UTC), false}, // 02:15 CEST
		{"02:00", "02:30", time.Date(2026, 10, 25, 1, 15, 0, 0, time.UTC), true},  // 02:15 CET
	} {
		c, err := ParseCalendar(cal(models.CalendarDaily, `{"from": "`+tc.from+`", "to": "`+tc.to+`"}`, "Europe/Berlin"))
		require.NoError(t, err)
		require.Equal(t, tc.excluded, c.Excludes(tc.at), "%s-%s at %s", tc.from, tc.to, tc.at.In(berlin))
	}
}
