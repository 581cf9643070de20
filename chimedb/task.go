package chimedb

import (
	"time"

	"github.com/chimesched/chime/models"
)

// ClaimParams says who claims and how much.
type ClaimParams struct {
	// NodeID is written to jobs.node_id of every claimed row.
	NodeID string
	// Now is compared with run_at and written to queued_at.
	Now time.Time
	// Limit is the most rows to claim: the pool's free workers.
	Limit int
	// StartKinds lists task types whose OnQueue does nothing
	// (tasks.QueueFree). A claimed job of one of them goes straight to
	// running, as StartJobs would move it (attempt + 1, started_at and
	// heartbeat_at), in the claim's own transaction, and comes back with
	// Started set; the others go to queued. Its definition is then read
	// inside the claim, so Definition is never missing for lack of a read.
	StartKinds []string
	// After, when set, is a floor: the claim takes due rows after it in
	// claim order first, and rows at or below it only when those run
	// short. The rows a claim takes leave dead index entries at the front
	// of the claim's range until the database purges them (InnoDB purge,
	// PostgreSQL vacuum); under a backlog a scan from the start walks them
	// all again on every claim. The caller passes the last full claim's
	// ClaimResult.Last and decides how long a floor may stand (rows can
	// appear below it: see taskengine's floor).
	After *ClaimCursor
	// NodeTags are the claiming node's tags (node.tags, parsed): the claim
	// takes only jobs whose required tags are all among them. A job no
	// live node's tags cover waits, with the reason, as a limit's would
	// (LimitPlacement); one another node can take is left to it.
	NodeTags []string
}

// ClaimCursor is a row's place in the claim's order: (claim_key, id).
type ClaimCursor struct {
	ClaimKey int64
	ID       int64
}

// ClaimedJob is a job moved to queued by ClaimJobs, with what running it
// needs from its definition and schedule.
type ClaimedJob struct {
	models.Job
	// Definition is nil when the row names a definition that does not exist.
	Definition *models.JobDefinition
	// ScheduleName is "" for an ad hoc job.
	ScheduleName string
	// LoadErr says why Definition could not be read after the claim
	// committed. The row is queued on the claiming node all the same: the
	// caller owns it and should release it (store.ReleaseJobs) rather than
	// run it without its definition.
	LoadErr error
	// Started says the claim moved the row straight to running (see
	// ClaimParams.StartKinds): Job.Attempt and Job.StartedAt are the new
	// attempt's, and the caller must not start it again.
	Started bool
}

// EffectiveMaxAttempts is jobs.max_attempts, or the definition's when the
// row says 0 (an ad hoc INSERT leaves it 0), and at least 1.
func (c *ClaimedJob) EffectiveMaxAttempts() int {
	n := c.MaxAttempts
	if n <= 0 && c.Definition != nil {
		n = c.Definition.MaxAttempts
	}
	return max(n, 1)
}

// EffectiveParams is the row's params snapshot, or the definition's
// default_params when the row has none (an ad hoc INSERT).
func (c *ClaimedJob) EffectiveParams() models.JSON {
	if len(c.Params) > 0 || c.Definition == nil {
		return c.Params
	}
	return c.Definition.DefaultParams
}

// ClaimResult is what one claim did.
type ClaimResult struct {
	Jobs []ClaimedJob
	// Selected counts the rows the claim looked at, claimed or not; when it
	// equals the limit there are probably more due rows.
	Selected int
	// Blocked lists schedules with concurrency = 'forbid' whose due jobs
	// were left pending because an earlier job of theirs is active.
	Blocked []int64
	// Held lists forbid schedules whose row another transaction held (an
	// admin's edit not committed yet, another node's claim): their due
	// jobs were left pending for a later claim, which should come soon.
	Held []int64
	// Limited lists picked jobs a limit held back (a queue's or a
	// definition's max_running, a paused or invalid queue, a rate limit):
	// left pending, with the reason. They do not count in Selected.
	Limited []LimitedJob
	// RetryIn, when not zero, is how soon (by the database's clock) a
	// rate-limited queue whose jobs this claim held back may start one.
	RetryIn time.Duration
	// Last is where the claim's scan ended: the last row it picked (claimed
	// or not), from the scan below ClaimParams.After when the scan above it
	// ran short. Nil when it picked none.
	Last *ClaimCursor
}

// WaitingJobsParams selects due pending jobs of some schedules.
type WaitingJobsParams struct {
	ScheduleIDs []int64
	Now         time.Time
	Limit       int
}

// WaitingJob is a due job held back by its schedule's concurrency.
type WaitingJob struct {
	ID         int64
	ScheduleID int64
}

// StartJobsParams moves queued jobs to running.
type StartJobsParams struct {
	NodeID string
	Jobs   []StartJob
	Now    time.Time
}

// StartJob is one claimed job to start, with the attempt count its claim
// read: the start only applies while the row still has it.
type StartJob struct {
	ID      int64
	Attempt int
}

