package taskengine

import (
	"context"
	"errors"
	"fmt"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/tasks"
)

// errOnQueueTimeout is the cause of an OnQueue context that ran out of
// Config.OnQueueTimeout.
var errOnQueueTimeout = errors.New("taskengine: on_queue timed out")

// errQueueClosed is the cause of an OnQueue context ended by Stop.
var errQueueClosed = errors.New("taskengine: node shutting down before the job started")

// enqueue takes one claimed job from the claim to a pool worker: it builds
// the task, calls Prepare and OnQueue, and only when OnQueue has accepted
// the job submits the run to the pool. This is the paper's onQueue ("the
// job enters the queue") and what tasks.Task promises: OnQueue runs before
// the job enters the pool, so a slow OnQueue never holds a pool worker and
// an OnQueue error fails the job without ever taking one.
//
// Each claimed job gets its own enqueue goroutine, outside the pool: one
// plugin's slow OnQueue holds up neither the claim loop nor the other jobs
// of its claim. The goroutine holds the worker its claim reserved (see
// pollLoop), so the jobs in OnQueue and in the pool together never exceed
// PoolSize, and Submit finds a free worker.
func (e *Engine) enqueue(cj *chimedb.ClaimedJob, job *tasks.Job) {
	def := cj.Definition
	if cj.LoadErr != nil {
		// The claim committed but its definition could not be read: give
		// the job back now, without using an attempt, rather than leave
		// it queued until the reconciler frees it.
		job.Log().WithError(cj.LoadErr).Warn("could not read the job's definition after claiming it")
		e.release(job, "released to pending: reading its definition after the claim failed: "+cj.LoadErr.Error())
		e.runDone()
		return
	}
	if def == nil {
		e.finishUnstarted(job, fmt.Errorf("job definition %d does not exist", cj.JobDefinitionID))
		e.runDone()
		return
	}
	// Seconds out of their models.Bound (a row an admin wrote by SQL), or
	// a task type not registered: the registry's error names the type and
	// the registered kinds.
	timeout, backoff, err := def.Durations()
	var task tasks.Task
	if err == nil {
		task, err = e.cfg.Registry.New(def.TaskType)
	}
	if err != nil {
		e.finishUnstarted(job, fmt.Errorf("cannot run definition %q: %w", def.Name, err))
		e.runDone()
		return
	}
	r := &claimedRun{cj: cj, job: job, task: task, timeout: timeout, backoff: backoff}
	r.ctx, r.cancel = tasks.Prepare(e.workCtx, task, job)
	if cj.Started {
		// A tasks.QueueFree task: its OnQueue does nothing, and the claim
		// has already moved the job to running.
		e.submitStarted(r)
		return
	}
	returned, err := e.onQueue(r.ctx, task, job)
	// The worker stays reserved until OnQueue has returned, even when the
	// engine gave up waiting for it: a plugin that hangs there keeps a
	// worker's worth of claims away, as it would have on a worker, rather
	// than letting the node claim without bound.
	slotHeld := returned != nil
	done := func() {
		if slotHeld {
			e.runWG.Done()
			go func() { <-returned; e.freeSlot() }()
			return
		}
		e.runDone()
	}
	switch {
	case e.queueCtx.Err() != nil:
		// As before Stop: a job that has not started goes back to pending.
		r.cancel()
		e.release(job, "released to pending: node shutting down before the job started")
		done()
		return
	case err != nil:
		r.cancel()
		var pe *PanicError
		if errors.As(err, &pe) {
			job.Log().Errorf("%v\n%s", pe.Value, pe.Stack)
		}
		e.finishUnstarted(job, fmt.Errorf("on_queue: %w", err))
		done()
		return
	}
	if err := e.pool.Submit(func() { e.run(r) }); err != nil {
		// Only a released pool refuses, and Stop waits for this goroutine
		// before it releases the pool.
		r.cancel()
		e.log.WithError(err).WithField(fieldJobID, cj.ID).Error("pool refused a claimed job; releasing it")
		e.release(job, "released to pending: the worker pool refused it")
		e.runDone()
	}
}

// submitStarted hands a job the claim moved straight to running to the
// pool. Until a worker runs it, it has not begun: when Stop has begun or
// the pool refuses it, it goes back to pending with its attempt given back,
// as a queued job would.
func (e *Engine) submitStarted(r *claimedRun) {
	if e.queueCtx.Err() != nil {
		r.cancel()
		e.releaseClaimed(r.job, r.cj, "released to pending: node shutting down before the job started")
		e.runDone()
		return
	}
	if err := e.pool.Submit(func() { e.run(r) }); err != nil {
		r.cancel()
		e.log.WithError(err).WithField(fieldJobID, r.cj.ID).Error("pool refused a claimed job; releasing it")
		e.releaseClaimed(r.job, r.cj, "released to pending: the worker pool refused it")
		e.runDone()
	}
}

// onQueue calls task.OnQueue under a context that ends at OnQueueTimeout
// or when Stop begins. An OnQueue that ignores its context is not waited
// for past that: onQueue returns a channel closed when OnQueue does return
// and the context's cause; the channel is nil when OnQueue has returned. A
// panic is returned as a *PanicError.
func (e *Engine) onQueue(runCtx context.Context, task tasks.Task, job *tasks.Job) (returned <-chan struct{}, err error) {
	qctx, cancelQ := context.WithCancelCause(runCtx)
	defer cancelQ(context.Canceled)
	stopQ := context.AfterFunc(e.queueCtx, func() { cancelQ(errQueueClosed) })
	defer stopQ()
	timer := e.cfg.Clock.AfterFunc(e.cfg.OnQueueTimeout, func() { cancelQ(errOnQueueTimeout) })
	defer timer.Stop()

	// qerr is read only after done is closed: an abandoned OnQueue may
	// still write it after onQueue has returned.
	var qerr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		qerr = safeCall(func() error { return task.OnQueue(qctx, job) })
	}()
	select {
	case <-done:
	case <-qctx.Done():
		select {
		case <-done: // it heeded its context at once
		default:
			cause := context.Cause(qctx)
			job.Log().Warnf("on_queue has not returned after its context ended (%v); no longer waiting for it", cause)
			if errors.Is(cause, errOnQueueTimeout) {
				return done, fmt.Errorf("did not return within %v", e.cfg.OnQueueTimeout)
			}
			return done, cause
		}
	}
	if qerr != nil && errors.Is(context.Cause(qctx), errOnQueueTimeout) {
		qerr = fmt.Errorf("did not return within %v: %w", e.cfg.OnQueueTimeout, qerr)
	}
	return nil, qerr
}
