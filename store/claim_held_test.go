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

// A forbid schedule whose row another session holds (an admin's edit not
// committed, a client left in a transaction) must not hold up a claim:
// the claim takes the other due jobs, leaves that schedule's for later and
// says so (Held), rather than wait for the server's lock timeout with the
// rows it picked locked.
func TestClaimPassesOverHeldForbidSchedule(t *testing.T) {
	t.Parallel()
	testdb.ForEachServer(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		db := st.DB()
		def := testdb.Definition(t, st, nil)
		excl := insertForbidSchedule(t, db, def.ID)
		now := store.DBTime(time.Now())
		held := models.Job{ScheduleID: &excl, JobDefinitionID: def.ID, ScheduledAt: now.Add(-time.Minute), RunAt: now.Add(-time.Minute), Status: models.JobPending}
		require.NoError(t, db.Create(&held).Error)
		free := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, RunAt: now.Add(-time.Second)})

		admin, err := st.SQL().BeginTx(ctx, nil)
		require.NoError(t, err)
		defer func() { _ = admin.Rollback() }()
		_, err = admin.ExecContext(ctx, "UPDATE schedules SET name = 'excl, being renamed' WHERE id = ?", excl)
		require.NoError(t, err)

		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		res, err := st.ClaimJobs(cctx, &chimedb.ClaimParams{NodeID: "n", Now: time.Now(), Limit: 5})
		require.NoError(t, err, "the claim waited on the held schedule")
		require.Len(t, res.Jobs, 1)
		require.Equal(t, free.ID, res.Jobs[0].ID)
		require.Equal(t, []int64{excl}, res.Held)
		require.Empty(t, res.Blocked, "the schedule is not busy: no forbid wait to report")
		require.Equal(t, models.JobPending, testdb.GetJob(t, st, held.ID).Status)

		require.NoError(t, admin.Commit())
		res, err = st.ClaimJobs(ctx, &chimedb.ClaimParams{NodeID: "n", Now: time.Now(), Limit: 5})
		require.NoError(t, err)
		require.Len(t, res.Jobs, 1)
		require.Equal(t, held.ID, res.Jobs[0].ID)
		require.Empty(t, res.Held)
	})
}
