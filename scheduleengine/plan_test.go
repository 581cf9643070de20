package scheduleengine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/trigger"
)

func everyMinute(t *testing.T) trigger.Trigger {
	trig, err := trigger.New(&models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("* * * * *")}, nil)
	require.NoError(t, err)
	return trig
}

func TestComputePlan(t *testing.T) {
	t.Parallel()
	// Last fire at t0; now is ten minutes and two seconds later: fires at
	// +1m..+9m are misfires, +10m is on time (2s late, threshold 5s).
	now := t0.Add(10*time.Minute + 2*time.Second)
	tests := []struct {
		name    string
		in      planInput
		fires   []planFire
		next    time.Time
		dropped int
		done    bool
	}{
		{"fire_once collapses", planInput{policy: models.MisfireFireOnce},
			[]planFire{{at: t0.Add(9 * time.Minute), catchUp: true, missedFires: 9}, {at: t0.Add(10 * time.Minute)}}, t0.Add(11 * time.Minute), 0, false},
		{"skip drops", planInput{policy: models.MisfireSkip},
			[]planFire{{at: t0.Add(10 * time.Minute)}}, t0.Add(11 * time.Minute), 9, false},
		{"fire_all up to cap", planInput{policy: models.MisfireFireAll, fireAll: 2},
			[]planFire{{at: t0.Add(8 * time.Minute), catchUp: true, missedFires: 1}, {at: t0.Add(9 * time.Minute), catchUp: true, missedFires: 1}, {at: t0.Add(10 * time.Minute)}}, t0.Add(11 * time.Minute), 7, false},
		{"window drops old fires", planInput{policy: models.MisfireFireOnce, window: ptr(3 * time.Minute)},
			[]planFire{{at: t0.Add(9 * time.Minute), catchUp: true, missedFires: 2}, {at: t0.Add(10 * time.Minute)}}, t0.Add(11 * time.Minute), 7, false},
		{"max_runs keeps the first", planInput{policy: models.MisfireFireOnce, maxRuns: ptr(3), fired: 2},
			[]planFire{{at: t0.Add(9 * time.Minute), catchUp: true, missedFires: 9}}, time.Time{}, 1, true},
		{"forbid while busy", planInput{policy: models.MisfireFireOnce, forbid: true, busy: true},
			nil, t0.Add(11 * time.Minute), 0, false},
		{"forbid keeps the latest", planInput{policy: models.MisfireFireOnce, forbid: true},
			[]planFire{{at: t0.Add(10 * time.Minute)}}, t0.Add(11 * time.Minute), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := tt.in
			in.trig, in.after, in.threshold = everyMinute(t), t0, 5*time.Second
			p := computePlan(in, now)
			if len(tt.fires) == 0 {
				require.Empty(t, p.fires)
			} else {
				require.Equal(t, tt.fires, p.fires)
			}
			require.True(t, tt.next.Equal(p.next), "next: want %v, got %v", tt.next, p.next)
			require.Equal(t, tt.dropped, p.dropped)
			require.Equal(t, tt.done, p.done)
			require.Equal(t, t0.Add(10*time.Minute), p.last)
			require.Equal(t, int64(10), p.misfired+1) // nine late plus the on-time one
		})
	}
}

func TestComputePlanNothingDue(t *testing.T) {
	t.Parallel()
	p := computePlan(planInput{trig: everyMinute(t), after: t0, threshold: 5 * time.Second}, t0.Add(30*time.Second))
	require.Empty(t, p.fires)
	require.True(t, p.last.IsZero())
	require.Equal(t, t0.Add(time.Minute), p.next)
}

// Fires that passed while the schedule was not driven are missed however
// recent: restoreUpTo overrides the misfire threshold, but an occurrence at
// the very instant the engine took over is on time.
func TestComputePlanRestoreUpTo(t *testing.T) {
	t.Parallel()
	trig, err := trigger.New(&models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("* * * * * *")}, nil)
	require.NoError(t, err)
	in := planInput{trig: trig, after: t0, threshold: 5 * time.Second, policy: models.MisfireFireOnce}
	now := t0.Add(7*time.Second + 300*time.Millisecond)

	running := computePlan(in, now)
	require.Len(t, running.fires, 6, "while running, only fires older than the threshold are missed")

	in.restoreUpTo = now
	restored := computePlan(in, now)
	require.Len(t, restored.fires, 1)
	require.Equal(t, planFire{at: t0.Add(7 * time.Second), catchUp: true, missedFires: 7}, restored.fires[0])
	require.Equal(t, int64(7), restored.misfired)

	in.restoreUpTo = t0.Add(7 * time.Second)
	onTheDot := computePlan(in, now)
	require.Len(t, onTheDot.fires, 2)
	require.Equal(t, 6, onTheDot.fires[0].missedFires)
	require.Equal(t, planFire{at: t0.Add(7 * time.Second)}, onTheDot.fires[1])
}

// A per-second schedule down for a year must not walk 31 million fires.
func TestComputePlanLongOutage(t *testing.T) {
	t.Parallel()
	trig, err := trigger.New(&models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("* * * * * *")}, nil)
	require.NoError(t, err)
	now := t0.Add(365 * 24 * time.Hour)
	start := time.Now()
	p := computePlan(planInput{trig: trig, after: t0, threshold: 5 * time.Second, policy: models.MisfireFireOnce}, now)
	require.Less(t, time.Since(start), 10*time.Second, "sanity bound only; see BenchmarkComputePlan")
	require.Len(t, p.fires, 6) // the catch-up plus the five on-time seconds
	require.True(t, p.fires[0].catchUp)
	require.Equal(t, now.Add(-5*time.Second), p.fires[0].at)
	require.Equal(t, now.Add(time.Second), p.next)
}

func BenchmarkComputePlan(b *testing.B) {
	trig, _ := trigger.New(&models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("*/5 * * * * *")}, nil)
	in := planInput{trig: trig, after: t0, threshold: 5 * time.Second}
	for b.Loop() {
		_ = computePlan(in, t0.Add(5*time.Second))
	}
}

// An entry moved on by a commit it was not built from (a sync replaced it
// while its batch was in flight) may have run out of max_runs: its trigger
// row, written when the schedule is marked completed, has no next fire.
func TestUsedUpEntryHasNoNextFire(t *testing.T) {
	t.Parallel()
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	en, err := newEntry(&chimedb.ScheduleRow{
		Schedule:   models.Schedule{ID: 1, ScheduleType: models.ScheduleCron, CronExpr: ptr("*/10 * * * * *"), MaxRuns: ptr(2), CreatedAt: start},
		Definition: &models.JobDefinition{},
	})
	require.NoError(t, err)
	en.catchUpTo(start.Add(10*time.Second), 2, 0)
	require.True(t, en.usedUp())
	require.Nil(t, en.triggerRow().NextFireAt)
}
