package chimedb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/chimesched/chime/models"
)

// WorkflowStore is workflows and their runs (docs/workflows.md). The
// steps a run writes are decided in the database's transactions: the one
// that records a step's outcome (CompleteJobs, when the outcome names its
// run), a start, a cancel, a rerun, a resume, and AdvanceRuns, which the
// maintenance leader calls to start runs written by plain SQL and to
// finish any run whose jobs ended by another path.
type WorkflowStore interface {
	CreateWorkflow(ctx context.Context, spec *WorkflowSpec) (*WorkflowGraph, error)
	GetWorkflow(ctx context.Context, id int64) (*WorkflowGraph, error)
	ListWorkflows(ctx context.Context) ([]models.Workflow, error)
	DeleteWorkflow(ctx context.Context, id int64) error
	StartRun(ctx context.Context, p *StartRunParams) (*models.WorkflowRun, error)
	GetRun(ctx context.Context, id int64) (*RunView, error)
	ListRuns(ctx context.Context, p *ListRunsParams) ([]models.WorkflowRun, error)
	CancelRun(ctx context.Context, id int64, reason string) (*models.WorkflowRun, error)
	RerunRun(ctx context.Context, id int64) (*models.WorkflowRun, error)
	PauseRun(ctx context.Context, id int64) (*models.WorkflowRun, error)
	ResumeRun(ctx context.Context, id int64) (*models.WorkflowRun, error)
	AdvanceRuns(ctx context.Context, limit int) (int, error)
	CountRunsByStatus(ctx context.Context) (map[models.RunStatus]int64, error)
}

var (
	// ErrRunState: the run's status does not allow the requested action.
	ErrRunState = errors.New("not allowed in this run state")
	// ErrInvalid: what a door asked to write is malformed (a workflow
	// whose edges make a cycle, say); the error says what.
	ErrInvalid = errors.New("invalid")
)

// Bounds of a workflow, so that a run's decision stays one transaction of
// reasonable size: a graph past them is refused when written and fails
// its run when written by SQL.
const (
	MaxWorkflowSteps = 1000
	MaxWorkflowEdges = 10000
	// MaxStepNameBytes bounds workflow_steps.name.
	MaxStepNameBytes = 191
)

// WorkflowSpec is a workflow as a door writes it: steps and edges by name.
type WorkflowSpec struct {
	Name          string               `json:"name"`
	Description   string               `json:"description,omitempty"`
	FailurePolicy models.FailurePolicy `json:"failure_policy,omitempty"`
	// NotifyOn and NotifyEmails: when a run's final state is emailed, and
	// to whom (docs/workflows.md); never when empty.
	NotifyOn     models.NotifyOn `json:"notify_on,omitempty"`
	NotifyEmails string          `json:"notify_emails,omitempty"`
	Steps        []StepSpec      `json:"steps"`
	Edges        []EdgeSpec      `json:"edges,omitempty"`
}

// StepSpec is a step of a WorkflowSpec. Definition names the job
// definition by name (DefinitionID, when set, wins).
type StepSpec struct {
	Name           string         `json:"name"`
	Definition     string         `json:"definition,omitempty"`
	DefinitionID   int64          `json:"definition_id,omitempty"`
	Params         models.JSON    `json:"params,omitempty"`
	TimeoutSeconds *int           `json:"timeout_seconds,omitempty"`
	MaxAttempts    *int           `json:"max_attempts,omitempty"`
	WaitFor        models.WaitFor `json:"wait_for,omitempty"`
}

// EdgeSpec is an edge of a WorkflowSpec, by step names; Condition ""
// is success.
type EdgeSpec struct {
	From      string               `json:"from"`
	To        string               `json:"to"`
	Condition models.EdgeCondition `json:"condition,omitempty"`
}

// WorkflowGraph is a workflow with its steps and edges as stored.
type WorkflowGraph struct {
	models.Workflow
	Steps []models.WorkflowStep `json:"steps"`
	Edges []models.WorkflowEdge `json:"edges"`
}

// StartRunParams starts a run of a workflow named by id or name.
type StartRunParams struct {
	WorkflowID int64
	Workflow   string
	Params     models.JSON
	StartedBy  string
}

// ListRunsParams selects runs, newest first.
type ListRunsParams struct {
	WorkflowID int64 // 0: every workflow
	Status     models.RunStatus
	Limit      int
}

// RunView is a run with the state of each of its steps.
type RunView struct {
	Run      models.WorkflowRun    `json:"run"`
	Workflow models.Workflow       `json:"workflow"`
	Steps    []RunStepView         `json:"steps"`
	Edges    []models.WorkflowEdge `json:"edges"`
}

