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

// A completion that retries nothing leaves run_at out of its SET: naming
// it (run_at = run_at) fired chime_jobs_priority (BEFORE UPDATE OF run_at)
// on every completed row, a PL/pgSQL call that changed nothing. A probe
// trigger on the same column counts the rows.
func TestCompletionWithoutRetryLeavesRunAtAlone(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.Postgres)
	db := st.DB()
	require.NoError(t, db.Exec(`CREATE SEQUENCE probe_run_at`).Error)
	require.NoError(t, db.Exec(`CREATE FUNCTION probe_run_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM nextval('probe_run_at'); RETURN NEW; END $$`).Error)
	require.NoError(t, db.Exec(`CREATE TRIGGER probe_run_at BEFORE UPDATE OF run_at ON jobs
		FOR EACH ROW EXECUTE FUNCTION probe_run_at()`).Error)
	fired := func() int64 {
		t.Helper()
		var n int64
		require.NoError(t, db.Raw(`SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM probe_run_at`).Scan(&n).Error)
		return n
	}

	ctx := context.Background()
	def := testdb.Definition(t, st, nil)
	now := time.Now()
	for range 4 {
		testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, RunAt: now.Add(-time.Minute)})
	}
	res, err := st.ClaimJobs(ctx, &chimedb.ClaimParams{NodeID: "n", Now: now, Limit: 4})
	require.NoError(t, err)
	require.Len(t, res.Jobs, 4)
	ids := claimedIDs(res)
	msg := "boom"
	complete := func(outs ...chimedb.JobOutcome) {
		t.Helper()
		applied, err := st.CompleteJobs(ctx, &chimedb.CompleteJobsParams{NodeID: "n", Outcomes: outs})
		require.NoError(t, err)
		require.Len(t, applied, len(outs))
	}

	complete(chimedb.JobOutcome{ID: ids[0], Status: models.JobSucceeded, FinishedAt: now},
		chimedb.JobOutcome{ID: ids[1], Status: models.JobFailed, FinishedAt: now, Error: &msg})
	require.Zero(t, fired(), "final outcomes keep run_at")
	require.Equal(t, models.JobSucceeded, jobByID(t, st, ids[0]).Status)

	// A batch with a retry names run_at, and the trigger keeps claim_key.
	retryAt := store.DBTime(now.Add(time.Hour))
	complete(chimedb.JobOutcome{ID: ids[2], Status: models.JobSucceeded, FinishedAt: now},
		chimedb.JobOutcome{ID: ids[3], Status: models.JobPending, RunAt: retryAt, Error: &msg})
	require.Positive(t, fired())
	retried := jobByID(t, st, ids[3])
	require.True(t, retried.RunAt.Equal(retryAt))
	require.Equal(t, retryAt.UnixMilli(), retried.ClaimKey)
}
