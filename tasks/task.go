package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Task is one job type. The Registry makes a fresh instance for every run,
// so a Task may keep per-run state in its fields.
//
// Execute runs on a pool goroutine; Pause, Resume and Stop are called from
// another goroutine while Execute runs and must be safe for that.
type Task interface {
	// Execute is the business logic. It returns when ctx ends.
	Execute(ctx context.Context, job *Job) error
	// Pause reports whether the task is now paused (false if it was
	// already paused or cannot pause).
	Pause() bool
	// Resume reports whether the task was resumed.
	Resume() bool
	// Stop reports whether the task is stopping; false if unsupported.
	Stop() bool
	// OnQueue runs before the job enters the pool.
	OnQueue(ctx context.Context, job *Job) error
	// OnComplete runs after Execute: notify, clean up.
	OnComplete(ctx context.Context, job *Job, r Result) error
}

// Factory makes a new Task for one run.
type Factory func() Task

// Validator is implemented by tasks that can check params without running,
// so an API can refuse a bad definition or schedule at the door. Errors name
// the offending field.
type Validator interface {
	Validate(params json.RawMessage) error
}

// Notifier delivers a completion notice. Implementations must not block the
// caller for long: the engine calls it on the job's goroutine.
type Notifier interface {
	Notify(ctx context.Context, job *Job, r Result) error
}

// Statuses a Result carries. All but StatusSnoozed are final and match the
// jobs.status column; a snoozed run leaves the job pending.
const (
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusStopped   = "stopped"
	StatusCanceled  = "canceled" // the task returned Cancel
	StatusSnoozed   = "snoozed"  // the task returned Snooze
)

// Result is the outcome of one run, as handed to OnComplete.
type Result struct {
	// Status is StatusSucceeded, StatusFailed, StatusStopped,
	// StatusCanceled or StatusSnoozed. A SkipRetry is StatusFailed with
	// Retrying false; Err still wraps the *SkipRetryError.
	Status     string
	Err        error  // nil on success
	Output     string // what the task passed to Job.SetResult
	StartedAt  time.Time
	FinishedAt time.Time
	// Retrying is true for a failed attempt that the engine will run again,
	// and for a snooze: the job's outcome is not known yet, so
	// Base.OnComplete sends no notification for it (the last run's does).
	Retrying bool
}

// Duration is how long the run took, zero if either time is unset.
func (r Result) Duration() time.Duration {
	if r.StartedAt.IsZero() || r.FinishedAt.IsZero() {
		return 0
	}
	return r.FinishedAt.Sub(r.StartedAt)
}

// Values of NotifySpec.On; they match job_definitions.notify_on.
const (
	NotifyNever   = "never"
	NotifyFailure = "failure"
	NotifySuccess = "success"
	NotifyAlways  = "always"
)

// NotifySpec says when and to whom a completion email goes.
type NotifySpec struct {
	On     string // NotifyNever (also ""), NotifyFailure, NotifySuccess, NotifyAlways
	Emails []string
}

// Wants reports whether a run ending in status should be notified. A stopped
// or canceled run counts as a failure: somebody will want to know it did
// not finish. A snooze is not an end and is never notified.
func (s NotifySpec) Wants(status string) bool {
	switch s.On {
	case NotifyAlways:
		return status != StatusSnoozed
	case NotifySuccess:
		return status == StatusSucceeded
	case NotifyFailure:
		return status == StatusFailed || status == StatusStopped || status == StatusCanceled
	default:
		return false
	}
}

// Sentinels. ErrStopped and ErrTimeout are the context causes (see
// context.Cause) of an Execute context ended by Stop or by the active
// timeout.
var (
	ErrUnknownTask = errors.New("tasks: unknown task kind")
	ErrStopped     = errors.New("tasks: job stopped")
	ErrTimeout     = errors.New("tasks: job timed out")
)

// Attachment is a file a task adds to its completion email (a CSV report,
// say) through Job.Attach.
type Attachment struct {
	Name        string
	ContentType string // e.g. "text/csv"; guessed from Name when empty
	Data        []byte
}

// ContextError is ctx.Err() with its cause: "tasks: job stopped (context
// canceled)" reads better in jobs.error than "context canceled", and
// errors.Is still finds both. It returns nil while ctx is alive.
func ContextError(ctx context.Context) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	cause := context.Cause(ctx)
	if cause == nil || errors.Is(cause, err) {
		return err
	}
	return fmt.Errorf("%w (%w)", cause, err)
}
