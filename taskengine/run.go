package taskengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/internal/metrics"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/tasks"
)

// activeRun is a job between running and its outcome, as control sees it.
type activeRun struct {
	task tasks.Task
	job  *tasks.Job
	// stopRequested marks a Stop asked through jobs.control, so the run
	// ends as stopped whatever error the task returns on its way out.
	stopRequested atomic.Bool
	// paused is true between an accepted pause and resume: a run cut off
	// by shutdown while paused logs that the pause is not kept.
	paused atomic.Bool
}

// killer is implemented by tasks that can end what they started at once
// (tasks/shell: SIGKILL to the process group). Stop calls Kill on runs that
// did not end within the shutdown grace after being canceled, so nothing a
// job started outlives the engine.
type killer interface{ Kill() bool }

// onCompleteTimeout bounds OnComplete (notification, clean-up), which
// runs after Execute and may not hang a worker forever.
const onCompleteTimeout = 30 * time.Second

// PanicError is a panic recovered from a task, with the stack where it happened.
type PanicError struct {
	Value any
	Stack []byte
}

func (p *PanicError) Error() string { return fmt.Sprintf("task panicked: %v", p.Value) }

func (e *Engine) newJob(cj *store.ClaimedJob) *tasks.Job {
	var schedID int64
	if cj.ScheduleID != nil {
		schedID = *cj.ScheduleID
	}
	job := &tasks.Job{
		ID:           cj.ID,
		ScheduleID:   schedID,
		DefinitionID: cj.JobDefinitionID,
		ScheduleName: cj.ScheduleName,
		NodeID:       e.cfg.NodeID,
		ScheduledAt:  cj.ScheduledAt,
		Attempt:      cj.Attempt + 1,
		MaxAttempts:  cj.EffectiveMaxAttempts(),
		Params:       json.RawMessage(cj.EffectiveParams()),
		Notifier:     &handoff{},
		Clock:        e.cfg.Clock,
		Logger: e.jobLog.WithFields(logrus.Fields{
			fieldJobID: cj.ID, fieldScheduleID: schedID, fieldNodeID: e.cfg.NodeID,
		}),
	}
	if d := cj.Definition; d != nil {
		job.DefinitionName = d.Name
		job.TaskType = d.TaskType
		job.Notify = tasks.NotifySpec{On: string(d.NotifyOn), Emails: splitEmails(d.NotifyEmails)}
	}
	return job
}

func splitEmails(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// run drives one claimed job whose OnQueue has returned (see enqueue)
// through the rest of its lifecycle on a pool worker: running → Execute
// under the active timeout → OnComplete → outcome. runCtx is the run's
// context from tasks.Prepare, cancelRun ends it.
func (e *Engine) run(runCtx context.Context, cancelRun context.CancelFunc, cj *store.ClaimedJob, job *tasks.Job, task tasks.Task) {
	defer e.runDone()
	defer cancelRun()
	log := job.Log()
	def := cj.Definition

	attempt, err := e.start(job.ID, cj.Attempt)
	if err != nil {
		log.WithError(err).Error("could not mark the job running; releasing it")
		e.release(job, "released to pending: marking it running failed")
		return
	}
	if attempt == 0 {
		// Canceled or taken over between claim and start: not ours to run.
		e.log.WithField(fieldJobID, job.ID).Info("job changed before it started; not running it")
		return
	}
	job.Attempt = attempt
	startedAt := e.cfg.Clock.Now()
	metrics.JobStartLateness.Observe(startedAt.Sub(job.ScheduledAt).Seconds())
	log.Infof("running: attempt %d of %d", attempt, job.MaxAttempts)

	ar := &activeRun{task: task, job: job}
	e.mu.Lock()
	e.runs[job.ID] = ar
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.runs, job.ID)
		e.mu.Unlock()
	}()

	timeout := time.Duration(def.TimeoutSeconds) * time.Second
	execCtx, cancelExec := tasks.WithActiveTimeout(runCtx, job, timeout)
	// A timeout also calls Stop: a task that does not watch ctx (a child
	// process, say) is told to stop the way an admin's stop would.
	stopOnTimeout := context.AfterFunc(execCtx, func() {
		if errors.Is(context.Cause(execCtx), tasks.ErrTimeout) {
			_ = safeBool(task.Stop)
		}
	})
	execErr := safeCall(func() error { return task.Execute(execCtx, job) })
	stopOnTimeout()
	cause := context.Cause(execCtx)
	cancelExec()
	finishedAt := e.cfg.Clock.Now()
	metrics.JobDuration.Observe(finishedAt.Sub(startedAt).Seconds())

	if ar.paused.Load() && errors.Is(cause, errShutdown) {
		log.Warnf("pause lost: the job was paused when node %s stopped; a retry runs unpaused (pause it again if needed)", e.cfg.NodeID)
	}
	var pe *PanicError
	if errors.As(execErr, &pe) {
		log.Errorf("%v\n%s", pe.Value, pe.Stack)
	}
	status, execErr := classify(execErr, cause, ar.stopRequested.Load(), timeout)

	res := tasks.Result{Status: string(status), Err: execErr, Output: job.Result(), StartedAt: startedAt, FinishedAt: finishedAt,
		Retrying: status == models.JobFailed && job.Attempt < job.MaxAttempts}
	cctx, cancelC := context.WithTimeout(context.WithoutCancel(runCtx), onCompleteTimeout)
	if err := safeCall(func() error { return task.OnComplete(cctx, job, res) }); err != nil {
		log.WithError(err).Warn("on_complete failed; the outcome stands")
	}
	cancelC()

	backoff := time.Duration(def.RetryBackoffSeconds) * time.Second
	e.complete(job, status, execErr, res.Output, finishedAt, backoff, errors.Is(cause, errShutdown))
}

