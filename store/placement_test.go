package store_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

// TestPlacementCostsNoStatement measures placement's cost in statements:
// a claim of jobs that require no tags, and one of jobs whose tags the
// node has, send as many statements as each other (the tags ride on reads
// the claim makes anyway); only a claim that picked a job the node cannot
// take reads the live nodes, one statement more per claim.
func TestPlacementCostsNoStatement(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		n := countStatements(t, st)
		require.NoError(t, st.RegisterNode(ctx, &chimedb.RegisterNodeParams{ID: "other", Roles: "worker", Tags: "ssd"}))
		plain := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "plain"})
		gpu := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "gpu"})
		ssd := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "ssd"})
		require.NoError(t, st.DB().Exec(`UPDATE job_definitions SET required_tags = 'gpu' WHERE id = ?`, gpu.ID).Error)
		require.NoError(t, st.DB().Exec(`UPDATE job_definitions SET required_tags = 'ssd' WHERE id = ?`, ssd.ID).Error)
		claim := func(def int64) (int64, *chimedb.ClaimResult) {
			for range 5 {
				testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def})
			}
			n.Store(0)
			res, err := st.ClaimJobs(ctx, &chimedb.ClaimParams{NodeID: "me", NodeTags: []string{"gpu"}, Now: time.Now(), Limit: 5})
			require.NoError(t, err)
			return n.Load(), res
		}
		untagged, res := claim(plain.ID)
		require.Len(t, res.Jobs, 5)
		tagged, res := claim(gpu.ID)
		require.Len(t, res.Jobs, 5)
		require.Equal(t, untagged, tagged, "jobs whose tags the node has cost no statement more than jobs that require none")
		t.Logf("%s: %d statements a claim of 5, with or without required tags", st.Dialect(), untagged)
		elsewhere, res := claim(ssd.ID)
		require.Empty(t, res.Jobs)
		require.Empty(t, res.Limited, "node other has ssd")
		t.Logf("%s: %d statements for a claim that left its 5 jobs to another node", st.Dialect(), elsewhere)
	})
}

// countStatements counts the statements st sends from now until the test
// ends (gorm's query, row and raw callbacks: what a claim sends).
func countStatements(t *testing.T, st *store.Store) *atomic.Int64 {
	t.Helper()
	n := new(atomic.Int64)
	count := func(*gorm.DB) { n.Add(1) }
	cb := st.DB().Callback()
	require.NoError(t, cb.Query().Before("gorm:query").Register("test:count_query", count))
	require.NoError(t, cb.Row().Before("gorm:row").Register("test:count_row", count))
	require.NoError(t, cb.Raw().Before("gorm:raw").Register("test:count_raw", count))
	t.Cleanup(func() {
		_ = cb.Query().Remove("test:count_query")
		_ = cb.Row().Remove("test:count_row")
		_ = cb.Raw().Remove("test:count_raw")
	})
	return n
}
