package scheduleengine

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// TestCalendarExcludedFires: a fire in a time the schedule's calendar
// excludes is no fire at all, neither written nor counted missed; a
// calendar changed by plain SQL reaches the engine at its next sync.
func TestCalendarExcludedFires(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		// No full sync during the test: the calendar's change must come
		// through the incremental one.
		b := setupWithClock(t, st, "n1", newClock(), func(c *Config) { c.FullSyncInterval = time.Hour })
		start := b.clock.Now()
		m := func(d int) int { return start.Add(time.Duration(d) * time.Minute).Minute() }
		// The rows (and the definition) are written an hour back, and another schedule carries
		// the sync's watermark, so that only the calendar's own updated_at
		// can bring the schedule into an incremental sync.
		old := store.DBTime(time.Now().Add(-time.Hour))
		cal := models.Calendar{Name: "quiet", Kind: models.CalendarCron, Timezone: "UTC", CreatedAt: old, UpdatedAt: old,
			Definition: models.JSON(fmt.Sprintf(`{"expression": "* %d,%d * * * ?"}`, m(2), m(3)))}
		require.NoError(t, st.DB().Create(&cal).Error)
		require.NoError(t, st.DB().Model(&models.JobDefinition{}).Where("id = ?", b.def.ID).Update("updated_at", old).Error)
		s := b.schedule(t, models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("* * * * *"), CalendarID: &cal.ID, UpdatedAt: old}, start)
		b.schedule(t, models.Schedule{Name: "watermark", ScheduleType: models.ScheduleOnce, RunAt: ptr(start.AddDate(50, 0, 0))}, start)

		for i := range 5 {
			b.at(t, start.Add(time.Duration(i)*time.Minute+time.Second))
		}
		jobs := jobsOf(t, st, s.ID)
		require.Len(t, jobs, 3)
		for i, want := range []time.Duration{0, time.Minute, 4 * time.Minute} {
			require.True(t, start.Add(want).Equal(jobs[i].ScheduledAt), "job %d at %v", i, jobs[i].ScheduledAt)
			if i > 0 { // the first is the engine's start-up restore of the fire at start
				require.False(t, jobs[i].CatchUp, "job %d", i)
				require.Zero(t, jobs[i].MissedFires)
			}
		}
		tr := triggerOf(t, st, s.ID)
		require.EqualValues(t, 3, tr.FiredCount)
		require.EqualValues(t, 1, tr.MisfiredCount, "the start-up restore's only; an excluded fire is not a misfire")
		require.True(t, start.Add(5*time.Minute).Equal(*tr.NextFireAt))

		// A plain UPDATE of the calendar: excluded from the next sync on.
		require.NoError(t, st.DB().Exec("UPDATE calendars SET definition = ? WHERE id = ?",
			fmt.Sprintf(`{"expression": "* %d * * * ?"}`, m(5)), cal.ID).Error)
		b.at(t, start.Add(4*time.Minute+10*time.Second)) // past the sync interval
		b.at(t, start.Add(5*time.Minute+time.Second))
		b.at(t, start.Add(6*time.Minute+time.Second))
		jobs = jobsOf(t, st, s.ID)
		require.Len(t, jobs, 4)
		require.True(t, start.Add(6*time.Minute).Equal(jobs[3].ScheduledAt))
		require.EqualValues(t, 1, triggerOf(t, st, s.ID).MisfiredCount)
		require.False(t, jobs[3].CatchUp)

		// A calendar that is gone makes the schedule invalid, with the reason.
		require.NoError(t, st.DB().Exec("DELETE FROM calendars WHERE id = ?", cal.ID).Error)
		require.NoError(t, st.DB().Exec("UPDATE schedules SET max_runs = 100 WHERE id = ?", s.ID).Error)
		b.at(t, start.Add(6*time.Minute+20*time.Second))
		got := reload(t, st, s)
		require.Equal(t, models.ScheduleInvalid, got.Status)
		require.Contains(t, got.StatusReason, "does not exist")
	})
}

// TestQuartzSyntaxFiresOnSunday: "0 0 0 ? * 1" in Quartz syntax fires on
// Sunday (standard cron would read 1 as Monday).
func TestQuartzSyntaxFiresOnSunday(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st, "n1")
		start := b.clock.Now()
		sunday := start.Truncate(24*time.Hour).AddDate(0, 0, 1)
		for sunday.Weekday() != time.Sunday {
			sunday = sunday.AddDate(0, 0, 1)
		}
		s := b.schedule(t, models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("0 0 0 ? * 1"), CronSyntax: models.SyntaxQuartz}, start)
		b.at(t, start.Add(time.Second))
		require.True(t, sunday.Equal(*triggerOf(t, st, s.ID).NextFireAt))
		b.at(t, sunday.Add(-time.Second))
		require.Empty(t, jobsOf(t, st, s.ID))
		b.at(t, sunday.Add(time.Second))
		jobs := jobsOf(t, st, s.ID)
		require.Len(t, jobs, 1)
		require.True(t, sunday.Equal(jobs[0].ScheduledAt))
		require.Equal(t, time.Sunday, jobs[0].ScheduledAt.UTC().Weekday())
		require.False(t, jobs[0].CatchUp)
	})
}
