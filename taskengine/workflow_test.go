package taskengine

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/tasks"
)

// upstreamTask's result is what a workflow step's task sees of its run.
type upstreamTask struct{ tasks.Base }

func (*upstreamTask) Execute(_ context.Context, job *tasks.Job) error {
	b, err := json.Marshal(map[string]any{"run": job.RunID, "step": job.Step, "params": job.RunParams, "upstream": job.Upstream})
	if err != nil {
		return err
	}
	job.SetResult(string(b))
	return nil
}

// A real engine runs a workflow: the fan-out's steps after the root, the
// join after both, and the join's task reads its upstream results and
// the run's params.
func TestWorkflowRunsThroughTheEngine(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		sleepDef := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "nap", DefaultParams: `{"duration":"5ms"}`})
		echoDef := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "echo", TaskType: "upstream"})
		g, err := st.CreateWorkflow(ctx, &chimedb.WorkflowSpec{Name: "etl",
			Steps: []chimedb.StepSpec{{Name: "extract", Definition: "nap"}, {Name: "t1", Definition: "nap"},
				{Name: "t2", Definition: "nap", Params: models.JSON(`{"duration":"1ms"}`)}, {Name: "load", DefinitionID: echoDef.ID}},
			Edges: []chimedb.EdgeSpec{{From: "extract", To: "t1"}, {From: "extract", To: "t2"}, {From: "t1", To: "load"}, {From: "t2", To: "load"}}})
		require.NoError(t, err)
		cfg := testConfig(t, nodeName(t))
		cfg.Registry.MustRegister("upstream", func() tasks.Task { return &upstreamTask{} })
		startEngine(t, st, cfg)
		run, err := st.StartRun(ctx, &chimedb.StartRunParams{WorkflowID: g.ID, Params: models.JSON(`{"day":"2026-11-27"}`)})
		require.NoError(t, err)
		v := waitRun(t, st, run.ID, models.RunSucceeded)
		byName := map[string]chimedb.RunStepView{}
		for _, s := range v.Steps {
			byName[s.Step.Name] = s
			require.Equal(t, models.StepSucceeded, s.State, s.Step.Name)
		}
		load, t1, t2 := byName["load"].Job, byName["t1"].Job, byName["t2"].Job
		require.False(t, load.StartedAt.Before(*t1.FinishedAt), "the join started before t1 ended")
		require.False(t, load.StartedAt.Before(*t2.FinishedAt), "the join started before t2 ended")
		require.Equal(t, "slept 1ms", deref(t2.Result), "the step's params override the definition's")
		var got struct {
			Run      int64
			Step     string
			Params   json.RawMessage
			Upstream map[string]tasks.StepResult
		}
		require.NoError(t, json.Unmarshal([]byte(deref(load.Result)), &got))
		require.Equal(t, run.ID, got.Run)
		require.Equal(t, "load", got.Step)
		require.JSONEq(t, `{"day":"2026-11-27"}`, string(got.Params))
		require.Equal(t, map[string]tasks.StepResult{
			"t1": {State: "succeeded", JobID: t1.ID, Result: "slept 5ms"},
			"t2": {State: "succeeded", JobID: t2.ID, Result: "slept 1ms"},
		}, got.Upstream)
		_ = sleepDef
	})
}

// A step's own timeout replaces its definition's.
func TestWorkflowStepTimeout(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		gate, open := openGate(t)
		defer open()
		testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "w", TaskType: "wait", DefaultParams: `{"gate":"` + gate + `"}`})
		_, err := st.CreateWorkflow(ctx, &chimedb.WorkflowSpec{Name: "slow",
			Steps: []chimedb.StepSpec{{Name: "a", Definition: "w", TimeoutSeconds: ptrTo(1)}}})
		require.NoError(t, err)
		startEngine(t, st, testConfig(t, nodeName(t)))
		run, err := st.StartRun(ctx, &chimedb.StartRunParams{Workflow: "slow"})
		require.NoError(t, err)
		v := waitRun(t, st, run.ID, models.RunFailed)
		require.Contains(t, deref(v.Steps[0].Job.Error), "timeout")
	})
}

func ptrTo[T any](v T) *T { return &v }

// waitRun polls run id until it has status; it fails the test after a
// generous timeout (a wait, not a timing assertion).
func waitRun(t testing.TB, st *store.Store, id int64, status models.RunStatus) *chimedb.RunView {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := st.GetRun(context.Background(), id)
		require.NoError(t, err)
		if v.Run.Status == status {
			return v
		}
		if v.Run.Status.Finished() || time.Now().After(deadline) {
			states := map[string]models.StepState{}
			for _, s := range v.Steps {
				states[s.Step.Name] = s.State
			}
			t.Fatalf("run %d: want %s, have %s (%s); steps %v", id, status, v.Run.Status, v.Run.Reason, states)
		}
		time.Sleep(20 * time.Millisecond) // the poll step of a wait with a deadline
	}
}
