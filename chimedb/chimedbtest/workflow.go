package chimedbtest

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

func workflowMethods() []method {
	return []method{
		{"WorkflowStore.CreateWorkflow", createWorkflowCases},
		{"WorkflowStore.GetWorkflow", getWorkflowCases},
		{"WorkflowStore.ListWorkflows", listWorkflowsCases},
		{"WorkflowStore.DeleteWorkflow", deleteWorkflowCases},
		{"WorkflowStore.StartRun", startRunCases},
		{"WorkflowStore.GetRun", getRunCases},
		{"WorkflowStore.ListRuns", listRunsCases},
		{"WorkflowStore.CancelRun", cancelRunCases},
		{"WorkflowStore.RerunRun", rerunRunCases},
		{"WorkflowStore run notices", runNoticeCases},
		{"WorkflowStore.PauseRun", pauseRunCases},
		{"WorkflowStore.ResumeRun", resumeRunCases},
		{"WorkflowStore.AdvanceRuns", advanceRunsCases},
		{"WorkflowStore.CountRunsByStatus", countRunsCases},
	}
}

// flow creates a workflow of steps (each a definition of its own, made
// here) and edges written "from>to" (success), "from!to" (failure) or
// "from*to" (always).
func (e *env) flow(policy models.FailurePolicy, steps []string, edges ...string) *chimedb.WorkflowGraph {
	e.t.Helper()
	spec := &chimedb.WorkflowSpec{Name: e.name("wf"), FailurePolicy: policy}
	for _, s := range steps {
		spec.Steps = append(spec.Steps, chimedb.StepSpec{Name: s, DefinitionID: e.definition().ID})
	}
	for _, ed := range edges {
		spec.Edges = append(spec.Edges, edgeOf(ed))
	}
	g, err := e.Workflow.CreateWorkflow(e.ctx, spec)
	require.NoError(e.t, err)
	return g
}

func edgeOf(s string) chimedb.EdgeSpec {
	for i, c := range s {
		switch c {
		case '>':
			return chimedb.EdgeSpec{From: s[:i], To: s[i+1:], Condition: models.EdgeSuccess}
		case '!':
			return chimedb.EdgeSpec{From: s[:i], To: s[i+1:], Condition: models.EdgeFailure}
		case '*':
			return chimedb.EdgeSpec{From: s[:i], To: s[i+1:], Condition: models.EdgeAlways}
		}
	}
	panic("edge without >, ! or *: " + s)
}

func (e *env) start(g *chimedb.WorkflowGraph, params string) *models.WorkflowRun {
	e.t.Helper()
	p := &chimedb.StartRunParams{WorkflowID: g.ID, StartedBy: "chimedbtest"}
	if params != "" {
		p.Params = models.JSON(params)
	}
	run, err := e.Workflow.StartRun(e.ctx, p)
	require.NoError(e.t, err)
	return run
}

func (e *env) runView(id int64) *chimedb.RunView {
	e.t.Helper()
	v, err := e.Workflow.GetRun(e.ctx, id)
	require.NoError(e.t, err)
	return v
}

// states is each step's state in run id, by name.
func (e *env) states(id int64) map[string]models.StepState {
	e.t.Helper()
	out := map[string]models.StepState{}
	for _, s := range e.runView(id).Steps {
		out[s.Step.Name] = s.State
	}
	return out
}

// stepJob is the job of step name in run id; nil when none is written.
func (e *env) stepJob(id int64, name string) *models.Job {
	e.t.Helper()
	for _, s := range e.runView(id).Steps {
		if s.Step.Name == name {
			return s.Job
		}
	}
	e.t.Fatalf("run %d has no step %q", id, name)
	return nil
}

// runRow reads run id.
func (e *env) runRow(id int64) models.WorkflowRun {
	e.t.Helper()
	return e.runView(id).Run
}

// finish runs step name's job of run id on node and writes its outcome
// through CompleteJobs, as a task engine does.
func (e *env) finish(id int64, name, node string, status models.JobStatus, result string) {
	e.t.Helper()
	j := e.stepJob(id, name)
	require.NotNil(e.t, j, "step %q of run %d has no job", name, id)
	e.toRunning(j.ID, node)
	// The step is said as the task engine says it: the decision may then
	// skip reading the run's other steps (other cases' outcomes say only
	// the run, and take the path that reads them all).
	out := chimedb.JobOutcome{ID: j.ID, RunID: id, Status: status, FinishedAt: e.now()}
	if j.StepID != nil {
		out.StepID = *j.StepID
	}
	if result != "" {
		out.Result = &result
	}
	if status == models.JobFailed {
		out.Error = ptr("step " + name + " failed")
	}
	require.Equal(e.t, []int64{j.ID}, e.complete(node, out))
}

func (e *env) toRunning(jobID int64, node string) {
	e.t.Helper()
	hb := e.now()
	e.setJob(jobID, jobState{status: models.JobRunning, node: node, attempt: 1, heartbeat: &hb, queuedAt: &hb})
}

// stepJobCount counts every job the run wrote for step name, all
// generations.
func (e *env) stepJobCount(id int64, name string) int {
	e.t.Helper()
	n := 0
	for _, s := range e.runView(id).Steps {
		if s.Step.Name != name {
			continue
		}
		jobs, err := e.admin.ListJobs(e.ctx, &chimedb.AdminListParams{Limit: 1000})
		require.NoError(e.t, err)
		for _, j := range jobs {
			if j.StepID != nil && *j.StepID == s.Step.ID && j.RunID != nil && *j.RunID == id {
				n++
			}
		}
	}
	return n
}

type states = map[string]models.StepState

const (
	waiting   = models.StepWaiting
	pending   = models.StepPending
	running   = models.StepRunning
	succeeded = models.StepSucceeded
	failed    = models.StepFailed
	skipped   = models.StepSkipped
	canceled  = models.StepCanceled
)