// ReleaseJobsParams sends queued jobs back to pending.
type ReleaseJobsParams struct {
	NodeID string
	// IDs limits the release to these jobs; nil releases every job queued on NodeID.
	IDs []int64
	// Started releases jobs of IDs that a claim moved straight to running
	// (ClaimedJob.Started) and that never began: they go back to pending
	// with their attempt given back. Only rows still running on NodeID
	// with StartedAt as their started_at move.
	Started   bool
	StartedAt time.Time
	// Reason is written to job_logs for each released job.
	Reason string
	Now    time.Time
}

// ControlRequest is a control action waiting on a job this node runs.
type ControlRequest struct {
	ID      int64
	Status  models.JobStatus
	Control models.JobControl
}

// ControlOutcomeParams records what the engine did about a control request.
type ControlOutcomeParams struct {
	ID     int64
	NodeID string
	// To is the new status (paused or running), or "" to leave status alone
	// (a refusal, or a stop whose status is written when Execute returns).
	To models.JobStatus
}

// JobOutcome is how one run ended, as the completer writes it.
type JobOutcome struct {
	// HandBack, with Status pending, gives the attempt back (a draining
	// node cut the run off; the job did nothing wrong), as a snooze does
	// without counting one.
	HandBack bool
	ID       int64
	// RunID is the job's workflow run (jobs.run_id), 0 for none. A final
	// outcome of a run's job decides the run's next steps in the same
	// transaction (see WorkflowStore).
	RunID int64
	// StepID is the job's step (jobs.step_id), 0 for none or unknown. With
	// it, a step's end may be decided without reading the run's other
	// steps (0 always reads them).
	StepID int64
	// Status is succeeded, failed, stopped, canceled (the task asked), or
	// pending for a failed attempt that will be retried at RunAt, or a
	// snooze.
	Status models.JobStatus
	// Outcome is the typed outcome the task chose, written to jobs.outcome.
	// OutcomeSnoozed (with Status pending) also gives the attempt back and
	// counts the snooze in jobs.snoozes.
	Outcome models.JobOutcome
	// FinishedAt is when the run ended (kept NULL for a retry).
	FinishedAt time.Time
	// RunAt is when a retry becomes due; ignored unless Status is pending.
	RunAt  time.Time
	Result *string
	Error  *string
	// Notice, when set on a final outcome, records a completion notice in
	// the same transaction (see OutcomeNotice).
	Notice *OutcomeNotice
	// Log, when set, is the job_logs line that tells this outcome (its
	// JobID is ID). It is written in the same transaction, and only if the
	// outcome is, so the job's state and the line that tells it are seen
	// together.
	Log *models.JobLog
}

// CompleteJobsParams is one batch of outcomes from one node.
type CompleteJobsParams struct {
	NodeID   string
	Outcomes []JobOutcome
	// Logs are job_logs lines written in the same transaction, before the
	// outcomes' own lines, whatever becomes of the outcomes: the node's
	// buffered lines, among them every line the batch's jobs logged before
	// they ended. So a job's final state is never visible before its
	// lines (docs/api.md, job logs).
	Logs []models.JobLog
}

// MaxNoticeAttachmentBytes bounds what a notice keeps of a task's
// attachments (their raw size, summed): a notice is one row, written in the
// completer's batch, and a row of tens of megabytes would hold up every
// job of the batch. Larger attachments are left out of the email.
const MaxNoticeAttachmentBytes = 4 << 20

// OutcomeNotice asks CompleteJobs to record a completion notice with the
// outcome. It is ignored for an outcome that is not final (a retry).
type OutcomeNotice struct {
	// Attempt is jobs.attempt once the outcome is written.
	Attempt int
	// Recipients are the addresses, comma-separated.
	Recipients  string
	Attachments []models.NotificationAttachment
}

// RecoverNodeParams names a node whose previous process died.
type RecoverNodeParams struct {
	NodeID string
	Now    time.Time
	// UnlessAlive makes the recovery a no-op when the node's row says
	// alive, checked under a lock of that row in the recovery's own
	// transaction: a reaper that found the node not alive may run just as
	// it restarts under the same id, registers and claims, and must not
	// take the new process's jobs for the old one's. A node recovering its
	// own previous run leaves it false.
	UnlessAlive bool
}

// RecoverNodeResult counts what RecoverNode did.
type RecoverNodeResult struct {
	Released  []int64 // queued → pending, attempt unchanged
	Recovered []int64 // running/paused → pending, the attempt given back (requests_recovery)
	Retried   []int64 // running/paused → pending for another attempt
	Failed    []int64 // running/paused with no attempt left → failed
	Stopped   []int64 // running/paused with control = stop → stopped
}

// LimitedJob is a due job a limit held back in a claim.
type LimitedJob struct {
	ID int64
	// Kind is one of the Limit* values, for metrics.
	Kind string
	// Reason says which limit, for the job's log.
	Reason string
}

// The kinds of limit that hold a job back.
const (
	LimitQueue      = "queue_max_running"
	LimitDefinition = "definition_max_running"
	LimitPaused     = "queue_paused"
	LimitRate       = "queue_rate"
	LimitInvalid    = "invalid"
	LimitPlacement  = "placement"
	// LimitDefinitionRate: the definition's own rate limit.
	LimitDefinitionRate = "definition_rate"
)
