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

// On a jobs table never analyzed (a backlog written right after the
// migration, before autovacuum's first ANALYZE) PostgreSQL estimates the
// claim's rows with default selectivities, a handful, and read every
// pending row after the floor with a Bitmap Heap Scan, sorted them and
// kept the LIMIT: 17,399 rows sorted for 50 in a drain. The claim's scans
// must stay ordered index scans that stop at the LIMIT whatever the
// statistics.
func TestClaimPlanWithoutStatistics(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.Postgres)
	db := st.DB()
	// Keeps autovacuum from analyzing the table while the test runs.
	require.NoError(t, db.Exec("ALTER TABLE jobs SET (autovacuum_enabled = false)").Error)
	def := testdb.Definition(t, st, nil)
	due := store.DBTime(time.Now().Add(-time.Second))
	require.NoError(t, db.Exec(`INSERT INTO jobs (job_definition_id, scheduled_at, run_at, status)
		SELECT ?, ?, ?, ? FROM generate_series(1, 20000)`, def.ID, due, due, models.JobPending).Error)
	var reltuples float64
	require.NoError(t, db.Raw("SELECT reltuples FROM pg_class WHERE oid = 'jobs'::regclass").Scan(&reltuples).Error)
	require.Negative(t, reltuples, "jobs must never have been analyzed")

	ctx := context.Background()
	plan, err := st.ExplainClaim(ctx, time.Now(), 50)
	require.NoError(t, err)
	t.Log(plan)
	requireClaimOrderPlan(t, plan)
	require.NotContains(t, plan, "Bitmap", plan)

	var mid models.Job
	require.NoError(t, db.Order("id").Offset(3000).First(&mid).Error)
	above, below, err := st.ExplainClaimAfter(ctx, time.Now(), 50, chimedb.ClaimCursor{ClaimKey: mid.ClaimKey, ID: mid.ID})
	require.NoError(t, err)
	for _, plan := range []string{above, below} {
		t.Log(plan)
		requireClaimOrderPlan(t, plan)
		require.NotContains(t, plan, "Bitmap", plan)
	}
}
