package models

import "time"

// Workflow is a graph of steps joined by edges (docs/workflows.md). Table
// workflows.
type Workflow struct {
	ID            int64         `gorm:"column:id;primaryKey;autoIncrement" json:"id"`
	Name          string        `gorm:"column:name" json:"name"`
	Description   string        `gorm:"column:description" json:"description"`
	FailurePolicy FailurePolicy `gorm:"column:failure_policy" json:"failure_policy"`
	// NotifyOn and NotifyEmails say when a run's final state is emailed,
	// and to whom (comma-separated), as a job definition's do for its
	// jobs; a stopped or canceled run counts as a failure.
	NotifyOn     NotifyOn  `gorm:"column:notify_on;default:never" json:"notify_on"`
	NotifyEmails string    `gorm:"column:notify_emails" json:"notify_emails"`
	CreatedAt    time.Time `gorm:"column:created_at" json:"created_at"`
	UpdatedAt    time.Time `gorm:"column:updated_at" json:"updated_at"`
}

// TableName implements gorm's tabler.
func (Workflow) TableName() string { return "workflows" }

// FailurePolicy is workflows.failure_policy: what a step that fails for
// good, with no edge that handles its failure, does to the rest of its run.
type FailurePolicy string

const (
	// FailStop: no step of the run starts after it; the steps already
	// running finish, and the run fails.
	FailStop FailurePolicy = "stop"
	// FailContinue: the steps that do not depend on it go on; the run
	// fails once they are done.
	FailContinue FailurePolicy = "continue"
)

// WorkflowStep is one step: a job definition run with its own params,
// timeout and attempts. Table workflow_steps; Name is unique in its
// workflow.
type WorkflowStep struct {
	ID              int64  `gorm:"column:id;primaryKey;autoIncrement" json:"id"`
	WorkflowID      int64  `gorm:"column:workflow_id" json:"workflow_id"`
	Name            string `gorm:"column:name" json:"name"`
	JobDefinitionID int64  `gorm:"column:job_definition_id" json:"job_definition_id"`
	// Params override the definition's default_params key by key (a
	// top-level merge); nil keeps them.
	Params         JSON      `gorm:"column:params" json:"params"`
	TimeoutSeconds *int      `gorm:"column:timeout_seconds" json:"timeout_seconds"`
	MaxAttempts    *int      `gorm:"column:max_attempts" json:"max_attempts"`
	WaitFor        WaitFor   `gorm:"column:wait_for" json:"wait_for"`
	CreatedAt      time.Time `gorm:"column:created_at" json:"created_at"`
}

// TableName implements gorm's tabler.
func (WorkflowStep) TableName() string { return "workflow_steps" }

// WaitFor is workflow_steps.wait_for: which of a step's incoming edges
// must hold before it runs.
type WaitFor string

const (
	// WaitAll: every incoming edge, once all are decided (a join).
	WaitAll WaitFor = "all"
	// WaitAny: the first incoming edge that holds.
	WaitAny WaitFor = "any"
)

// WorkflowEdge says that ToStepID waits for FromStepID, and on what.
// Table workflow_edges.
type WorkflowEdge struct {
	ID         int64         `gorm:"column:id;primaryKey;autoIncrement" json:"id"`
	WorkflowID int64         `gorm:"column:workflow_id" json:"workflow_id"`
	FromStepID int64         `gorm:"column:from_step_id" json:"from_step_id"`
	ToStepID   int64         `gorm:"column:to_step_id" json:"to_step_id"`
	Condition  EdgeCondition `gorm:"column:condition" json:"condition"`
}

// TableName implements gorm's tabler.
func (WorkflowEdge) TableName() string { return "workflow_edges" }

// EdgeCondition is workflow_edges.condition: the outcome of the upstream
// step under which the edge holds.
type EdgeCondition string

const (
	// EdgeSuccess holds when the upstream step succeeded.
	EdgeSuccess EdgeCondition = "success"
	// EdgeFailure holds when it failed, was stopped or canceled.
	EdgeFailure EdgeCondition = "failure"
	// EdgeAlways holds once it is done, whatever happened, skipped included.
	EdgeAlways EdgeCondition = "always"
)

