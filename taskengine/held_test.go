package taskengine

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// A claim that left the jobs of a forbid schedule whose row another
// session held (chimedb.ClaimResult.Held) is followed by another within
// heldRetry, not at the next poll: once the row is free the job starts.
func TestHeldForbidScheduleIsClaimedSoon(t *testing.T) {
	t.Parallel()
	testdb.ForEachServer(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "exclusive", DefaultParams: `{"duration":"0s"}`}).ID
		sid := insertForbidSchedule(t, db, def)
		now := time.Now()
		at := store.DBTime(now.Add(-time.Minute))
		j := models.Job{ScheduleID: &sid, JobDefinitionID: def, ScheduledAt: at, RunAt: at, Status: models.JobPending}
		require.NoError(t, db.Create(&j).Error)

		ctx := context.Background()
		admin, err := st.SQL().BeginTx(ctx, nil)
		require.NoError(t, err)
		defer func() { _ = admin.Rollback() }()
		_, err = admin.ExecContext(ctx, "UPDATE schedules SET name = 'excl, being renamed' WHERE id = ?", sid)
		require.NoError(t, err)

		clock := clockwork.NewFakeClockAt(now)
		cfg := testConfig(t, nodeName(t))
		cfg.Clock, cfg.PollInterval = clock, time.Hour // no poll comes to the rescue
		e := startEngine(t, st, cfg)
		// The producer has taken the claim in, and armed its retry.
		require.Empty(t, waitClaimAfter(t, e, 0).ids, "the claim took a job of a held forbid schedule")
		require.Equal(t, models.JobPending, testdb.GetJob(t, st, j.ID).Status)

		require.NoError(t, admin.Commit())
		clock.Advance(heldRetry)
		waitClaimed(t, e, j.ID)
		waitOutcome(t, e, st, j.ID, models.JobSucceeded)
	})
}
