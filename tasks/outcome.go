package tasks

import (
	"fmt"
	"time"
)

// Typed outcomes. Execute returns one of these (wrapped or not: the engine
// finds it with errors.As) to say more than "failed":
//
//   - SkipRetry(err): the job fails now, even with attempts left, because
//     another try cannot help (bad input, a refused request);
//   - Snooze(d): the job goes back to pending, due in d, without using an
//     attempt ("not yet": a file not there, a rate limit);
//   - Cancel(err): the job ends canceled, with no retry: it should not run
//     at all any more (the thing it was for is gone).
//
// The jobs row records which: jobs.outcome is skip_retry, snoozed or
// canceled (and '' for a run that ended otherwise); jobs.snoozes counts
// the snoozes. A Stop asked of the job wins over any of them.

// MaxSnoozes caps the snoozes of one job (jobs.snoozes). Past it a snooze
// counts as a failed attempt, so a task that always snoozes ends when its
// attempts do instead of looping forever.
const MaxSnoozes = 100

// MaxSnoozeDelay caps the delay of one Snooze; a longer one is cut to it.
const MaxSnoozeDelay = 366 * 24 * time.Hour

// SkipRetryError fails a job without retrying it. Make one with SkipRetry.
type SkipRetryError struct{ Err error }

// SkipRetry wraps err so the job fails now, whatever attempts it has left.
func SkipRetry(err error) error { return &SkipRetryError{Err: err} }

func (e *SkipRetryError) Error() string { return "no retry: " + errText(e.Err) }
func (e *SkipRetryError) Unwrap() error { return e.Err }

// SnoozeError sends a job back to pending without using an attempt. Make
// one with Snooze.
type SnoozeError struct{ Delay time.Duration }

// Snooze asks for the job to run again after d (at once when d <= 0, at
// most MaxSnoozeDelay), without using an attempt. The run's result is not
// kept, and no notice is sent: the job has not finished.
func Snooze(d time.Duration) error { return &SnoozeError{Delay: min(max(d, 0), MaxSnoozeDelay)} }

func (e *SnoozeError) Error() string { return fmt.Sprintf("snoozed for %v", e.Delay) }

// CancelError ends a job canceled. Make one with Cancel.
type CancelError struct{ Err error }

// Cancel wraps err so the job ends canceled, with no retry. notify_on
// counts a cancel as a failure.
func Cancel(err error) error { return &CancelError{Err: err} }

func (e *CancelError) Error() string { return "canceled by the task: " + errText(e.Err) }
func (e *CancelError) Unwrap() error { return e.Err }

func errText(err error) string {
	if err == nil {
		return "no reason given"
	}
	return err.Error()
}