// WorkflowRun is one run of a workflow. Table workflow_runs: an INSERT of a
// pending row starts a run. Generation counts reruns: a rerun writes the
// steps it runs again under the next one.
type WorkflowRun struct {
	ID         int64     `gorm:"column:id;primaryKey;autoIncrement" json:"id"`
	WorkflowID int64     `gorm:"column:workflow_id" json:"workflow_id"`
	Status     RunStatus `gorm:"column:status" json:"status"`
	Generation int       `gorm:"column:generation" json:"generation"`
	Params     JSON      `gorm:"column:params" json:"params"`
	StartedBy  string    `gorm:"column:started_by" json:"started_by"`
	// Reason says why a run failed or was canceled, when chime knows more
	// than its steps' own errors (a bad row, a cancel).
	Reason     string     `gorm:"column:reason" json:"reason"`
	StartedAt  *time.Time `gorm:"column:started_at" json:"started_at"`
	FinishedAt *time.Time `gorm:"column:finished_at" json:"finished_at"`
	// ScheduleID and ScheduledAt are, for a run a schedule fired, the
	// schedule and the fire's instant: unique together, the run's fire
	// ledger (a fire writes one run whichever node writes it).
	ScheduleID  *int64     `gorm:"column:schedule_id" json:"schedule_id"`
	ScheduledAt *time.Time `gorm:"column:scheduled_at" json:"scheduled_at"`
	CreatedAt   time.Time  `gorm:"column:created_at" json:"created_at"`
	UpdatedAt   time.Time  `gorm:"column:updated_at" json:"updated_at"`
}

// TableName implements gorm's tabler.
func (WorkflowRun) TableName() string { return "workflow_runs" }

// RunStatus is workflow_runs.status.
type RunStatus string

const (
	RunPending   RunStatus = "pending"
	RunRunning   RunStatus = "running"
	RunPaused    RunStatus = "paused"
	RunSucceeded RunStatus = "succeeded"
	RunFailed    RunStatus = "failed"
	RunCanceled  RunStatus = "canceled"
)

// Finished reports whether the run is over (a rerun may start it again).
func (s RunStatus) Finished() bool {
	return s == RunSucceeded || s == RunFailed || s == RunCanceled
}

// WorkflowRunStep is the ledger row of a step a run has written a job for.
// Table workflow_run_steps; its key (run_id, step_id, generation) writes a
// step once per generation of its run, whichever node decides it.
type WorkflowRunStep struct {
	RunID      int64     `gorm:"column:run_id;primaryKey" json:"run_id"`
	StepID     int64     `gorm:"column:step_id;primaryKey" json:"step_id"`
	Generation int       `gorm:"column:generation;primaryKey" json:"generation"`
	JobID      *int64    `gorm:"column:job_id" json:"job_id"`
	CreatedAt  time.Time `gorm:"column:created_at" json:"created_at"`
}

// TableName implements gorm's tabler.
func (WorkflowRunStep) TableName() string { return "workflow_run_steps" }

// StepState is the state of a step in a run, derived from its job and its
// upstream steps (docs/workflows.md).
type StepState string

const (
	StepWaiting   StepState = "waiting" // an incoming edge is not decided yet
	StepPending   StepState = "pending" // its job is written, not yet claimed
	StepRunning   StepState = "running" // its job is queued, running or paused
	StepSucceeded StepState = "succeeded"
	StepFailed    StepState = "failed"   // failed, stopped or canceled job
	StepSkipped   StepState = "skipped"  // an incoming edge can no longer hold
	StepCanceled  StepState = "canceled" // not started: the run stopped or was canceled
)

// RunInputs is jobs.run_inputs: a run's params and the results of the
// step's upstream steps, by step name, as the step's job was written.
type RunInputs struct {
	Run  int64  `json:"run"`
	Step string `json:"step"`
	// TimeoutSeconds is the step's own timeout, which overrides its
	// definition's; nil keeps the definition's.
	TimeoutSeconds *int                  `json:"timeout_seconds,omitempty"`
	Params         JSON                  `json:"params,omitempty"`
	Upstream       map[string]StepResult `json:"upstream,omitempty"`
}

// StepResult is what an upstream step left: its state, and its job's
// result and error columns.
type StepResult struct {
	State  StepState `json:"state"`
	JobID  int64     `json:"job_id,omitempty"`
	Result string    `json:"result,omitempty"`
	Error  string    `json:"error,omitempty"`
}
