package trigger

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/models"
)

func ptr[T any](v T) *T { return &v }

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func TestNewTrigger(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		sched models.Schedule
		after time.Time
		want  []time.Time
	}{
		{"cron 5 fields", models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("*/15 * * * *")}, t0,
			[]time.Time{t0.Add(15 * time.Minute), t0.Add(30 * time.Minute)}},
		{"cron 6 fields", models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("*/10 * * * * *")}, t0,
			[]time.Time{t0.Add(10 * time.Second), t0.Add(20 * time.Second)}},
		{"cron in time zone", models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("0 9 * * *"), Timezone: "Asia/Shanghai"}, t0,
			[]time.Time{t0.Add(time.Hour), t0.Add(25 * time.Hour)}},
		{"@daily", models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("@daily")}, t0,
			[]time.Time{t0.Add(24 * time.Hour), t0.Add(48 * time.Hour)}},
		{"@every anchored at created_at", models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("@every 5m"), CreatedAt: t0.Add(-2 * time.Minute)}, t0,
			[]time.Time{t0.Add(3 * time.Minute), t0.Add(8 * time.Minute)}},
		{"interval from start_at", models.Schedule{ScheduleType: models.ScheduleInterval, IntervalSeconds: ptr(90), StartAt: ptr(t0.Add(time.Hour))}, t0,
			[]time.Time{t0.Add(time.Hour), t0.Add(time.Hour + 90*time.Second)}},
		{"end_at is inclusive", models.Schedule{ScheduleType: models.ScheduleInterval, IntervalSeconds: ptr(60), CreatedAt: t0, EndAt: ptr(t0.Add(2 * time.Minute))}, t0,
			[]time.Time{t0.Add(time.Minute), t0.Add(2 * time.Minute), {}}},
		{"once", models.Schedule{ScheduleType: models.ScheduleOnce, RunAt: ptr(t0.Add(time.Second))}, t0,
			[]time.Time{t0.Add(time.Second), {}}},
		{"start_at delays cron", models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("@hourly"), StartAt: ptr(t0.Add(90 * time.Minute))}, t0,
			[]time.Time{t0.Add(2 * time.Hour)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			trig, err := New(&tt.sched, nil)
			require.NoError(t, err)
			at := tt.after
			for i, want := range tt.want {
				got := trig.Next(at)
				require.True(t, want.Equal(got), "fire %d: want %v, got %v", i, want, got)
				at = got
			}
		})
	}
}

func TestNewTriggerRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		sched  models.Schedule
		reason string
	}{
		{"bad cron", models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("61 * * * *")}, "bad cron_expr"},
		{"no cron", models.Schedule{ScheduleType: models.ScheduleCron}, "without cron_expr"},
		{"tz prefix", models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("CRON_TZ=UTC * * * * *")}, "timezone column"},
		{"bad zone", models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("@daily"), Timezone: "Mars/Olympus"}, "unknown timezone"},
		{"zero interval", models.Schedule{ScheduleType: models.ScheduleInterval, IntervalSeconds: ptr(0)}, "interval_seconds"},
		{"once without run_at", models.Schedule{ScheduleType: models.ScheduleOnce}, "run_at"},
		{"bad type", models.Schedule{ScheduleType: "weekly"}, "unknown schedule_type"},
		{"bad policy", models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("@daily"), MisfirePolicy: "later"}, "misfire_policy"},
		{"end before start", models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("@daily"), StartAt: ptr(t0), EndAt: ptr(t0.Add(-time.Hour))}, "end_at"},
		{"tiny @every", models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("@every 10ms")}, "at least 1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(&tt.sched, nil)
			require.ErrorContains(t, err, tt.reason)
		})
	}
}
