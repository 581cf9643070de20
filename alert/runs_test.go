package alert_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// TestWorkflowRunEvents: a workflow run that ends failed or succeeded
// alerts the rules of all workflows or of its own, once per run and
// generation (a rerun is a new occurrence).
func TestWorkflowRunEvents(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		f := newFix(t, st, time.Now().Add(time.Minute))
		db := st.DB()
		wf := models.Workflow{Name: "nightly", FailurePolicy: models.FailStop}
		require.NoError(t, db.Create(&wf).Error)
		other := models.Workflow{Name: "other", FailurePolicy: models.FailStop}
		require.NoError(t, db.Create(&other).Error)
		failed := f.rule(models.EventWorkflowFailed)
		mine := f.rule(models.EventWorkflowSucceeded, func(r *models.AlertRule) { r.Scope, r.WorkflowID = models.ScopeWorkflow, &wf.ID })
		run := func(w int64, status models.RunStatus, gen int, reason string) models.WorkflowRun {
			end := store.DBTime(f.clock.Now().Add(-time.Second))
			start := end.Add(-time.Minute)
			r := models.WorkflowRun{WorkflowID: w, Status: status, Generation: gen, StartedAt: &start, FinishedAt: &end, Reason: reason}
			require.NoError(t, db.Create(&r).Error)
			return r
		}
		bad := run(wf.ID, models.RunFailed, 0, "step load failed")
		run(other.ID, models.RunFailed, 0, "")
		good := run(wf.ID, models.RunSucceeded, 0, "")
		run(other.ID, models.RunSucceeded, 0, "") // not the rule's workflow
		run(wf.ID, models.RunRunning, 0, "")
		require.Equal(t, 3, f.pass())
		require.Zero(t, f.pass())
		got := map[string]bool{}
		for _, p := range f.rcv.payloads() {
			got[fmt.Sprintf("%d/%s/%d", p.Rule.ID, p.Run.Status, p.Run.ID)] = true
			require.Equal(t, fmt.Sprintf("workflow:%d", p.Workflow.ID), p.Subject)
			if p.Run.ID == bad.ID {
				require.Equal(t, fmt.Sprintf("nightly (run %d) failed: step load failed", bad.ID), p.Summary)
				require.Equal(t, "nightly", p.Workflow.Name)
			}
		}
		require.True(t, got[fmt.Sprintf("%d/failed/%d", failed.ID, bad.ID)])
		require.True(t, got[fmt.Sprintf("%d/succeeded/%d", mine.ID, good.ID)])
		require.Len(t, got, 3)

		// Rerun (generation 1) and failed again: a new occurrence.
		require.NoError(t, db.Exec("UPDATE workflow_runs SET generation = 1, finished_at = ? WHERE id = ?",
			store.DBTime(f.clock.Now()), bad.ID).Error)
		f.clock.Advance(time.Second)
		require.Equal(t, 1, f.pass())
	})
}
