package models

import "time"

// The types the notification outbox's store and its sender (notify) share:
// notify never imports the store, so what passes between them lives here.

// NotificationClaim asks store.ClaimNotifications for due notices.
type NotificationClaim struct {
	NodeID string
	Limit  int
	// Settle leaves a notice alone for this long after it was recorded, so
	// that its job's last log lines, written in batches after the outcome,
	// are in the table when the email quotes them.
	Settle time.Duration
	// Lease is how long a claimed notice is this node's: if it has not
	// reported by then (it died mid-send), another node may try it.
	Lease time.Duration
	// MaxAge fails, instead of sending, notices recorded longer ago than
	// this (0: no limit): an email about a job from days ago, sent once SMTP
	// finally works, would mislead more than inform.
	MaxAge time.Duration
}

// NotificationDelivery is a claimed notice with what its email says.
type NotificationDelivery struct {
	Notification
	// Job is nil when the job is gone (deleted by an admin or retention).
	Job            *Job
	DefinitionName string
	TaskType       string
	ScheduleName   string
	// MaxAttempts is the job's effective max_attempts.
	MaxAttempts int
	// Run is set for a run's notice (Notification.RunID): the run as it is
	// now, its workflow's name, and each step's state and job; Job is nil.
	Run          *WorkflowRun
	WorkflowName string
	RunSteps     []RunStepLine
}

// RunStepLine is one step of a run as its notice shows it.
type RunStepLine struct {
	Name  string
	State StepState
	JobID int64 // 0: no job
	Error string
}

// NotificationResult is how one claimed try ended.
type NotificationResult struct {
	ID       int64
	JobID    int64
	Attempts int // as claimed: the report applies only while the row has it
	Sent     bool
	// Error is why the try failed; with RetryIn > 0 the notice is tried
	// again after that long, else it is failed for good.
	Error   string
	RetryIn time.Duration
	// JobLog, when set, is written to the job's log with the report.
	JobLog string
}