// classify turns how Execute ended into the attempt's status and the error
// to record.
func classify(err, cause error, stopRequested bool, timeout time.Duration) (models.JobStatus, error) {
	switch {
	case err == nil:
		return models.JobSucceeded, nil
	case stopRequested || errors.Is(cause, tasks.ErrStopped):
		return models.JobStopped, err
	case errors.Is(cause, tasks.ErrTimeout):
		return models.JobFailed, fmt.Errorf("timeout: still running after %v of active time: %w", timeout, err)
	case errors.Is(cause, errShutdown):
		return models.JobFailed, fmt.Errorf("interrupted: %w: %w", errShutdown, err)
	}
	return models.JobFailed, err
}

// complete hands the outcome to the completer. A failed attempt with
// attempts left goes back to pending, due after the backoff (at once when
// shutdown cut it off: the job did nothing wrong).
func (e *Engine) complete(job *tasks.Job, status models.JobStatus, err error, output string, at time.Time, backoff time.Duration, interrupted bool) {
	c := completion{log: job.Log(), status: status}
	c.out = store.JobOutcome{ID: job.ID, Status: status, FinishedAt: at}
	if output != "" {
		c.out.Result = &output
	}
	took := at.Sub(job.ScheduledAt)
	switch status {
	case models.JobSucceeded:
		c.level, c.msg = logrus.InfoLevel, fmt.Sprintf("succeeded (attempt %d, %v after scheduled_at)", job.Attempt, took.Round(time.Millisecond))
	case models.JobStopped:
		c.level, c.msg = logrus.WarnLevel, fmt.Sprintf("stopped: %v", err)
	case models.JobFailed:
		if job.Attempt < job.MaxAttempts {
			var delay time.Duration
			if !interrupted {
				delay = retryBackoff(backoff, job.Attempt, e.cfg.MaxBackoff)
			}
			c.out.Status = models.JobPending
			c.out.RunAt = at.Add(delay)
			c.level, c.msg = logrus.WarnLevel, fmt.Sprintf("attempt %d of %d failed: %v; retry in %v", job.Attempt, job.MaxAttempts, err, delay.Round(time.Millisecond))
			c.status = "retry"
		} else {
			c.level, c.msg = logrus.ErrorLevel, fmt.Sprintf("failed (attempt %d of %d): %v", job.Attempt, job.MaxAttempts, err)
		}
	}
	if err != nil {
		s := err.Error()
		c.out.Error = &s
	}
	if c.out.Status != models.JobPending && handedOff(job) {
		c.out.Notice = outcomeNotice(job, status, job.Attempt, true)
	}
	e.completer.add(c)
}

// finishUnstarted fails a job that cannot start (no definition, unknown
// task_type, OnQueue refused): retrying would not help, so it is final. No
// OnComplete runs, so the engine records the notice notify_on asks for.
func (e *Engine) finishUnstarted(job *tasks.Job, err error) {
	s := err.Error()
	e.completer.add(completion{
		log: job.Log(), status: models.JobFailed, level: logrus.ErrorLevel, msg: "failed before starting: " + s,
		out: store.JobOutcome{ID: job.ID, Status: models.JobFailed, FinishedAt: e.cfg.Clock.Now(), Error: &s,
			// The row's attempt is unchanged: the job never started.
			Notice: outcomeNotice(job, models.JobFailed, job.Attempt-1, false)},
	})
}

// release gives a queued job back to pending without using an attempt.
func (e *Engine) release(job *tasks.Job, reason string) {
	if _, err := e.st.ReleaseJobs(e.flushCtx, &store.ReleaseJobsParams{
		NodeID: e.cfg.NodeID, IDs: []int64{job.ID}, Now: e.now(), Reason: reason,
	}); err != nil {
		e.log.WithError(err).WithField(fieldJobID, job.ID).Error("releasing the job failed; it stays queued until this node restarts")
	}
}

func safeCall(fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return fn()
}

func safeBool(fn func() bool) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			ok = false
		}
	}()
	return fn()
}
