package scheduleengine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// A schedule whose row an admin's session holds (an edit not committed,
// a client left in a transaction) neither holds up the others' fires nor
// loses its own: it fires once the row is released, on time if that is
// within the misfire threshold.
func TestHeldScheduleDoesNotHoldUpTheOthers(t *testing.T) {
	t.Parallel()
	testdb.ForEachServer(t, func(t *testing.T, st *store.Store) {
		b := setupWithClock(t, st, "n1", newClock())
		start := b.clock.Now()
		every := models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("*/10 * * * * *")}
		every.Name = "free"
		free := b.schedule(t, every, start)
		every.Name = "held"
		held := b.schedule(t, every, start)
		b.at(t, start)
		require.Len(t, jobsOf(t, st, held.ID), 1)

		ctx := context.Background()
		admin, err := st.SQL().BeginTx(ctx, nil)
		require.NoError(t, err)
		defer func() { _ = admin.Rollback() }()
		_, err = admin.ExecContext(ctx, "UPDATE schedules SET name = 'held, being renamed' WHERE id = ?", held.ID)
		require.NoError(t, err)

		b.at(t, start.Add(10*time.Second))
		b.at(t, start.Add(10500*time.Millisecond))
		require.Len(t, jobsOf(t, st, free.ID), 2, "the free schedule must fire while the other's row is held")
		require.Len(t, jobsOf(t, st, held.ID), 1)

		// Released, the held fire is tried again within RetryDelay, not
		// at the schedule's next fire ten seconds on.
		require.NoError(t, admin.Commit())
		b.at(t, start.Add(11500*time.Millisecond))
		jobs := jobsOf(t, st, held.ID)
		require.Len(t, jobs, 2, "the held fire is written once the row is free")
		require.True(t, start.Add(10*time.Second).Equal(jobs[1].ScheduledAt), "at %v", jobs[1].ScheduledAt)
		require.False(t, jobs[1].CatchUp, "1.5 s late is within the misfire threshold")
		require.Equal(t, "held, being renamed", reload(t, st, held).Name)

		b.at(t, start.Add(20*time.Second))
		require.Len(t, jobsOf(t, st, held.ID), 3)
		require.Len(t, jobsOf(t, st, free.ID), 3)
	})
}
