package taskengine

import (
	"time"

	"context"
	"errors"
	"fmt"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
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
// plugin's slow OnQueue holds up neither the producer nor the other jobs
// of its claim. The goroutine holds the worker its claim reserved (see
// workers), so the jobs in OnQueue and in the pool together never exceed
// PoolSize, and Submit finds a free worker.
func (x *executor) enqueue(r *execRun, cj *chimedb.ClaimedJob, job *tasks.Job) {
	cr := &claimedRun{exec: r, cj: cj, job: job}
	if !x.prepare(cr) {
		if !cj.Started {
			x.starter.withdraw()
		}
		x.undispatched(cj)
		return
	}
	cr.ctx, cr.cancel = tasks.Prepare(r.work, cr.task, job)
	if cj.Started || tasks.IsQueueFree(cr.task) {
		// A tasks.QueueFree task: its OnQueue does nothing, and the claim
		// may have moved the job to running already (a fire's backlog
		// hands such jobs off queued).
		x.submit(cr)
		return
	}
	returned, err := x.onQueue(cr)
	// The worker stays reserved until OnQueue has returned, even when the
	// engine gave up waiting for it: a plugin that hangs there keeps a
	// worker's worth of claims away, as it would have on a worker, rather
	// than letting the node claim without bound.
	done := func(status models.JobStatus) {
		x.starter.withdraw()
		if returned == nil {
			x.jobDone(job.ID, status)
			return
		}
		x.jobLeft(job.ID, status, false)
		go func() { <-returned; x.workers.release(1) }()
	}
	switch {
	case r.queue.Err() != nil:
		// As before Stop: a job that has not started goes back to pending.
		cr.cancel()
		x.release(r, job, nil, "released to pending: node shutting down before the job started")
		done(released)
	case err != nil:
		cr.cancel()
		var pe *PanicError
		if errors.As(err, &pe) {
			job.Log().Errorf("%v\n%s", pe.Value, pe.Stack)
		}
		x.finishUnstarted(job, fmt.Errorf("on_queue: %w", err))
		done(models.JobFailed)
	default:
		x.submit(cr)
	}
}

// prepare builds the job's task; false when the job cannot run, and its
// time here is over (given back or failed).
func (x *executor) prepare(cr *claimedRun) bool {
	r, cj, job, def := cr.exec, cr.cj, cr.job, cr.cj.Definition
	var err error
	switch {
	case r.queue.Err() != nil:
		x.release(r, job, cj, "released to pending: node shutting down before the job started")
		x.jobDone(job.ID, released)
		return false
	case cj.LoadErr != nil:
		// The claim committed but its definition could not be read: give
		// the job back now, without using an attempt, rather than leave
		// it queued until the reconciler frees it.
		job.Log().WithError(cj.LoadErr).Warn("could not read the job's definition after claiming it")
		x.release(r, job, cj, "released to pending: reading its definition after the claim failed: "+cj.LoadErr.Error())
		x.jobDone(job.ID, released)
		return false
	case def == nil:
		err = fmt.Errorf("job definition %d does not exist", cj.JobDefinitionID)
	default:
		// Seconds out of their models.Bound (a row an admin wrote by SQL),
		// or a task type not registered: the registry's error names the
		// type and the registered kinds.
		if cr.timeout, cr.backoff, err = def.Durations(); err == nil {
			if err = stepTimeout(cj, &cr.timeout); err == nil {
				if cr.task, err = x.cfg.Registry.New(def.TaskType); err == nil {
					return true
				}
			}
		}
		err = fmt.Errorf("cannot run definition %q: %w", def.Name, err)
	}
	x.finishUnstarted(job, err)
	x.jobDone(job.ID, models.JobFailed)
	return false
}

// submit hands a job whose OnQueue has accepted it, or that the claim
// moved straight to running, to a pool worker, or to the backlog while
// every worker is busy (see dispatch). Until a worker runs it, it has not
// begun: when Stop has begun or the pool refuses it, it goes back to
// pending with its attempt given back.
func (x *executor) submit(cr *claimedRun) {
	reason := "released to pending: node shutting down before the job started"
	if x.dispatch(cr) {
		return
	}
	if cr.exec.queue.Err() == nil {
		reason = "released to pending: the worker pool refused it"
	}
	cr.cancel()
	if !cr.cj.Started {
		x.starter.withdraw()
	}
	x.release(cr.exec, cr.job, cr.cj, reason)
	x.jobDone(cr.job.ID, released)
}

// onQueue calls task.OnQueue under a context that ends at OnQueueTimeout
// or when Stop begins. An OnQueue that ignores its context is not waited
// for past that: onQueue returns a channel closed when OnQueue does return
// and the context's cause; the channel is nil when OnQueue has returned. A
// panic is returned as a *PanicError.
func (x *executor) onQueue(cr *claimedRun) (returned <-chan struct{}, err error) {
	task, job := cr.task, cr.job
	qctx, cancelQ := context.WithCancelCause(cr.ctx)
	defer cancelQ(context.Canceled)
	stopQ := context.AfterFunc(cr.exec.queue, func() { cancelQ(errQueueClosed) })
	defer stopQ()
	timer := x.cfg.Clock.AfterFunc(x.cfg.OnQueueTimeout, func() { cancelQ(errOnQueueTimeout) })
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
				return done, fmt.Errorf("did not return within %v", x.cfg.OnQueueTimeout)
			}
			return done, cause
		}
	}
	if qerr != nil && errors.Is(context.Cause(qctx), errOnQueueTimeout) {
		qerr = fmt.Errorf("did not return within %v: %w", x.cfg.OnQueueTimeout, qerr)
	}
	return nil, qerr
}

// stepTimeout puts a workflow step's own timeout (run_inputs) in place of
// its definition's.
func stepTimeout(cj *chimedb.ClaimedJob, timeout *time.Duration) error {
	if cj.RunID == nil {
		return nil
	}
	in, err := runInputs(cj)
	if err != nil || in.TimeoutSeconds == nil {
		return err
	}
	t, err := models.TimeoutBound.Duration(int64(*in.TimeoutSeconds))
	if err != nil {
		return fmt.Errorf("the step's timeout_seconds: %w", err)
	}
	*timeout = t
	return nil
}
