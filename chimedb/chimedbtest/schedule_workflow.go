package chimedbtest

import (
	"context"
	"slices"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// workflowSchedule is a schedule of a one-step workflow: it names the
// workflow, and no definition.
func (e *env) workflowSchedule() (*models.Schedule, *chimedb.WorkflowGraph) {
	e.t.Helper()
	g := e.flow(models.FailStop, []string{"a"})
	s := e.schedule(e.definition().ID)
	e.exec("UPDATE schedules SET job_definition_id = NULL, workflow_id = ? WHERE id = ?", g.ID, s.ID)
	s.JobDefinitionID, s.WorkflowID = 0, &g.ID
	return s, g
}

// scheduleRuns lists the runs schedule id fired, by fire time.
func (e *env) scheduleRuns(id int64) []models.WorkflowRun {
	e.t.Helper()
	var out []models.WorkflowRun
	for _, r := range e.listRuns() {
		if r.ScheduleID != nil && *r.ScheduleID == id {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b models.WorkflowRun) int { return a.ScheduledAt.Compare(*b.ScheduledAt) })
	return out
}

func (e *env) listRuns() []models.WorkflowRun {
	e.t.Helper()
	runs, err := e.Workflow.ListRuns(e.ctx, &chimedb.ListRunsParams{Limit: 1000})
	require.NoError(e.t, err)
	return runs
}

var workflowFireCases = []tcase{
	{"a workflow's fire writes a pending run once, with the schedule's params, and no job", func(e *env) {
		s, g := e.workflowSchedule()
		now := e.now()
		missed, at := now.Add(-time.Hour), now.Add(-time.Second)
		_, tr := fire(s, at, nil)
		jobs := []chimedb.FireJob{
			{ScheduleID: s.ID, WorkflowID: g.ID, ScheduledAt: missed, CatchUp: true, MissedFires: 4},
			{ScheduleID: s.ID, WorkflowID: g.ID, ScheduledAt: at, Params: models.JSON(`{"day":"mon"}`)},
		}
		res := e.writeFires(&chimedb.WriteFiresParams{Now: now, Triggers: []chimedb.TriggerRow{tr}, Jobs: jobs})
		require.Equal(e.t, 1, res.Inserted)
		require.Equal(e.t, 1, res.InsertedCatchUp)
		require.Zero(e.t, res.Duplicates)
		require.Empty(e.t, e.scheduleJobs(s.ID))
		runs := e.scheduleRuns(s.ID)
		require.Len(e.t, runs, 2)
		require.Equal(e.t, g.ID, runs[1].WorkflowID)
		require.Equal(e.t, models.RunPending, runs[1].Status)
		sameInstant(e.t, at, *runs[1].ScheduledAt)
		require.JSONEq(e.t, `{"day":"mon"}`, string(runs[1].Params))
		require.Contains(e.t, runs[0].StartedBy, "catch-up of 4 missed fires")

		// A second writer of the same fires (a leader whose commit
		// stalled) writes no second run: the unique key is the ledger.
		next := at.Add(time.Minute)
		_, tr2 := fire(s, next, &at)
		res = e.writeFires(&chimedb.WriteFiresParams{Now: now, Triggers: []chimedb.TriggerRow{tr2}, Jobs: append(jobs,
			chimedb.FireJob{ScheduleID: s.ID, WorkflowID: g.ID, ScheduledAt: next})})
		require.Equal(e.t, 1, res.Inserted)
		require.Equal(e.t, 2, res.Duplicates)
		require.Len(e.t, e.scheduleRuns(s.ID), 3)
	}},
}

var unfinishedRunCases = []tcase{
	{"a workflow's schedule is unfinished while one of its runs is pending, running or paused", func(e *env) {
		want := map[int64]bool{}
		var all []int64
		for _, st := range []models.RunStatus{models.RunPending, models.RunRunning, models.RunPaused,
			models.RunSucceeded, models.RunFailed, models.RunCanceled} {
			s, g := e.workflowSchedule()
			all = append(all, s.ID)
			e.exec("INSERT INTO workflow_runs (workflow_id, status, schedule_id, scheduled_at) VALUES (?, ?, ?, ?)", g.ID, string(st), s.ID, e.now())
			if !st.Finished() {
				want[s.ID] = true
			}
		}
		for _, unfinished := range []func(context.Context, []int64) (map[int64]bool, error){
			e.Schedule.UnfinishedSchedules, e.Admin.UnfinishedSchedules} {
			got, err := unfinished(e.ctx, all)
			require.NoError(e.t, err)
			require.Equal(e.t, want, got)
		}
	}},
}

var runNoticeCases = []tcase{
	{"a run that ends records the notice its workflow asks for, once per status and generation", func(e *env) {
		spec := &chimedb.WorkflowSpec{Name: e.name("wf"), NotifyOn: models.NotifyFailure, NotifyEmails: "ops@example.com",
			Steps: []chimedb.StepSpec{{Name: "a", DefinitionID: e.definition().ID}}}
		g, err := e.Workflow.CreateWorkflow(e.ctx, spec)
		require.NoError(e.t, err)
		run := e.start(g, "")
		_, err = e.Workflow.CancelRun(e.ctx, run.ID, "")
		require.NoError(e.t, err)
		ns := e.runNotices(run.ID)
		require.Len(e.t, ns, 1, "a canceled run counts as a failure")
		require.Equal(e.t, run.ID, *ns[0].RunID)
		require.EqualValues(e.t, models.RunCanceled, ns[0].JobStatus)
		require.Equal(e.t, 1, ns[0].Attempt)
		require.Equal(e.t, "ops@example.com", ns[0].Recipients)
		_, err = e.Workflow.RerunRun(e.ctx, run.ID)
		require.NoError(e.t, err)
		_, err = e.Workflow.CancelRun(e.ctx, run.ID, "")
		require.NoError(e.t, err)
		require.Len(e.t, e.runNotices(run.ID), 2, "the rerun that ends again is noticed again")

		quiet := e.flow(models.FailStop, []string{"a"}) // notify_on never
		r2 := e.start(quiet, "")
		_, err = e.Workflow.CancelRun(e.ctx, r2.ID, "")
		require.NoError(e.t, err)
		require.Empty(e.t, e.runNotices(r2.ID))
	}},
	{"a run its last step's completion ends records the notice its workflow asks for", func(e *env) {
		// The completion says the step, as the task engine's do: the last
		// step's success ends the run in one guarded UPDATE.
		spec := &chimedb.WorkflowSpec{Name: e.name("wf"), NotifyOn: models.NotifySuccess, NotifyEmails: "ops@example.com",
			Steps: []chimedb.StepSpec{{Name: "a", DefinitionID: e.definition().ID}, {Name: "b", DefinitionID: e.definition().ID}},
			Edges: []chimedb.EdgeSpec{{From: "a", To: "b"}}}
		g, err := e.Workflow.CreateWorkflow(e.ctx, spec)
		require.NoError(e.t, err)
		run := e.start(g, "")
		e.finish(run.ID, "a", "n1", models.JobSucceeded, "")
		e.finish(run.ID, "b", "n1", models.JobSucceeded, "")
		require.Equal(e.t, models.RunSucceeded, e.runRow(run.ID).Status)
		ns := e.runNotices(run.ID)
		require.Len(e.t, ns, 1)
		require.EqualValues(e.t, models.RunSucceeded, ns[0].JobStatus)

		// notify_on success: a failed run records none; never: none.
		failed := e.start(g, "")
		e.finish(failed.ID, "a", "n1", models.JobFailed, "")
		require.Equal(e.t, models.RunFailed, e.runRow(failed.ID).Status)
		require.Empty(e.t, e.runNotices(failed.ID))
		quiet := e.flow(models.FailStop, []string{"a"})
		r := e.start(quiet, "")
		e.finish(r.ID, "a", "n1", models.JobSucceeded, "")
		require.Equal(e.t, models.RunSucceeded, e.runRow(r.ID).Status)
		require.Empty(e.t, e.runNotices(r.ID))
	}},
	{"a workflow's notify settings are checked", func(e *env) {
		for _, spec := range []*chimedb.WorkflowSpec{{NotifyOn: "sometimes"}, {NotifyOn: models.NotifyAlways, NotifyEmails: "ops@, x"}} {
			spec.Name, spec.Steps = e.name("wf"), []chimedb.StepSpec{{Name: "a", DefinitionID: e.definition().ID}}
			_, err := e.Workflow.CreateWorkflow(e.ctx, spec)
			require.ErrorIs(e.t, err, chimedb.ErrInvalid)
		}
	}},
}

// runNotices lists the notices of run id.
func (e *env) runNotices(id int64) []models.Notification {
	e.t.Helper()
	var out []models.Notification
	for _, n := range e.notices(0) {
		if n.RunID != nil && *n.RunID == id {
			require.Equal(e.t, -id, n.JobID)
			out = append(out, n)
		}
	}
	return out
}
