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
