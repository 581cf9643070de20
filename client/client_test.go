package client_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/client"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// A run and a job written on the caller's transaction are gone with its
// rollback, and there with its commit, for the nodes to pick up.
func TestInsertTxFollowsTheCallersTransaction(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		c, err := client.New(client.Dialect(st.Dialect()))
		require.NoError(t, err)
		testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "send-invoice"})
		_, err = st.CreateWorkflow(ctx, &chimedb.WorkflowSpec{Name: "billing",
			Steps: []chimedb.StepSpec{{Name: "a", Definition: "send-invoice"}, {Name: "b", Definition: "send-invoice"}},
			Edges: []chimedb.EdgeSpec{{From: "a", To: "b"}}})
		require.NoError(t, err)
		db, err := st.DB().DB()
		require.NoError(t, err)
		require.NoError(t, st.DB().Exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY, total INTEGER NOT NULL)`).Error)

		write := func(commit bool) (jobID, runID int64) {
			tx, err := db.BeginTx(ctx, nil)
			require.NoError(t, err)
			_, err = tx.ExecContext(ctx, `INSERT INTO orders (id, total) VALUES (1, 42)`)
			require.NoError(t, err)
			jobID, err = c.InsertTx(ctx, tx, client.Job{Definition: "send-invoice", Params: json.RawMessage(`{"order":1}`), MaxAttempts: 3})
			require.NoError(t, err)
			runID, err = c.StartRunTx(ctx, tx, client.Run{Workflow: "billing", Params: json.RawMessage(`{"order":1}`), StartedBy: "shop"})
			require.NoError(t, err)
			if commit {
				require.NoError(t, tx.Commit())
			} else {
				require.NoError(t, tx.Rollback())
			}
			return jobID, runID
		}

		jobID, runID := write(false)
		_, err = st.Admin().GetJob(ctx, jobID)
		require.ErrorIs(t, err, chimedb.ErrNotFound, "the job went with the rollback")
		_, err = st.GetRun(ctx, runID)
		require.ErrorIs(t, err, chimedb.ErrNotFound, "the run went with the rollback")
		runs, err := st.ListRuns(ctx, &chimedb.ListRunsParams{})
		require.NoError(t, err)
		require.Empty(t, runs)

		jobID, runID = write(true)
		j, err := st.Admin().GetJob(ctx, jobID)
		require.NoError(t, err)
		require.Equal(t, models.JobPending, j.Status)
		require.Equal(t, 3, j.MaxAttempts)
		require.JSONEq(t, `{"order":1}`, string(j.Params))
		v, err := st.GetRun(ctx, runID)
		require.NoError(t, err)
		require.Equal(t, models.RunPending, v.Run.Status)
		require.Equal(t, "shop", v.Run.StartedBy)
		n, err := st.AdvanceRuns(ctx, 10)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		v, err = st.GetRun(ctx, runID)
		require.NoError(t, err)
		require.Equal(t, models.RunRunning, v.Run.Status)
		require.Equal(t, models.StepPending, v.Steps[0].State)

		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback() }()
		_, err = c.StartRunTx(ctx, tx, client.Run{Workflow: "nope"})
		require.ErrorIs(t, err, client.ErrNotFound)
		_, err = c.InsertTx(ctx, tx, client.Job{Definition: "nope"})
		require.ErrorIs(t, err, client.ErrNotFound)
		_, err = c.InsertTx(ctx, tx, client.Job{Definition: "send-invoice", Params: json.RawMessage(`[1]`)})
		require.ErrorContains(t, err, "JSON object")
	})
}