// RunStepView is one step of a run: its state and the job of its latest
// generation, if one was written.
type RunStepView struct {
	Step  models.WorkflowStep `json:"step"`
	State models.StepState    `json:"state"`
	Job   *models.Job         `json:"job,omitempty"`
}

// CheckGraph says what is wrong with a workflow's steps and edges, or nil:
// duplicate or empty step names, an edge naming a step the workflow does
// not have (or one of another workflow), a self-edge, a duplicate edge, an
// unknown condition or wait_for, a cycle, bounds. Stores call it when a
// door writes a workflow and again when a run reads one written by SQL.
func CheckGraph(steps []models.WorkflowStep, edges []models.WorkflowEdge) error {
	if len(steps) == 0 {
		return errors.New("a workflow needs at least one step")
	}
	if len(steps) > MaxWorkflowSteps {
		return fmt.Errorf("%d steps; a workflow has at most %d", len(steps), MaxWorkflowSteps)
	}
	if len(edges) > MaxWorkflowEdges {
		return fmt.Errorf("%d edges; a workflow has at most %d", len(edges), MaxWorkflowEdges)
	}
	byID := make(map[int64]*models.WorkflowStep, len(steps))
	names := make(map[string]bool, len(steps))
	for i := range steps {
		st := &steps[i]
		if strings.TrimSpace(st.Name) == "" {
			return fmt.Errorf("step %d has no name", st.ID)
		}
		if len(st.Name) > MaxStepNameBytes {
			return fmt.Errorf("step name %.40q… is longer than %d bytes", st.Name, MaxStepNameBytes)
		}
		if names[st.Name] {
			return fmt.Errorf("two steps are named %q", st.Name)
		}
		names[st.Name] = true
		byID[st.ID] = st
		switch st.WaitFor {
		case models.WaitAll, models.WaitAny:
		default:
			return fmt.Errorf("step %q: wait_for is %q, not all or any", st.Name, st.WaitFor)
		}
		if st.JobDefinitionID <= 0 {
			return fmt.Errorf("step %q names no job definition", st.Name)
		}
		if st.MaxAttempts != nil && *st.MaxAttempts < 1 {
			return fmt.Errorf("step %q: max_attempts %d is below 1", st.Name, *st.MaxAttempts)
		}
		if st.TimeoutSeconds != nil && *st.TimeoutSeconds < 0 {
			return fmt.Errorf("step %q: timeout_seconds %d is negative", st.Name, *st.TimeoutSeconds)
		}
	}
	type pair struct{ from, to int64 }
	seen := make(map[pair]bool, len(edges))
	out := make(map[int64][]int64, len(steps))
	indeg := make(map[int64]int, len(steps))
	for _, e := range edges {
		from, to := byID[e.FromStepID], byID[e.ToStepID]
		if from == nil || to == nil {
			return fmt.Errorf("edge %d joins step %d to step %d; the workflow has no such step", e.ID, e.FromStepID, e.ToStepID)
		}
		if e.FromStepID == e.ToStepID {
			return fmt.Errorf("edge %d goes from step %q to itself", e.ID, from.Name)
		}
		switch e.Condition {
		case models.EdgeSuccess, models.EdgeFailure, models.EdgeAlways:
		default:
			return fmt.Errorf("edge %q → %q: condition is %q, not success, failure or always", from.Name, to.Name, e.Condition)
		}
		p := pair{e.FromStepID, e.ToStepID}
		if seen[p] {
			return fmt.Errorf("two edges go from %q to %q", from.Name, to.Name)
		}
		seen[p] = true
		out[e.FromStepID] = append(out[e.FromStepID], e.ToStepID)
		indeg[e.ToStepID]++
	}
	// Kahn's algorithm: steps left over lie on a cycle.
	queue := make([]int64, 0, len(steps))
	for _, st := range steps {
		if indeg[st.ID] == 0 {
			queue = append(queue, st.ID)
		}
	}
	done := 0
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		done++
		for _, to := range out[id] {
			if indeg[to]--; indeg[to] == 0 {
				queue = append(queue, to)
			}
		}
	}
	if done < len(steps) {
		var cyc []string
		for _, st := range steps {
			if indeg[st.ID] > 0 {
				cyc = append(cyc, st.Name)
			}
		}
		slices.Sort(cyc)
		return fmt.Errorf("the edges make a cycle through steps %s", strings.Join(cyc, ", "))
	}
	return nil
}
