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

// A batch of final outcomes only is written, on PostgreSQL, by one UPDATE
// from arrays (one per column that varies), guarded as any completion:
// each row gets its own status, finished_at, result, error and typed
// outcome, and a row no longer active on the node is left alone.
func TestCompleteJobsFinalOutcomes(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		db := st.DB()
		now := store.DBTime(time.Now())
		mk := func(status models.JobStatus, node string) int64 {
			j := models.Job{JobDefinitionID: 1, ScheduledAt: now, RunAt: now, Status: status, NodeID: node, Attempt: 1, Control: models.ControlStop}
			require.NoError(t, db.Create(&j).Error)
			return j.ID
		}
		ok, failed, stopped := mk(models.JobRunning, "n"), mk(models.JobRunning, "n"), mk(models.JobPaused, "n")
		done, other := mk(models.JobSucceeded, "n"), mk(models.JobRunning, "m")
		res, msg, why := "out", "boom", "asked"
		at := func(ms int) time.Time { return now.Add(time.Duration(ms) * time.Millisecond) }
		alone0, _ := st.CompletionPaths()
		applied, err := st.CompleteJobs(ctx, &chimedb.CompleteJobsParams{NodeID: "n", Outcomes: []chimedb.JobOutcome{
			{ID: ok, Status: models.JobSucceeded, FinishedAt: at(1), Result: &res},
			{ID: failed, Status: models.JobFailed, FinishedAt: at(2), Error: &msg, Outcome: models.OutcomeSkipRetry},
			{ID: stopped, Status: models.JobStopped, FinishedAt: at(3), Error: &why},
			{ID: done, Status: models.JobFailed, FinishedAt: at(4)},
			{ID: other, Status: models.JobSucceeded, FinishedAt: at(5)},
		}})
		require.NoError(t, err)
		require.Equal(t, []int64{ok, failed, stopped}, applied)
		alone, _ := st.CompletionPaths()
		require.Equal(t, st.Dialect() == store.Postgres, alone == alone0+1, "one statement on PostgreSQL")

		get := func(id int64) models.Job {
			var j models.Job
			require.NoError(t, db.Take(&j, id).Error)
			return j
		}
		j := get(ok)
		require.Equal(t, models.JobSucceeded, j.Status)
		require.Equal(t, "out", *j.Result)
		require.Nil(t, j.Error)
		require.Equal(t, at(1), j.FinishedAt.UTC())
		require.Equal(t, models.OutcomeNone, j.Outcome)
		require.Empty(t, j.Control)
		require.Equal(t, "n", j.NodeID)
		j = get(failed)
		require.Equal(t, models.JobFailed, j.Status)
		require.Nil(t, j.Result)
		require.Equal(t, "boom", *j.Error)
		require.Equal(t, at(2), j.FinishedAt.UTC())
		require.Equal(t, models.OutcomeSkipRetry, j.Outcome)
		j = get(stopped)
		require.Equal(t, models.JobStopped, j.Status)
		require.Equal(t, "asked", *j.Error)
		require.Equal(t, at(3), j.FinishedAt.UTC())
		j = get(done)
		require.Equal(t, models.JobSucceeded, j.Status)
		require.Nil(t, j.FinishedAt)
		j = get(other)
		require.Equal(t, models.JobRunning, j.Status)
		require.Equal(t, models.ControlStop, j.Control)
	})
}
