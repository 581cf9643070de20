package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// A claim with StartKinds moves the jobs of those task types straight to
// running (attempt + 1, started_at and heartbeat_at, node_id) and queues
// the others, in one transaction; a straight-claimed job that never began
// goes back to pending with its attempt given back, and only while it is
// still the run that claim started.
func TestClaimJobsStartKinds(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		free := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "free", TaskType: "sleep", MaxAttempts: 3})
		hooked := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "hooked", TaskType: "hooked"})
		retry := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: free.ID, Attempt: 1})
		other := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: hooked.ID})

		now := time.Now()
		res, err := st.ClaimJobs(ctx, &chimedb.ClaimParams{NodeID: "n1", Now: now, Limit: 10, StartKinds: []string{"sleep", "shell"}})
		require.NoError(t, err)
		require.Len(t, res.Jobs, 2)
		byID := map[int64]chimedb.ClaimedJob{}
		for _, j := range res.Jobs {
			require.NotNil(t, j.Definition, "read inside the claim")
			require.NoError(t, j.LoadErr)
			byID[j.ID] = j
		}

		s := byID[retry.ID]
		require.True(t, s.Started)
		require.Equal(t, models.JobRunning, s.Status)
		require.Equal(t, 2, s.Attempt, "the claim counts the attempt")
		require.NotNil(t, s.StartedAt)
		require.False(t, s.StartedAt.Before(store.DBTime(now)), "started_at is not before the claim began")
		row := testdb.GetJob(t, st, retry.ID)
		require.Equal(t, models.JobRunning, row.Status)
		require.Equal(t, "n1", row.NodeID)
		require.Equal(t, 2, row.Attempt)
		require.NotNil(t, row.StartedAt)
		require.True(t, row.StartedAt.Equal(*s.StartedAt), "the row has the started_at the claim returned")
		require.NotNil(t, row.HeartbeatAt)
		require.NotNil(t, row.QueuedAt)

		q := byID[other.ID]
		require.False(t, q.Started)
		require.Equal(t, models.JobQueued, q.Status)
		require.Equal(t, 0, q.Attempt)
		require.Equal(t, models.JobQueued, testdb.GetJob(t, st, other.ID).Status)

		// A release for another run's started_at (a later claim of the
		// same row) leaves it alone.
		ids, err := st.ReleaseJobs(ctx, &chimedb.ReleaseJobsParams{NodeID: "n1", IDs: []int64{retry.ID}, Started: true,
			StartedAt: s.StartedAt.Add(-time.Second), Now: time.Now(), Reason: "test"})
		require.NoError(t, err)
		require.Empty(t, ids)
		require.Equal(t, models.JobRunning, testdb.GetJob(t, st, retry.ID).Status)

		ids, err = st.ReleaseJobs(ctx, &chimedb.ReleaseJobsParams{NodeID: "n1", IDs: []int64{retry.ID}, Started: true,
			StartedAt: *s.StartedAt, Now: time.Now(), Reason: "released to pending: test"})
		require.NoError(t, err)
		require.Equal(t, []int64{retry.ID}, ids)
		row = testdb.GetJob(t, st, retry.ID)
		require.Equal(t, models.JobPending, row.Status)
		require.Equal(t, 1, row.Attempt, "the attempt is given back")
		require.Nil(t, row.StartedAt)
		require.Nil(t, row.QueuedAt)
		require.Empty(t, row.NodeID)
		// The queued job is not touched by a release of started ones.
		require.Equal(t, models.JobQueued, testdb.GetJob(t, st, other.ID).Status)
	})
}

// With StartKinds the definitions are read inside the claim: when that
// read fails, nothing is claimed and the rows stay pending for the next
// claim, instead of being claimed without a definition.
func TestClaimJobsStartKindsDefinitionReadFails(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		def := testdb.Definition(t, st, nil)
		job := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID})
		const name = "test:fail_definitions_in_claim"
		require.NoError(t, st.DB().Callback().Row().Before("gorm:row").Register(name, func(db *gorm.DB) {
			if db.Statement.Table == "job_definitions" {
				_ = db.AddError(errors.New("injected: connection lost"))
			}
		}))
		_, err := st.ClaimJobs(context.Background(), &chimedb.ClaimParams{NodeID: "n1", Now: time.Now(), Limit: 5, StartKinds: []string{"sleep"}})
		require.NoError(t, st.DB().Callback().Row().Remove(name))
		require.ErrorContains(t, err, "injected: connection lost")
		row := testdb.GetJob(t, st, job.ID)
		require.Equal(t, models.JobPending, row.Status)
		require.Equal(t, 0, row.Attempt)

		res, err := st.ClaimJobs(context.Background(), &chimedb.ClaimParams{NodeID: "n1", Now: time.Now(), Limit: 5, StartKinds: []string{"sleep"}})
		require.NoError(t, err)
		require.Len(t, res.Jobs, 1)
		require.True(t, res.Jobs[0].Started)
	})
}
