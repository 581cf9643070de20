package store_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// onDefinitionRead runs fn before each read of job_definitions through
// st's connection pool: the claim reads them after its commit, so this is a
// failure injected between the commit and the return.
func onDefinitionRead(t *testing.T, st *store.Store, fn func(db *gorm.DB)) {
	t.Helper()
	require.NoError(t, st.DB().Callback().Row().Before("gorm:row").Register("test:definition_read", func(db *gorm.DB) {
		if db.Statement.Table == "job_definitions" {
			fn(db)
		}
	}))
}

// A claim that has committed returns its rows, and no error, whatever fails
// after the commit: the rows are queued on the node, and a caller that got
// an error would drop them until the reconciler frees them.
func TestClaimJobsReturnsCommittedRows(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		def := testdb.Definition(t, st, nil)
		job := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Status: models.JobPending})

		t.Run("ContextEndsAfterCommit", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var once atomic.Bool
			onDefinitionRead(t, st, func(*gorm.DB) {
				if once.CompareAndSwap(false, true) {
					cancel() // as Stop does to a claim in flight
				}
			})
			defer func() { require.NoError(t, st.DB().Callback().Row().Remove("test:definition_read")) }()
			res, err := st.ClaimJobs(ctx, &chimedb.ClaimParams{NodeID: "n1", Now: time.Now(), Limit: 5})
			require.NoError(t, err)
			require.Len(t, res.Jobs, 1)
			require.Equal(t, job.ID, res.Jobs[0].ID)
			require.NoError(t, res.Jobs[0].LoadErr)
			require.NotNil(t, res.Jobs[0].Definition, "the definition is read even though ctx ended: the rows are ours")
			require.Equal(t, models.JobQueued, testdb.GetJob(t, st, job.ID).Status)
		})

		require.NoError(t, st.DB().Exec(`UPDATE jobs SET status = 'pending', node_id = '' WHERE id = ?`, job.ID).Error)

		t.Run("DefinitionReadFails", func(t *testing.T) {
			onDefinitionRead(t, st, func(db *gorm.DB) { _ = db.AddError(errors.New("injected: connection lost")) })
			defer func() { require.NoError(t, st.DB().Callback().Row().Remove("test:definition_read")) }()
			res, err := st.ClaimJobs(context.Background(), &chimedb.ClaimParams{NodeID: "n1", Now: time.Now(), Limit: 5})
			require.NoError(t, err)
			require.Len(t, res.Jobs, 1)
			require.Equal(t, job.ID, res.Jobs[0].ID)
			require.ErrorContains(t, res.Jobs[0].LoadErr, "injected: connection lost")
			require.Nil(t, res.Jobs[0].Definition)
			require.Equal(t, models.JobQueued, testdb.GetJob(t, st, job.ID).Status)
		})
	})
}
