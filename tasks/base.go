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
//   - Pause and Resume gate Job.Checkpoint and the active timeout, and
//     Pause refuses once the task has called BeginUnpausable or
//     RefusePauses;
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
	// refusal, once set, is what Pause logs when it refuses; "" while the
	// run may still be paused.
	refusal string
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
// It reports whether the job was running (false if already paused). After
// BeginUnpausable or RefusePauses it reports false and logs their refusal
// as a warning.
func (b *Base) Pause() bool {
	b.mu.Lock()
	job, refusal := b.job, b.refusal
	// Under b.mu, so that BeginUnpausable sees either this pause or none.
	paused := job != nil && refusal == "" && job.pause()
	b.mu.Unlock()
	if refusal != "" && job != nil {
		job.Log().Warn(refusal)
	}
	return paused
}

// Resume releases a paused job. It reports whether the job was paused.
func (b *Base) Resume() bool {
	job, _ := b.state()
	return job != nil && job.resume()
}

// BeginUnpausable is for a task whose work, once started, cannot be held
// midway: one HTTP request, one SMTP send, one upload. Such a task can
// still honour a pause until that work starts, and must refuse one after,
// or a job shown as paused would go on working. Call BeginUnpausable right
// before the work starts: it waits out a pause (at job.Checkpoint) and,
// once the job is not paused, closes the run to pauses in the same step as
// Pause decides, so no pause slips in between. From then on Pause reports
// false and logs refusal as a warning; write it to say why, for the job's
// log ("upload: cannot pause: the file is being sent (stop cancels it)").
// Stop is not affected: cancel the work through ctx.
//
// It returns ctx.Err() if ctx ends first, with pauses left as they were;
// Execute should then return. Defer RefusePauses with the same refusal at
// the top of Execute so that a Pause after Execute returned, by whatever
// path, is refused too.
func (b *Base) BeginUnpausable(ctx context.Context, job *Job, refusal string) error {
	for {
		if err := job.Checkpoint(ctx); err != nil {
			return err
		}
		b.mu.Lock()
		if !job.Paused() {
			b.refuseLocked(refusal)
			b.mu.Unlock()
			return nil
		}
		b.mu.Unlock() // paused between Checkpoint and here: wait again
	}
}

// RefusePauses closes the run to pauses at once, without waiting: Pause
// reports false from then on and logs refusal (the first one given, when
// called again). A pause already in place stays until Resume.
func (b *Base) RefusePauses(refusal string) {
	b.mu.Lock()
	b.refuseLocked(refusal)
	b.mu.Unlock()
}

func (b *Base) refuseLocked(refusal string) {
	if refusal == "" {
		refusal = "tasks: cannot pause now"
	}
	if b.refusal == "" {
		b.refusal = refusal
	}
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
