package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// LoadSchedules reads rows with database/sql instead of gorm: every column
// must come back as gorm reads it, NULLs as nil, on each dialect, and
// pages by id must return each active schedule exactly once.
func TestLoadSchedulesPagesMatchGorm(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		def := models.JobDefinition{Name: "d", TaskType: "sleep", DefaultParams: models.JSON(`{"a":1}`), MaxAttempts: 2, NotifyOn: models.NotifyNever}
		require.NoError(t, db.Create(&def).Error)
		cal := models.Calendar{Name: "c", Kind: models.CalendarWeekly, Definition: models.JSON(`{"days":["sat"]}`), Timezone: "UTC"}
		require.NoError(t, db.Create(&cal).Error)
		at := store.DBTime(time.Date(2030, 1, 2, 3, 4, 5, 678900000, time.UTC))
		var ids []int64
		for i := range 11 {
			s := models.Schedule{Name: "s" + string(rune('a'+i)), JobDefinitionID: def.ID, ScheduleType: models.ScheduleCron, CronExpr: ptr("0 * * * *"),
				CronSyntax: models.SyntaxStandard, DSTPolicy: models.DSTOnce, Timezone: "Europe/Paris", MisfirePolicy: models.MisfireFireOnce,
				Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive}
			switch i % 4 {
			case 1: // every nullable column set
				s.ScheduleType, s.CronExpr, s.IntervalSeconds = models.ScheduleInterval, nil, ptr(90)
				s.RunAt, s.StartAt, s.EndAt, s.MaxRuns, s.CatchupWindowSeconds = &at, &at, ptr(at.Add(time.Hour)), ptr(3), ptr(60)
				s.CalendarID, s.Params, s.StatusReason, s.Priority = &cal.ID, models.JSON(`{"b":2}`), "why", ptr(7)
			case 2:
				s.Status = models.SchedulePaused
			}
			require.NoError(t, db.Create(&s).Error)
			ids = append(ids, s.ID)
			if i%3 == 0 {
				last := at.Add(time.Duration(i) * time.Minute)
				require.NoError(t, db.Create(&models.TimeTrigger{ScheduleID: s.ID, LastFireAt: &last, NextFireAt: &at, FiredCount: int64(i),
					RemainingCount: ptr(int64(7)), MisfiredCount: 1, SpecHash: "h", SpecChangedAt: &at}).Error)
			}
		}
		var want []models.Schedule
		require.NoError(t, db.Where("status = ?", models.ScheduleActive).Order("id").Find(&want).Error)
		var trigs []models.TimeTrigger
		require.NoError(t, db.Find(&trigs).Error)

		for _, limit := range []int{0, 1, 3, 8, 100} {
			var got []chimedb.ScheduleRow
			var after int64
			for calls := 0; ; calls++ {
				require.Less(t, calls, 20, "pages never end")
				res, err := st.LoadSchedules(t.Context(), &chimedb.LoadSchedulesParams{AfterID: after, Limit: limit})
				require.NoError(t, err)
				got = append(got, res.Rows...)
				if limit == 0 || len(res.Rows) < limit {
					break
				}
				after = res.Rows[len(res.Rows)-1].Schedule.ID
			}
			require.Len(t, got, len(want), "limit %d", limit)
			for i, r := range got {
				w := want[i]
				if len(w.Params) == 0 {
					w.Params = nil
				}
				require.Equal(t, w, r.Schedule, "limit %d", limit)
				require.NotNil(t, r.Definition)
				require.Equal(t, def.ID, r.Definition.ID)
				if w.CalendarID != nil {
					require.NotNil(t, r.Calendar)
					require.Equal(t, cal.ID, r.Calendar.ID)
				} else {
					require.Nil(t, r.Calendar)
				}
				i := slices.IndexFunc(trigs, func(tt models.TimeTrigger) bool { return tt.ScheduleID == w.ID })
				if i < 0 {
					require.Nil(t, r.Trigger, "schedule %d has no trigger row", w.ID)
					continue
				}
				require.NotNil(t, r.Trigger, "schedule %d", w.ID)
				require.Equal(t, trigs[i], *r.Trigger)
			}
		}

		// A ChangedSince read pages too, and returns every status.
		since := time.Now().Add(-time.Hour)
		res, err := st.LoadSchedules(t.Context(), &chimedb.LoadSchedulesParams{ChangedSince: &since, AfterID: ids[0], Limit: 100})
		require.NoError(t, err)
		require.Len(t, res.Rows, len(ids)-1)
		require.False(t, res.MaxUpdatedAt.IsZero())
	})
}

func ptr[T any](v T) *T { return &v }