var createWorkflowCases = []tcase{
	{"a graph is stored with its steps and edges by id", func(e *env) {
		g := e.flow(models.FailStop, []string{"a", "b", "c"}, "a>b", "a!c")
		require.Len(e.t, g.Steps, 3)
		require.Len(e.t, g.Edges, 2)
		ids := map[string]int64{}
		for _, s := range g.Steps {
			ids[s.Name] = s.ID
			require.Equal(e.t, g.ID, s.WorkflowID)
			require.Equal(e.t, models.WaitAll, s.WaitFor)
		}
		require.Equal(e.t, ids["a"], g.Edges[0].FromStepID)
		require.Equal(e.t, ids["b"], g.Edges[0].ToStepID)
		require.Equal(e.t, models.EdgeFailure, g.Edges[1].Condition)
		require.Equal(e.t, models.FailStop, g.FailurePolicy)
	}},
	{"a bad graph is refused and nothing is written", func(e *env) {
		d := e.definition()
		bad := []struct {
			name  string
			steps []string
			edges []string
			is    error
		}{
			{"cycle", []string{"a", "b", "c"}, []string{"a>b", "b>c", "c>a"}, chimedb.ErrInvalid},
			{"self-edge", []string{"a"}, []string{"a>a"}, chimedb.ErrInvalid},
			{"unknown step", []string{"a"}, []string{"a>zz"}, chimedb.ErrInvalid},
			{"duplicate step", []string{"a", "a"}, nil, chimedb.ErrInvalid},
			{"duplicate edge", []string{"a", "b"}, []string{"a>b", "a!b"}, chimedb.ErrInvalid},
			{"no steps", nil, nil, chimedb.ErrInvalid},
		}
		for _, c := range bad {
			spec := &chimedb.WorkflowSpec{Name: "bad-" + c.name}
			for _, s := range c.steps {
				spec.Steps = append(spec.Steps, chimedb.StepSpec{Name: s, DefinitionID: d.ID})
			}
			for _, ed := range c.edges {
				spec.Edges = append(spec.Edges, edgeOf(ed))
			}
			_, err := e.Workflow.CreateWorkflow(e.ctx, spec)
			require.ErrorIs(e.t, err, c.is, c.name)
		}
		_, err := e.Workflow.CreateWorkflow(e.ctx, &chimedb.WorkflowSpec{Name: "nodef",
			Steps: []chimedb.StepSpec{{Name: "a", Definition: "no such definition"}}})
		require.ErrorIs(e.t, err, chimedb.ErrNoDefinition)
		all, err := e.Workflow.ListWorkflows(e.ctx)
		require.NoError(e.t, err)
		require.Empty(e.t, all)
	}},
	{"a duplicate name is a conflict", func(e *env) {
		g := e.flow(models.FailStop, []string{"a"})
		_, err := e.Workflow.CreateWorkflow(e.ctx, &chimedb.WorkflowSpec{Name: g.Name,
			Steps: []chimedb.StepSpec{{Name: "a", DefinitionID: g.Steps[0].JobDefinitionID}}})
		require.ErrorIs(e.t, err, chimedb.ErrConflict)
	}},
	{"the database refuses a self-edge and a bad condition written by SQL", func(e *env) {
		g := e.flow(models.FailStop, []string{"a", "b"})
		a, b := g.Steps[0].ID, g.Steps[1].ID
		require.Error(e.t, e.Exec(e.ctx, "INSERT INTO workflow_edges (workflow_id, from_step_id, to_step_id) VALUES (?, ?, ?)", g.ID, a, a))
		require.Error(e.t, e.Exec(e.ctx, "INSERT INTO workflow_edges (workflow_id, from_step_id, to_step_id, "+condCol(e)+") VALUES (?, ?, ?, ?)",
			g.ID, a, b, "sometimes"))
		require.Error(e.t, e.Exec(e.ctx, "INSERT INTO workflow_steps (workflow_id, name, job_definition_id) VALUES (?, ?, ?)", g.ID, "a", 1))
	}},
}

// condCol is workflow_edges.condition quoted for any of the three
// databases (CONDITION is reserved in MySQL).
func condCol(e *env) string {
	if e.Exec(e.ctx, "SELECT `condition` FROM workflow_edges WHERE 1 = 0") == nil {
		return "`condition`"
	}
	return `"condition"`
}

var getWorkflowCases = []tcase{
	{"a missing workflow is not found", func(e *env) {
		_, err := e.Workflow.GetWorkflow(e.ctx, 987654)
		require.ErrorIs(e.t, err, chimedb.ErrNotFound)
		g := e.flow(models.FailContinue, []string{"x"})
		got, err := e.Workflow.GetWorkflow(e.ctx, g.ID)
		require.NoError(e.t, err)
		require.Equal(e.t, models.FailContinue, got.FailurePolicy)
		require.Equal(e.t, "x", got.Steps[0].Name)
	}},
}

var listWorkflowsCases = []tcase{
	{"every workflow by name", func(e *env) {
		b := e.flow(models.FailStop, []string{"x"})
		a := e.flow(models.FailStop, []string{"x"})
		all, err := e.Workflow.ListWorkflows(e.ctx)
		require.NoError(e.t, err)
		require.Len(e.t, all, 2)
		require.ElementsMatch(e.t, []int64{a.ID, b.ID}, []int64{all[0].ID, all[1].ID})
		require.Less(e.t, all[0].Name, all[1].Name)
	}},
}

