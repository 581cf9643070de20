package scheduleengine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// A Quartz expression an admin wrote by SQL into a standard-syntax row
// makes the schedule invalid, with the reason the API would give, instead
// of firing on the wrong days ("0 0 12 ? * 1": Mondays, not Quartz's
// Sundays). The same row with cron_syntax quartz fires.
func TestQuartzExpressionUnderStandardSyntaxIsInvalid(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st, "n1")
		start := b.clock.Now()
		inserted := b.schedule(t, models.Schedule{Name: "inserted", ScheduleType: models.ScheduleCron, CronExpr: ptr("0 0 12 ? * 1")}, start)
		edited := b.schedule(t, models.Schedule{Name: "edited", ScheduleType: models.ScheduleCron, CronExpr: ptr("* * * * * *")}, start)
		quartz := b.schedule(t, models.Schedule{Name: "quartz", ScheduleType: models.ScheduleCron, CronExpr: ptr("* * * ? * *"), CronSyntax: models.SyntaxQuartz}, start)
		b.at(t, start.Add(time.Second))

		got := reload(t, st, inserted)
		require.Equal(t, models.ScheduleInvalid, got.Status)
		require.Contains(t, got.StatusReason, `bad cron_expr "0 0 12 ? * 1": "?" in day-of-month is Quartz syntax`)
		require.Contains(t, got.StatusReason, "set cron_syntax to quartz")
		require.Empty(t, jobsOf(t, st, inserted.ID))

		require.NoError(t, st.DB().Exec("UPDATE schedules SET cron_expr = '0 15 10 * * 6L' WHERE id = ?", edited.ID).Error)
		b.e.Refresh()
		b.at(t, start.Add(2*time.Second))
		got = reload(t, st, edited)
		require.Equal(t, models.ScheduleInvalid, got.Status)
		require.Contains(t, got.StatusReason, `"6L" in day-of-week is Quartz syntax`)
		require.NotContains(t, got.StatusReason, "strconv")

		require.Equal(t, models.ScheduleActive, reload(t, st, quartz).Status)
		require.NotEmpty(t, jobsOf(t, st, quartz.ID))
	})
}
