package api

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

func TestWorkflowsAPI(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st)
		testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "nap"})
		b.fails(http.StatusBadRequest, "", "cycle", "POST", "/api/v1/workflows",
			`{"name":"loop","steps":[{"name":"a","definition":"nap"},{"name":"b","definition":"nap"}],"edges":[{"from":"a","to":"b"},{"from":"b","to":"a"}]}`)
		b.fails(http.StatusBadRequest, "", "does not have", "POST", "/api/v1/workflows",
			`{"name":"x","steps":[{"name":"a","definition":"nap"}],"edges":[{"from":"a","to":"ghost"}]}`)
		b.fails(http.StatusBadRequest, "steps", "job definition", "POST", "/api/v1/workflows",
			`{"name":"x","steps":[{"name":"a","definition":"ghost"}]}`)
		b.fails(http.StatusBadRequest, "bogus", "unknown field", "POST", "/api/v1/workflows", `{"name":"x","steps":[],"bogus":1}`)
		list := b.ok(http.StatusOK, "GET", "/api/v1/workflows", "")
		require.Empty(t, list["items"], "nothing of the refused workflows was written")

		wf := b.ok(http.StatusCreated, "POST", "/api/v1/workflows",
			`{"name":"etl","failure_policy":"continue","steps":[{"name":"extract","definition":"nap"},{"name":"load","definition":"nap","max_attempts":2}],
			  "edges":[{"from":"extract","to":"load"}]}`)
		id := int64(wf["id"].(float64))
		require.Len(t, wf["steps"], 2)
		b.fails(http.StatusConflict, "name", "", "POST", "/api/v1/workflows", `{"name":"etl","steps":[{"name":"a","definition":"nap"}]}`)
		got := b.ok(http.StatusOK, "GET", fmt.Sprintf("/api/v1/workflows/%d", id), "")
		require.Equal(t, "continue", got["failure_policy"])

		run := b.ok(http.StatusCreated, "POST", fmt.Sprintf("/api/v1/workflows/%d/runs", id), `{"params":{"day":"mon"}}`)
		require.Equal(t, "running", run["status"])
		runID := int64(run["id"].(float64))
		view := b.ok(http.StatusOK, "GET", fmt.Sprintf("/api/v1/runs/%d", runID), "")
		steps := view["steps"].([]any)
		require.Equal(t, "pending", steps[0].(map[string]any)["state"])
		require.Equal(t, "waiting", steps[1].(map[string]any)["state"])
		require.NotNil(t, steps[0].(map[string]any)["job"])

		b.fails(http.StatusConflict, "", "", "DELETE", fmt.Sprintf("/api/v1/workflows/%d", id), "")
		b.ok(http.StatusOK, "POST", fmt.Sprintf("/api/v1/runs/%d/pause", runID), "")
		b.fails(http.StatusConflict, "", "paused", "POST", fmt.Sprintf("/api/v1/runs/%d/pause", runID), "")
		b.ok(http.StatusOK, "POST", fmt.Sprintf("/api/v1/runs/%d/resume", runID), "")
		c := b.ok(http.StatusOK, "POST", fmt.Sprintf("/api/v1/runs/%d/cancel", runID), "")
		require.Equal(t, "canceled", c["status"])
		b.fails(http.StatusConflict, "", "already canceled", "POST", fmt.Sprintf("/api/v1/runs/%d/cancel", runID), "")
		r := b.ok(http.StatusOK, "POST", fmt.Sprintf("/api/v1/runs/%d/rerun", runID), "")
		require.Equal(t, float64(2), r["generation"])
		runs := b.ok(http.StatusOK, "GET", fmt.Sprintf("/api/v1/runs?workflow_id=%d&status=running", id), "")
		require.Len(t, runs["items"], 1)
		b.fails(http.StatusBadRequest, "status", "", "GET", "/api/v1/runs?status=bogus", "")
		b.fails(http.StatusNotFound, "", "", "GET", "/api/v1/runs/999999", "")
		b.fails(http.StatusNotFound, "", "", "POST", "/api/v1/workflows/999999/runs", "")
	})
}

// A schedule names a definition or a workflow, never both nor neither; a
// workflow's schedule is triggered as a run, and its workflow cannot be
// deleted under it.
func TestWorkflowScheduleAPI(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st)
		d := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "nap"})
		wf := b.ok(http.StatusCreated, "POST", "/api/v1/workflows", `{"name":"etl","steps":[{"name":"a","definition":"nap"}]}`)
		wfID := int64(wf["id"].(float64))
		b.fails(http.StatusBadRequest, "workflow_id", "not both", "POST", "/api/v1/schedules",
			fmt.Sprintf(`{"name":"s","job_definition_id":%d,"workflow_id":%d,"schedule_type":"interval","interval_seconds":60}`, d.ID, wfID))
		b.fails(http.StatusBadRequest, "job_definition_id", "workflow_id", "POST", "/api/v1/schedules",
			`{"name":"s","schedule_type":"interval","interval_seconds":60}`)
		b.fails(http.StatusBadRequest, "workflow", "does not exist", "POST", "/api/v1/schedules",
			`{"name":"s","workflow":"ghost","schedule_type":"interval","interval_seconds":60}`)
		b.fails(http.StatusBadRequest, "workflow_id", "does not exist", "POST", "/api/v1/schedules",
			`{"name":"s","workflow_id":999999,"schedule_type":"interval","interval_seconds":60}`)
		s := b.ok(http.StatusCreated, "POST", "/api/v1/schedules",
			`{"name":"s","workflow":"etl","schedule_type":"interval","interval_seconds":60,"params":{"day":"mon"},"concurrency":"forbid"}`)
		require.Equal(t, float64(wfID), s["workflow_id"])
		require.Equal(t, float64(0), s["job_definition_id"])
		require.NotEmpty(t, s["next_fires"])
		sid := int64(s["id"].(float64))

		run := b.ok(http.StatusCreated, "POST", fmt.Sprintf("/api/v1/schedules/%d/trigger", sid), "")
		require.Equal(t, float64(wfID), run["workflow_id"])
		require.Equal(t, map[string]any{"day": "mon"}, run["params"])
		b.fails(http.StatusConflict, "", "", "DELETE", fmt.Sprintf("/api/v1/workflows/%d", wfID), "")

		// An update that names a definition moves the schedule to it.
		u := b.ok(http.StatusOK, "PATCH", fmt.Sprintf("/api/v1/schedules/%d", sid), fmt.Sprintf(`{"job_definition_id":%d,"params":null}`, d.ID))
		require.Nil(t, u["workflow_id"])
		require.Equal(t, float64(d.ID), u["job_definition_id"])
		u = b.ok(http.StatusOK, "PATCH", fmt.Sprintf("/api/v1/schedules/%d", sid), `{"workflow":"etl"}`)
		require.Equal(t, float64(wfID), u["workflow_id"])
		require.Equal(t, float64(0), u["job_definition_id"])
	})
}