var deleteWorkflowCases = []tcase{
	{"a workflow with a live run is in use; a finished one goes with its runs", func(e *env) {
		g := e.flow(models.FailStop, []string{"a"})
		run := e.start(g, "")
		require.ErrorIs(e.t, e.Workflow.DeleteWorkflow(e.ctx, g.ID), chimedb.ErrInUse)
		e.finish(run.ID, "a", "n1", models.JobSucceeded, "")
		require.NoError(e.t, e.Workflow.DeleteWorkflow(e.ctx, g.ID))
		_, err := e.Workflow.GetWorkflow(e.ctx, g.ID)
		require.ErrorIs(e.t, err, chimedb.ErrNotFound)
		_, err = e.Workflow.GetRun(e.ctx, run.ID)
		require.ErrorIs(e.t, err, chimedb.ErrNotFound)
		require.ErrorIs(e.t, e.Workflow.DeleteWorkflow(e.ctx, g.ID), chimedb.ErrNotFound)
	}},
}

var startRunCases = []tcase{
	{"fan-out then fan-in: the join is written only once every upstream step is over", func(e *env) {
		g := e.flow(models.FailStop, []string{"a", "b", "c", "d"}, "a>b", "a>c", "b>d", "c>d")
		run := e.start(g, `{"day":"2026-11-27"}`)
		require.Equal(e.t, models.RunRunning, run.Status)
		require.NotNil(e.t, run.StartedAt)
		require.Equal(e.t, states{"a": pending, "b": waiting, "c": waiting, "d": waiting}, e.states(run.ID))
		e.finish(run.ID, "a", "n1", models.JobSucceeded, `{"rows":3}`)
		require.Equal(e.t, states{"a": succeeded, "b": pending, "c": pending, "d": waiting}, e.states(run.ID))
		e.finish(run.ID, "b", "n1", models.JobSucceeded, "b-out")
		require.Equal(e.t, states{"a": succeeded, "b": succeeded, "c": pending, "d": waiting}, e.states(run.ID))
		require.Nil(e.t, e.stepJob(run.ID, "d"))
		e.finish(run.ID, "c", "n2", models.JobFailed, "")
		// d waits on success of c, which failed: skipped; c's failure is
		// not handled, so the run failed.
		require.Equal(e.t, states{"a": succeeded, "b": succeeded, "c": failed, "d": skipped}, e.states(run.ID))
		r := e.runRow(run.ID)
		require.Equal(e.t, models.RunFailed, r.Status)
		require.Contains(e.t, r.Reason, "c")
		require.NotNil(e.t, r.FinishedAt)
	}},
	{"data passing: the join sees its upstream results and the run's params", func(e *env) {
		g := e.flow(models.FailStop, []string{"extract", "t1", "t2", "load"}, "extract>t1", "extract>t2", "t1>load", "t2*load")
		run := e.start(g, `{"day":"2026-11-27"}`)
		e.finish(run.ID, "extract", "n1", models.JobSucceeded, "e")
		e.finish(run.ID, "t1", "n1", models.JobSucceeded, `{"n":1}`)
		e.finish(run.ID, "t2", "n1", models.JobFailed, "")
		j := e.stepJob(run.ID, "load")
		require.NotNil(e.t, j, "load waits on t1's success and t2 whatever happened to it")
		var in models.RunInputs
		require.NoError(e.t, json.Unmarshal(j.RunInputs, &in))
		require.Equal(e.t, run.ID, in.Run)
		require.Equal(e.t, "load", in.Step)
		require.JSONEq(e.t, `{"day":"2026-11-27"}`, string(in.Params))
		require.Len(e.t, in.Upstream, 2)
		require.Equal(e.t, models.StepResult{State: succeeded, JobID: e.stepJob(run.ID, "t1").ID, Result: `{"n":1}`}, in.Upstream["t1"])
		require.Equal(e.t, failed, in.Upstream["t2"].State)
		require.Equal(e.t, "step t2 failed", in.Upstream["t2"].Error)
		require.Equal(e.t, run.ID, *j.RunID)
	}},
	{"each edge condition: success, failure, always", func(e *env) {
		g := e.flow(models.FailStop, []string{"a", "next", "cleanup", "report"}, "a>next", "a!cleanup", "a*report")
		run := e.start(g, "")
		e.finish(run.ID, "a", "n1", models.JobFailed, "")
		require.Equal(e.t, states{"a": failed, "next": skipped, "cleanup": pending, "report": pending}, e.states(run.ID))
		e.finish(run.ID, "cleanup", "n1", models.JobSucceeded, "")
		e.finish(run.ID, "report", "n1", models.JobSucceeded, "")
		// a's failure was handled by its failure edge: the run succeeded.
		require.Equal(e.t, models.RunSucceeded, e.runRow(run.ID).Status)

		run = e.start(g, "")
		e.finish(run.ID, "a", "n1", models.JobSucceeded, "")
		require.Equal(e.t, states{"a": succeeded, "next": pending, "cleanup": skipped, "report": pending}, e.states(run.ID))
	}},
	{"a skip propagates down success edges and stops at always", func(e *env) {
		g := e.flow(models.FailContinue, []string{"a", "b", "c", "d", "e"}, "a>b", "b>c", "c>d", "c*e")
		run := e.start(g, "")
		e.finish(run.ID, "a", "n1", models.JobFailed, "")
		require.Equal(e.t, states{"a": failed, "b": skipped, "c": skipped, "d": skipped, "e": pending}, e.states(run.ID))
		e.finish(run.ID, "e", "n1", models.JobSucceeded, "")
		require.Equal(e.t, models.RunFailed, e.runRow(run.ID).Status)
	}},
	{"wait_for any: the first edge that holds writes the step, once", func(e *env) {
		d := e.definition()
		g, err := e.Workflow.CreateWorkflow(e.ctx, &chimedb.WorkflowSpec{Name: e.name("wf"), FailurePolicy: models.FailContinue,
			Steps: []chimedb.StepSpec{{Name: "a", DefinitionID: d.ID}, {Name: "b", DefinitionID: d.ID},
				{Name: "first", DefinitionID: d.ID, WaitFor: models.WaitAny}},
			Edges: []chimedb.EdgeSpec{{From: "a", To: "first"}, {From: "b", To: "first"}}})
		require.NoError(e.t, err)
		run := e.start(g, "")
		e.finish(run.ID, "b", "n1", models.JobSucceeded, "")
		require.Equal(e.t, pending, e.states(run.ID)["first"])
		e.finish(run.ID, "a", "n1", models.JobSucceeded, "")
		require.Equal(e.t, 1, e.stepJobCount(run.ID, "first"))
	}},
	{"failure policy stop: no step starts after an unhandled failure", func(e *env) {
		g := e.flow(models.FailStop, []string{"a", "a2", "b", "b2"}, "a>a2", "b>b2")
		run := e.start(g, "")
		e.finish(run.ID, "a", "n1", models.JobFailed, "")
		require.Equal(e.t, models.RunRunning, e.runRow(run.ID).Status, "b is still pending")
		e.finish(run.ID, "b", "n1", models.JobSucceeded, "")
		require.Equal(e.t, states{"a": failed, "a2": skipped, "b": succeeded, "b2": canceled}, e.states(run.ID))
		require.Nil(e.t, e.stepJob(run.ID, "b2"))
		require.Equal(e.t, models.RunFailed, e.runRow(run.ID).Status)
	}},
	{"failure policy continue: independent branches go on", func(e *env) {
		g := e.flow(models.FailContinue, []string{"a", "a2", "b", "b2"}, "a>a2", "b>b2")
		run := e.start(g, "")
		e.finish(run.ID, "a", "n1", models.JobFailed, "")
		e.finish(run.ID, "b", "n1", models.JobSucceeded, "")
		require.Equal(e.t, states{"a": failed, "a2": skipped, "b": succeeded, "b2": pending}, e.states(run.ID))
		e.finish(run.ID, "b2", "n1", models.JobSucceeded, "")
		require.Equal(e.t, models.RunFailed, e.runRow(run.ID).Status)
	}},
	{"a step's retries use its own attempts, and a retry decides nothing", func(e *env) {
		d := e.definition(func(d *models.JobDefinition) { d.MaxAttempts = 1 })
		g, err := e.Workflow.CreateWorkflow(e.ctx, &chimedb.WorkflowSpec{Name: e.name("wf"),
			Steps: []chimedb.StepSpec{{Name: "a", DefinitionID: d.ID, MaxAttempts: ptr(3), TimeoutSeconds: ptr(7),
				Params: models.JSON(`{"k":"step"}`)}, {Name: "b", DefinitionID: d.ID}},
			Edges: []chimedb.EdgeSpec{{From: "a", To: "b"}}})
		require.NoError(e.t, err)
		run := e.start(g, "")
		j := e.stepJob(run.ID, "a")
		require.Equal(e.t, 3, j.MaxAttempts)
		require.JSONEq(e.t, `{"k":"step"}`, string(j.Params))
		var in models.RunInputs
		require.NoError(e.t, json.Unmarshal(j.RunInputs, &in))
		require.Equal(e.t, 7, *in.TimeoutSeconds)
		e.toRunning(j.ID, "n1")
		e.complete("n1", chimedb.JobOutcome{ID: j.ID, RunID: run.ID, Status: models.JobPending, RunAt: e.now(), FinishedAt: e.now(), Error: ptr("again")})
		require.Equal(e.t, states{"a": pending, "b": waiting}, e.states(run.ID))
		e.finish(run.ID, "a", "n1", models.JobSucceeded, "")
		require.Equal(e.t, pending, e.states(run.ID)["b"])
	}},
	{"two nodes ending both sides of a join at once write the join once", func(e *env) {
		for n := range 6 {
			g := e.flow(models.FailStop, []string{"a", "b", "j"}, "a>j", "b>j")
			run := e.start(g, "")
			ja, jb := e.stepJob(run.ID, "a"), e.stepJob(run.ID, "b")
			e.toRunning(ja.ID, "n1")
			e.toRunning(jb.ID, "n2")
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i, x := range []struct {
				node       string
				id, stepID int64
			}{{"n1", ja.ID, *ja.StepID}, {"n2", jb.ID, *jb.StepID}} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					o := chimedb.JobOutcome{ID: x.id, RunID: run.ID, Status: models.JobSucceeded, FinishedAt: e.now()}
					if n%2 == 1 {
						o.StepID = x.stepID // as the task engine says it
					}
					_, errs[i] = e.Task.CompleteJobs(e.ctx, &chimedb.CompleteJobsParams{NodeID: x.node, Outcomes: []chimedb.JobOutcome{o}})
				}()
			}
			wg.Wait()
			require.NoError(e.t, errs[0])
			require.NoError(e.t, errs[1])
			require.Equal(e.t, pending, e.states(run.ID)["j"], "the join was not released")
			require.Equal(e.t, 1, e.stepJobCount(run.ID, "j"))
		}
	}},
	{"a run of a missing workflow is not found", func(e *env) {
		_, err := e.Workflow.StartRun(e.ctx, &chimedb.StartRunParams{Workflow: "nope"})
		require.ErrorIs(e.t, err, chimedb.ErrNotFound)
		g := e.flow(models.FailStop, []string{"a"})
		_, err = e.Workflow.StartRun(e.ctx, &chimedb.StartRunParams{WorkflowID: g.ID, Params: models.JSON(`[1]`)})
		require.ErrorIs(e.t, err, chimedb.ErrInvalid)
		run, err := e.Workflow.StartRun(e.ctx, &chimedb.StartRunParams{Workflow: g.Name})
		require.NoError(e.t, err)
		require.Equal(e.t, g.ID, run.WorkflowID)
	}},
}

