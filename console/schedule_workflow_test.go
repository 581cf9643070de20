package console_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// The schedule form offers workflows beside definitions: a schedule saved
// with one starts its runs, its page and the list name the workflow, and
// its Trigger now lands on the run it started.
func TestScheduleFormWorkflow(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, testToken)
		defID, _ := seed(t, st, "nightly")
		g, err := st.CreateWorkflow(context.Background(), &chimedb.WorkflowSpec{Name: "etl",
			Steps: []chimedb.StepSpec{{Name: "a", DefinitionID: defID}}})
		require.NoError(t, err)
		c := s.client()
		csrf := s.login(c)
		_, body := s.get(c, "/schedules/new")
		require.Contains(t, body, `name="workflow_id"`)
		require.Contains(t, body, `>etl</option>`)

		form := url.Values{"csrf": {csrf}, "name": {"nightly-etl"}, "job_definition_id": {itoa(defID)}, "workflow_id": {itoa(g.ID)},
			"schedule_type": {"cron"}, "cron_expr": {"0 2 * * *"}, "timezone": {"UTC"}, "misfire_policy": {"fire_once"},
			"concurrency": {"forbid"}, "status": {"active"}}
		resp, _ := s.post(c, "/schedules/new", form)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		rows, err := st.Admin().ListSchedules(context.Background(), &chimedb.AdminListParams{Name: "nightly-etl", Limit: 1})
		require.NoError(t, err)
		require.Len(t, rows, 1)
		sch := rows[0]
		require.Equal(t, g.ID, *sch.WorkflowID)
		require.Zero(t, sch.JobDefinitionID, "the workflow wins over the form's definition: a schedule names one")

		_, body = s.get(c, "/schedules/"+itoa(sch.ID))
		require.Contains(t, body, `id="schedule-workflow"`)
		_, body = s.get(c, "/schedules")
		require.Contains(t, body, `href="/workflows/`+itoa(g.ID)+`"`)
		_, body = s.get(c, "/schedules/"+itoa(sch.ID)+"/edit")
		require.Regexp(t, `<option value="`+itoa(g.ID)+`" selected>etl</option>`, body)

		resp, _ = s.post(c, "/schedules/"+itoa(sch.ID)+"/trigger", url.Values{"csrf": {csrf}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		runs, err := st.ListRuns(context.Background(), &chimedb.ListRunsParams{WorkflowID: g.ID})
		require.NoError(t, err)
		require.Len(t, runs, 1)
		require.Equal(t, "/runs/"+itoa(runs[0].ID), resp.Header.Get("Location"))
		require.NotEqual(t, models.RunPending, runs[0].Status, "a trigger starts the run at once")
	})
}
