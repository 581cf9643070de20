package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// A duplicate unique key comes back as chimedb.ErrConflict on both
// dialects, so that the API answers 409 without knowing gorm's errors.
func TestAdminDuplicateIsErrConflict(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		admin := st.Admin()
		sixty := 60
		d := &models.JobDefinition{Name: "dup", TaskType: "sleep", MaxAttempts: 1, NotifyOn: models.NotifyNever}
		require.NoError(t, admin.CreateDefinition(ctx, d))
		err := admin.CreateDefinition(ctx, &models.JobDefinition{Name: "dup", TaskType: "sleep", MaxAttempts: 1, NotifyOn: models.NotifyNever})
		require.ErrorIs(t, err, chimedb.ErrConflict)

		other := &models.JobDefinition{Name: "other", TaskType: "sleep", MaxAttempts: 1, NotifyOn: models.NotifyNever}
		require.NoError(t, admin.CreateDefinition(ctx, other))
		other.Name = "dup"
		require.ErrorIs(t, admin.UpdateDefinition(ctx, other), chimedb.ErrConflict)

		s := &models.Schedule{Name: "s", JobDefinitionID: d.ID, ScheduleType: models.ScheduleInterval, IntervalSeconds: &sixty}
		require.NoError(t, admin.CreateSchedule(ctx, s))
		s2 := &models.Schedule{Name: "s", JobDefinitionID: d.ID, ScheduleType: models.ScheduleInterval, IntervalSeconds: &sixty}
		require.ErrorIs(t, admin.CreateSchedule(ctx, s2), chimedb.ErrConflict)
		s3 := &models.Schedule{Name: "s3", JobDefinitionID: d.ID, ScheduleType: models.ScheduleInterval, IntervalSeconds: &sixty}
		require.NoError(t, admin.CreateSchedule(ctx, s3))
		s3.Name = "s"
		require.ErrorIs(t, admin.UpdateSchedule(ctx, s3), chimedb.ErrConflict)

		at := time.Now()
		require.NoError(t, admin.InsertJob(ctx, &models.Job{ScheduleID: &s.ID, JobDefinitionID: d.ID, ScheduledAt: at, RunAt: at}, "test"))
		err = admin.InsertJob(ctx, &models.Job{ScheduleID: &s.ID, JobDefinitionID: d.ID, ScheduledAt: at, RunAt: at}, "test")
		require.ErrorIs(t, err, chimedb.ErrConflict)
	})
}