var getRunCases = []tcase{
	{"a missing run is not found; a run shows each step with its job", func(e *env) {
		_, err := e.Workflow.GetRun(e.ctx, 987654)
		require.ErrorIs(e.t, err, chimedb.ErrNotFound)
		g := e.flow(models.FailStop, []string{"a", "b"}, "a>b")
		run := e.start(g, "")
		v := e.runView(run.ID)
		require.Equal(e.t, g.Name, v.Workflow.Name)
		require.Len(e.t, v.Edges, 1)
		require.Equal(e.t, "a", v.Steps[0].Step.Name)
		require.NotNil(e.t, v.Steps[0].Job)
		require.Nil(e.t, v.Steps[1].Job)
	}},
}

var listRunsCases = []tcase{
	{"runs newest first, by workflow and status", func(e *env) {
		g1 := e.flow(models.FailStop, []string{"a"})
		g2 := e.flow(models.FailStop, []string{"a"})
		r1 := e.start(g1, "")
		r2 := e.start(g1, "")
		r3 := e.start(g2, "")
		_, err := e.Workflow.CancelRun(e.ctx, r2.ID, "")
		require.NoError(e.t, err)
		all, err := e.Workflow.ListRuns(e.ctx, &chimedb.ListRunsParams{})
		require.NoError(e.t, err)
		require.Equal(e.t, []int64{r3.ID, r2.ID, r1.ID}, runIDs(all))
		of1, err := e.Workflow.ListRuns(e.ctx, &chimedb.ListRunsParams{WorkflowID: g1.ID, Status: models.RunRunning})
		require.NoError(e.t, err)
		require.Equal(e.t, []int64{r1.ID}, runIDs(of1))
	}},
}

