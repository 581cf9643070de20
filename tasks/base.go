package tasks

import (
	"context"
	"fmt"
	"sync"
)

// Base gives a Task working defaults; embed it (by value) in the task
// struct and use the struct by pointer:
//
//   - Stop cancels the Execute context with cause ErrStopped;
//   - Pause and Resume gate Job.Checkpoint and the active timeout;
//   - OnQueue does nothing;
//   - OnComplete hands the Result to job.Notifier when job.Notify wants it
//     (under the engine, that records the notice in the outbox).
//
// Base reaches the job and the cancel function through Prepare, which the
// engine calls before OnQueue. Before Prepare, Stop, Pause and Resume
// return false.
type Base struct {
	mu     sync.Mutex
	job    *Job
	cancel context.CancelCauseFunc
}

// baser is satisfied by *Base and, through promotion, by any task that
// embeds Base; its unexported method keeps other types from faking it.
type baser interface{ tasksBase() *Base }

func (b *Base) tasksBase() *Base { return b }

// Prepare derives the context a run uses and, when t embeds Base, attaches
// job and the cancel function to it. The engine calls it before OnQueue and
// calls the returned CancelFunc after OnComplete.
func Prepare(ctx context.Context, t Task, job *Job) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	if b, ok := t.(baser); ok {
		base := b.tasksBase()
		base.mu.Lock()
		base.job, base.cancel = job, cancel
		base.mu.Unlock()
	}
	return ctx, func() { cancel(context.Canceled) }
}

func (b *Base) state() (*Job, context.CancelCauseFunc) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.job, b.cancel
}

// Stop cancels the Execute context with cause ErrStopped. It reports false
// only when Prepare was never called.
func (b *Base) Stop() bool {
	_, cancel := b.state()
	if cancel == nil {
		return false
	}
	cancel(ErrStopped)
	return true
}

// Pause holds the job at its next Checkpoint and stops its timeout clock.
// It reports whether the job was running (false if already paused).
func (b *Base) Pause() bool {
	job, _ := b.state()
	return job != nil && job.pause()
}

// Resume releases a paused job. It reports whether the job was paused.
func (b *Base) Resume() bool {
	job, _ := b.state()
	return job != nil && job.resume()
}

// OnQueue does nothing.
func (b *Base) OnQueue(context.Context, *Job) error { return nil }

// OnComplete hands the completion notice off to job.Notifier when
// job.Notify wants one for r.Status (a stopped run counts as a failure).
// Under the task engine the Notifier only marks the run: the engine records
// the notice with the job's outcome, in one transaction, and a sender mails
// it later, so a second hand-off is the same notice and this does not hold
// the pool slot.
func (b *Base) OnComplete(ctx context.Context, job *Job, r Result) error {
	if job == nil || job.Notifier == nil || r.Retrying || !job.Notify.Wants(r.Status) {
		return nil
	}
	if err := job.Notifier.Notify(ctx, job, r); err != nil {
		return fmt.Errorf("tasks: notify job %d: %w", job.ID, err)
	}
	return nil
}