func runIDs(runs []models.WorkflowRun) []int64 {
	out := make([]int64, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
}

var cancelRunCases = []tcase{
	{"pending jobs are canceled, running ones asked to stop, and nothing starts after", func(e *env) {
		g := e.flow(models.FailStop, []string{"a", "b", "c"}, "a>c", "b>c")
		run := e.start(g, "")
		ja, jb := e.stepJob(run.ID, "a"), e.stepJob(run.ID, "b")
		e.toRunning(jb.ID, "n1")
		r, err := e.Workflow.CancelRun(e.ctx, run.ID, "not today")
		require.NoError(e.t, err)
		require.Equal(e.t, models.RunCanceled, r.Status)
		require.Equal(e.t, "not today", r.Reason)
		require.Equal(e.t, models.JobCanceled, e.get(ja.ID).Status)
		require.Equal(e.t, models.ControlStop, e.get(jb.ID).Control)
		e.complete("n1", chimedb.JobOutcome{ID: jb.ID, RunID: run.ID, Status: models.JobSucceeded, FinishedAt: e.now()})
		require.Nil(e.t, e.stepJob(run.ID, "c"))
		require.Equal(e.t, models.RunCanceled, e.runRow(run.ID).Status)
		_, err = e.Workflow.CancelRun(e.ctx, run.ID, "")
		require.ErrorIs(e.t, err, chimedb.ErrRunState)
	}},
}

var rerunRunCases = []tcase{
	{"a failed run runs again from its failed steps; the succeeded keep their jobs", func(e *env) {
		g := e.flow(models.FailContinue, []string{"a", "b", "c", "d"}, "a>b", "a>c", "b>d", "c>d")
		run := e.start(g, "")
		e.finish(run.ID, "a", "n1", models.JobSucceeded, "")
		e.finish(run.ID, "b", "n1", models.JobFailed, "")
		e.finish(run.ID, "c", "n1", models.JobSucceeded, "")
		require.Equal(e.t, models.RunFailed, e.runRow(run.ID).Status)
		ja, jc, jb := e.stepJob(run.ID, "a").ID, e.stepJob(run.ID, "c").ID, e.stepJob(run.ID, "b").ID
		r, err := e.Workflow.RerunRun(e.ctx, run.ID)
		require.NoError(e.t, err)
		require.Equal(e.t, models.RunRunning, r.Status)
		require.Equal(e.t, 2, r.Generation)
		require.Nil(e.t, r.FinishedAt)
		require.Equal(e.t, states{"a": succeeded, "b": pending, "c": succeeded, "d": waiting}, e.states(run.ID))
		require.Equal(e.t, ja, e.stepJob(run.ID, "a").ID)
		require.Equal(e.t, jc, e.stepJob(run.ID, "c").ID)
		require.NotEqual(e.t, jb, e.stepJob(run.ID, "b").ID)
		e.finish(run.ID, "b", "n1", models.JobSucceeded, "")
		e.finish(run.ID, "d", "n1", models.JobSucceeded, "")
		require.Equal(e.t, models.RunSucceeded, e.runRow(run.ID).Status)
		require.Equal(e.t, 1, e.stepJobCount(run.ID, "a"))
		require.Equal(e.t, 2, e.stepJobCount(run.ID, "b"))
		_, err = e.Workflow.RerunRun(e.ctx, run.ID)
		require.ErrorIs(e.t, err, chimedb.ErrRunState)
	}},
}

var pauseRunCases = []tcase{
	{"a paused run writes no new step", func(e *env) {
		g := e.flow(models.FailStop, []string{"a", "b"}, "a>b")
		run := e.start(g, "")
		r, err := e.Workflow.PauseRun(e.ctx, run.ID)
		require.NoError(e.t, err)
		require.Equal(e.t, models.RunPaused, r.Status)
		e.finish(run.ID, "a", "n1", models.JobSucceeded, "")
		require.Nil(e.t, e.stepJob(run.ID, "b"))
		n, err := e.Workflow.AdvanceRuns(e.ctx, 10)
		require.NoError(e.t, err)
		require.Zero(e.t, n)
		require.Nil(e.t, e.stepJob(run.ID, "b"))
		_, err = e.Workflow.PauseRun(e.ctx, run.ID)
		require.ErrorIs(e.t, err, chimedb.ErrRunState)
	}},
}

var resumeRunCases = []tcase{
	{"a resumed run writes the steps that came due while paused", func(e *env) {
		g := e.flow(models.FailStop, []string{"a", "b"}, "a>b")
		run := e.start(g, "")
		_, err := e.Workflow.ResumeRun(e.ctx, run.ID)
		require.ErrorIs(e.t, err, chimedb.ErrRunState)
		_, err = e.Workflow.PauseRun(e.ctx, run.ID)
		require.NoError(e.t, err)
		e.finish(run.ID, "a", "n1", models.JobSucceeded, "")
		r, err := e.Workflow.ResumeRun(e.ctx, run.ID)
		require.NoError(e.t, err)
		require.Equal(e.t, models.RunRunning, r.Status)
		require.Equal(e.t, pending, e.states(run.ID)["b"])
	}},
}

var advanceRunsCases = []tcase{
	{"a run inserted by plain SQL is started", func(e *env) {
		g := e.flow(models.FailStop, []string{"a", "b"}, "a>b")
		e.exec("INSERT INTO workflow_runs (workflow_id, params, started_by) VALUES (?, ?, ?)", g.ID, `{"x":1}`, "sql")
		n, err := e.Workflow.AdvanceRuns(e.ctx, 10)
		require.NoError(e.t, err)
		require.Equal(e.t, 1, n)
		runs, err := e.Workflow.ListRuns(e.ctx, &chimedb.ListRunsParams{WorkflowID: g.ID})
		require.NoError(e.t, err)
		require.Len(e.t, runs, 1)
		require.Equal(e.t, models.RunRunning, runs[0].Status)
		require.Equal(e.t, states{"a": pending, "b": waiting}, e.states(runs[0].ID))
		n, err = e.Workflow.AdvanceRuns(e.ctx, 10)
		require.NoError(e.t, err)
		require.Zero(e.t, n, "a run with a live job is decided by its completion")
	}},
	{"bad rows written by SQL fail their run with the reason", func(e *env) {
		e.exec("INSERT INTO workflow_runs (workflow_id) VALUES (?)", 987654)
		cyc := e.flow(models.FailStop, []string{"a", "b"}, "a>b")
		e.exec("INSERT INTO workflow_edges (workflow_id, from_step_id, to_step_id) VALUES (?, ?, ?)", cyc.ID, cyc.Steps[1].ID, cyc.Steps[0].ID)
		e.exec("INSERT INTO workflow_runs (workflow_id) VALUES (?)", cyc.ID)
		other := e.flow(models.FailStop, []string{"x"})
		cross := e.flow(models.FailStop, []string{"a"})
		e.exec("INSERT INTO workflow_edges (workflow_id, from_step_id, to_step_id) VALUES (?, ?, ?)", cross.ID, cross.Steps[0].ID, other.Steps[0].ID)
		e.exec("INSERT INTO workflow_runs (workflow_id) VALUES (?)", cross.ID)
		n, err := e.Workflow.AdvanceRuns(e.ctx, 10)
		require.NoError(e.t, err)
		require.Equal(e.t, 3, n)
		runs, err := e.Workflow.ListRuns(e.ctx, &chimedb.ListRunsParams{})
		require.NoError(e.t, err)
		require.Len(e.t, runs, 3)
		want := map[int64]string{987654: "does not exist", cyc.ID: "cycle", cross.ID: "no such step"}
		for _, r := range runs {
			require.Equal(e.t, models.RunFailed, r.Status, "run %d", r.ID)
			require.Contains(e.t, r.Reason, want[r.WorkflowID], "run %d", r.ID)
			require.NotNil(e.t, r.FinishedAt)
		}
	}},
	{"a run whose last job ended without a completion is finished", func(e *env) {
		g := e.flow(models.FailStop, []string{"a", "b"}, "a>b")
		run := e.start(g, "")
		// As a recovery or an admin's SQL would: no decision.
		e.setJob(e.stepJob(run.ID, "a").ID, jobState{status: models.JobSucceeded, finished: ptr(e.now())})
		n, err := e.Workflow.AdvanceRuns(e.ctx, 10)
		require.NoError(e.t, err)
		require.Equal(e.t, 1, n)
		require.Equal(e.t, pending, e.states(run.ID)["b"])
	}},
}

func init() {
	advanceRunsCases = append(advanceRunsCases,
		tcase{"a ledger row already there keeps its step from being written twice", func(e *env) {
			g := e.flow(models.FailStop, []string{"a", "b"}, "a>b")
			run := e.start(g, "")
			a := e.stepJob(run.ID, "a")
			// A row that says b is written (by SQL, or a writer the run's
			// lock did not stop): the decision after a, which does not
			// read the ledger, must leave b to it.
			e.exec("INSERT INTO workflow_run_steps (run_id, step_id, generation, job_id) VALUES (?, ?, 1, ?)", run.ID, g.Steps[1].ID, a.ID)
			e.finish(run.ID, "a", "n1", models.JobSucceeded, "")
			require.Zero(e.t, e.stepJobCount(run.ID, "b"), "the job the decision wrote for b is refused")
			require.Equal(e.t, a.ID, e.stepJob(run.ID, "b").ID)
		}},
		tcase{"a ledger row without a job gets the step's job", func(e *env) {
			g := e.flow(models.FailStop, []string{"a", "b"}, "a>b")
			run := e.start(g, "")
			e.exec("INSERT INTO workflow_run_steps (run_id, step_id, generation) VALUES (?, ?, 1)", run.ID, g.Steps[1].ID)
			e.finish(run.ID, "a", "n1", models.JobSucceeded, "")
			require.Equal(e.t, 1, e.stepJobCount(run.ID, "b"))
			require.Equal(e.t, pending, e.states(run.ID)["b"])
		}},
		tcase{"a job written by SQL with its run and step is that step's job; a second is refused", func(e *env) {
			g := e.flow(models.FailStop, []string{"a", "b"}, "a>b")
			run := e.start(g, "")
			bDef := g.Steps[1].JobDefinitionID
			// The ledger row is written by the job's INSERT itself, in
			// the run's generation, as for the jobs chime writes.
			e.exec("INSERT INTO jobs (job_definition_id, run_id, step_id) VALUES (?, ?, ?)", bDef, run.ID, g.Steps[1].ID)
			b := e.stepJob(run.ID, "b")
			require.NotNil(e.t, b, "the job written by SQL is b's")
			require.Equal(e.t, states{"a": pending, "b": pending}, e.states(run.ID))
			err := e.Exec(e.ctx, "INSERT INTO jobs (job_definition_id, run_id, step_id) VALUES (?, ?, ?)", bDef, run.ID, g.Steps[1].ID)
			require.Error(e.t, err, "a step runs once per generation")
			require.Contains(e.t, err.Error(), "workflow_run_steps")
			require.Equal(e.t, 1, e.stepJobCount(run.ID, "b"), "the refused job is not written")
			// a's completion would write b: its INSERT is refused, and the
			// run is decided again from its ledger, which says b is written.
			e.finish(run.ID, "a", "n1", models.JobSucceeded, "")
			require.Equal(e.t, 1, e.stepJobCount(run.ID, "b"))
			require.Equal(e.t, b.ID, e.stepJob(run.ID, "b").ID)
			e.finish(run.ID, "b", "n1", models.JobSucceeded, "")
			require.Equal(e.t, models.RunSucceeded, e.runRow(run.ID).Status)
			// A run that does not exist has no ledger: the job is written,
			// as a job of no run the decisions know.
			e.exec("INSERT INTO jobs (job_definition_id, run_id, step_id) VALUES (?, ?, ?)", bDef, 987654, g.Steps[1].ID)
		}},
		tcase{"a rerun's jobs are recorded in its new generation", func(e *env) {
			g := e.flow(models.FailStop, []string{"a", "b"}, "a>b")
			run := e.start(g, "")
			first := e.stepJob(run.ID, "a")
			e.finish(run.ID, "a", "n1", models.JobFailed, "")
			require.Equal(e.t, models.RunFailed, e.runRow(run.ID).Status)
			_, err := e.Workflow.RerunRun(e.ctx, run.ID)
			require.NoError(e.t, err)
			again := e.stepJob(run.ID, "a")
			require.NotEqual(e.t, first.ID, again.ID)
			require.Equal(e.t, 2, e.stepJobCount(run.ID, "a"), "one job per generation")
			// A job for a in generation 2 is there: one more is refused.
			err = e.Exec(e.ctx, "INSERT INTO jobs (job_definition_id, run_id, step_id) VALUES (?, ?, ?)", g.Steps[0].JobDefinitionID, run.ID, g.Steps[0].ID)
			require.Error(e.t, err)
			e.finish(run.ID, "a", "n1", models.JobSucceeded, "")
			e.finish(run.ID, "b", "n1", models.JobSucceeded, "")
			require.Equal(e.t, models.RunSucceeded, e.runRow(run.ID).Status)
		}},
		tcase{"under stop, a branch still running starts nothing after another failed", func(e *env) {
			g := e.flow(models.FailStop, []string{"a", "b", "c", "d"}, "a>b", "a>c", "c>d")
			run := e.start(g, "")
			e.finish(run.ID, "a", "n1", models.JobSucceeded, "")
			e.finish(run.ID, "b", "n1", models.JobFailed, "")
			e.finish(run.ID, "c", "n1", models.JobSucceeded, "")
			require.Nil(e.t, e.stepJob(run.ID, "d"))
			r := e.runRow(run.ID)
			require.Equal(e.t, models.RunFailed, r.Status)
			require.Equal(e.t, "step b failed", r.Reason)
		}},
		tcase{"the last step's success ends the run only when every step succeeded", func(e *env) {
			g := e.flow(models.FailStop, []string{"a", "fix", "b"}, "a>b", "a!fix", "fix*b")
			run := e.start(g, "")
			e.finish(run.ID, "a", "n1", models.JobSucceeded, "")
			require.Equal(e.t, states{"a": succeeded, "fix": skipped, "b": pending}, e.states(run.ID))
			e.finish(run.ID, "b", "n1", models.JobSucceeded, "")
			require.Equal(e.t, models.RunSucceeded, e.runRow(run.ID).Status)
			g2 := e.flow(models.FailContinue, []string{"a", "x", "b"}, "a>b", "x*b")
			run2 := e.start(g2, "")
			e.finish(run2.ID, "x", "n1", models.JobFailed, "")
			e.finish(run2.ID, "a", "n1", models.JobSucceeded, "")
			e.finish(run2.ID, "b", "n1", models.JobSucceeded, "")
			require.Equal(e.t, models.RunSucceeded, e.runRow(run2.ID).Status, "x's failure is handled by its always edge")
		}},
		tcase{"a 250-wide fan-out is written at once and its join once", func(e *env) {
			const wide = 250 // more than one INSERT's worth of jobs
			def := e.definition()
			spec := &chimedb.WorkflowSpec{Name: e.name("wide"), Steps: []chimedb.StepSpec{{Name: "a", DefinitionID: def.ID}, {Name: "join", DefinitionID: def.ID}}}
			for i := range wide {
				name := fmt.Sprintf("s%03d", i)
				spec.Steps = append(spec.Steps, chimedb.StepSpec{Name: name, DefinitionID: def.ID})
				spec.Edges = append(spec.Edges, chimedb.EdgeSpec{From: "a", To: name}, chimedb.EdgeSpec{From: name, To: "join"})
			}
			g, err := e.Workflow.CreateWorkflow(e.ctx, spec)
			require.NoError(e.t, err)
			run := e.start(g, "")
			e.finish(run.ID, "a", "n1", models.JobSucceeded, "from a")
			v := e.runView(run.ID)
			var outs []chimedb.JobOutcome
			for _, st := range v.Steps {
				switch st.Step.Name {
				case "a", "join":
					continue
				}
				require.NotNil(e.t, st.Job, "step %s", st.Step.Name)
				require.Equal(e.t, pending, st.State, "step %s", st.Step.Name)
				require.Contains(e.t, string(st.Job.RunInputs), "from a")
				e.toRunning(st.Job.ID, "n1")
				outs = append(outs, chimedb.JobOutcome{ID: st.Job.ID, RunID: run.ID, StepID: st.Step.ID, Status: models.JobSucceeded, FinishedAt: e.now()})
			}
			require.Len(e.t, outs, wide)
			require.Len(e.t, e.complete("n1", outs...), wide)
			require.Equal(e.t, pending, e.states(run.ID)["join"])
			require.Equal(e.t, 1, e.stepJobCount(run.ID, "join"))
		}},
		tcase{"a step a dead node's recovery fails decides its run at once", func(e *env) {
			g := e.flow(models.FailStop, []string{"a", "b", "c", "d"}, "a>b", "a>c", "c>d")
			run := e.start(g, "")
			e.finish(run.ID, "a", "n1", models.JobSucceeded, "")
			b := e.stepJob(run.ID, "b")
			e.exec("UPDATE jobs SET max_attempts = 1 WHERE id = ?", b.ID)
			e.toRunning(b.ID, "dead")
			_, err := e.Task.RecoverNode(e.ctx, &chimedb.RecoverNodeParams{NodeID: "dead", Now: e.now()})
			require.NoError(e.t, err)
			require.Equal(e.t, failed, e.states(run.ID)["b"])
			require.Contains(e.t, e.runRow(run.ID).Reason, "step b failed", "the run says it is stopping")
			// c's completion, which would start d were b's failure not
			// decided, must start nothing.
			e.finish(run.ID, "c", "n1", models.JobSucceeded, "")
			require.Nil(e.t, e.stepJob(run.ID, "d"))
			require.Equal(e.t, models.RunFailed, e.runRow(run.ID).Status)
		}},
		tcase{"a step added by SQL reaches running runs once the workflow row is touched", func(e *env) {
			g := e.flow(models.FailStop, []string{"a", "b"}, "a>b")
			run := e.start(g, "")
			e.finish(run.ID, "a", "n1", models.JobSucceeded, "")
			e.exec("INSERT INTO workflow_steps (workflow_id, name, job_definition_id) VALUES (?, 'c', ?)", g.ID, e.definition().ID)
			e.exec(`INSERT INTO workflow_edges (workflow_id, from_step_id, to_step_id)
				SELECT ?, ?, id FROM workflow_steps WHERE workflow_id = ? AND name = 'c'`, g.ID, g.Steps[1].ID, g.ID)
			e.exec("UPDATE workflows SET description = 'now with c' WHERE id = ?", g.ID)
			e.finish(run.ID, "b", "n1", models.JobSucceeded, "")
			require.Equal(e.t, pending, e.states(run.ID)["c"])
			require.Equal(e.t, models.RunRunning, e.runRow(run.ID).Status)
		}},
	)
}

// childJobSQL is docs/workflows.md's "when A succeeds, run B" in SQL.
var childJobSQL = []string{
	`INSERT INTO workflows (name) VALUES ('import-then-report')`,
	`INSERT INTO workflow_steps (workflow_id, name, job_definition_id)
  SELECT w.id, d.name, d.id FROM workflows w, job_definitions d
  WHERE w.name = 'import-then-report' AND d.name IN ('import-orders', 'daily-report')`,
	`INSERT INTO workflow_edges (workflow_id, from_step_id, to_step_id)
  SELECT a.workflow_id, a.id, b.id FROM workflow_steps a JOIN workflow_steps b ON b.workflow_id = a.workflow_id
  WHERE a.name = 'import-orders' AND b.name = 'daily-report'
    AND a.workflow_id = (SELECT id FROM workflows WHERE name = 'import-then-report')`,
	`INSERT INTO workflow_runs (workflow_id) SELECT id FROM workflows WHERE name = 'import-then-report'`,
}

func init() {
	advanceRunsCases = append(advanceRunsCases, tcase{"the child jobs of docs/workflows.md, in plain SQL", func(e *env) {
		e.definition(func(d *models.JobDefinition) { d.Name = "import-orders" })
		e.definition(func(d *models.JobDefinition) { d.Name = "daily-report" })
		for _, q := range childJobSQL {
			e.exec(q)
		}
		n, err := e.Workflow.AdvanceRuns(e.ctx, 10)
		require.NoError(e.t, err)
		require.Equal(e.t, 1, n)
		runs, err := e.Workflow.ListRuns(e.ctx, &chimedb.ListRunsParams{})
		require.NoError(e.t, err)
		require.Len(e.t, runs, 1)
		id := runs[0].ID
		require.Equal(e.t, states{"import-orders": pending, "daily-report": waiting}, e.states(id))
		e.finish(id, "import-orders", "n1", models.JobSucceeded, "")
		require.Equal(e.t, pending, e.states(id)["daily-report"])
	}})
}

var countRunsCases = []tcase{
	{"runs by status", func(e *env) {
		g := e.flow(models.FailStop, []string{"a"})
		r := e.start(g, "")
		e.start(g, "")
		_, err := e.Workflow.CancelRun(e.ctx, r.ID, "")
		require.NoError(e.t, err)
		got, err := e.Workflow.CountRunsByStatus(e.ctx)
		require.NoError(e.t, err)
		require.Equal(e.t, map[models.RunStatus]int64{models.RunRunning: 1, models.RunCanceled: 1}, got)
	}},
}
