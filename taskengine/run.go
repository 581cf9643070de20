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

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/metrics"
	"github.com/chimesched/chime/models"
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
	// handBack cancels the run with errHandedBack (see executor.handBack).
	handBack context.CancelCauseFunc
}

// killer is implemented by tasks that can end what they started at once
// (tasks/shell: SIGKILL to the process group). Stop calls Kill on runs that
// did not end within the shutdown grace after being canceled, so nothing a
// job started outlives the engine.
type killer interface{ Kill() bool }

// startedLayout formats a start time in a retry's log line.
const startedLayout = "2006-01-02T15:04:05.000Z07:00"

// onCompleteTimeout bounds OnComplete (notification, clean-up), which
// runs after Execute and may not hang a worker forever.
const onCompleteTimeout = 30 * time.Second

// PanicError is a panic recovered from a task, with the stack where it happened.
type PanicError struct {
	Value any
	Stack []byte
}

func (p *PanicError) Error() string { return fmt.Sprintf("task panicked: %v", p.Value) }

func (x *executor) newJob(cj *chimedb.ClaimedJob) *tasks.Job {
	var schedID int64
	if cj.ScheduleID != nil {
		schedID = *cj.ScheduleID
	}
	attempt := cj.Attempt + 1
	if cj.Started {
		attempt = cj.Attempt // the claim has counted it
	}
	job := &tasks.Job{
		ID:           cj.ID,
		ScheduleID:   schedID,
		DefinitionID: cj.JobDefinitionID,
		ScheduleName: cj.ScheduleName,
		NodeID:       x.cfg.NodeID,
		ScheduledAt:  cj.ScheduledAt,
		Attempt:      attempt,
		MaxAttempts:  cj.EffectiveMaxAttempts(),
		Snoozes:      cj.Snoozes,
		ShardIndex:   derefInt(cj.ShardIndex),
		ShardTotal:   derefInt(cj.ShardTotal),
		Params:       json.RawMessage(cj.EffectiveParams()),
		Notifier:     &handoff{},
		Clock:        x.cfg.Clock,
		// What x.jobLog.WithFields would build, without its copy of the
		// map and its look at each value's type: a fire hands off
		// a thousand jobs at once.
		Logger: &logrus.Entry{Logger: x.jobLog, Data: logrus.Fields{
			fieldJobID: cj.ID, fieldScheduleID: schedID, fieldNodeID: x.cfg.NodeID,
		}},
	}
	if d := cj.Definition; d != nil {
		job.DefinitionName = d.Name
		job.TaskType = d.TaskType
		job.Notify = tasks.NotifySpec{On: string(d.NotifyOn), Emails: splitEmails(d.NotifyEmails)}
	}
	if cj.RunID != nil {
		job.RunID = *cj.RunID
		if cj.StepID != nil {
			job.StepID = *cj.StepID
		}
		if in, err := runInputs(cj); err == nil {
			job.Step, job.RunParams = in.Step, json.RawMessage(in.Params)
			for name, r := range in.Upstream {
				if job.Upstream == nil {
					job.Upstream = make(map[string]tasks.StepResult, len(in.Upstream))
				}
				job.Upstream[name] = tasks.StepResult{State: string(r.State), JobID: r.JobID, Result: r.Result, Error: r.Error}
			}
		}
	}
	return job
}

// runInputs decodes a workflow step's jobs.run_inputs. A document chime
// did not write (plain SQL) that does not decode fails the job before it
// starts (see prepare), rather than run a step without its inputs.
func runInputs(cj *chimedb.ClaimedJob) (*models.RunInputs, error) {
	in := &models.RunInputs{}
	if len(cj.RunInputs) == 0 {
		return in, nil
	}
	if err := json.Unmarshal(cj.RunInputs, in); err != nil {
		return nil, fmt.Errorf("jobs.run_inputs is not a run's inputs: %w", err)
	}
	return in, nil
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

// claimedRun is a claimed job on its way to a worker, with what prepare
// checked of its definition.
type claimedRun struct {
	exec *execRun // the executor's run that took it
	cj   *chimedb.ClaimedJob
	job  *tasks.Job
	task tasks.Task
	// ctx is the run's context from tasks.Prepare; cancel ends it.
	ctx    context.Context
	cancel context.CancelFunc
	// timeout and backoff are the definition's timeout_seconds and
	// retry_backoff_seconds, through their models.Bound.
	timeout, backoff time.Duration
	// since is when it began to wait in the backlog (engine clock).
	since time.Time
}

// runJob drives one claimed job whose OnQueue has returned (see enqueue)
// through the rest of its lifecycle on a pool worker: running → Execute
// under the active timeout → OnComplete → outcome, and returns the status
// recorded. The job's time on this node ends with its caller (work), once
// the worker is free again or has taken the next job.
func (x *executor) runJob(cr *claimedRun) (status models.JobStatus) {
	cj, job := cr.cj, cr.job
	status = released
	defer cr.cancel()
	dbStartedAt, ok := x.begin(cr.exec, cj, job)
	if !ok {
		return status
	}
	// Secrets are read here, on the worker, once the job runs: their values
	// live in this run's memory only. Before the run is registered, so
	// control never sees the job's logger change.
	masker, execErr := x.resolveSecrets(cr.ctx, job)
	runCtx, handBack := context.WithCancelCause(cr.ctx)
	defer handBack(nil)
	ar := &activeRun{task: cr.task, job: job, handBack: handBack}
	x.mu.Lock()
	x.runs[job.ID] = ar
	x.mu.Unlock()
	defer func() {
		x.mu.Lock()
		if x.runs[job.ID] == ar {
			delete(x.runs, job.ID)
		}
		x.mu.Unlock()
	}()
	startedAt := x.cfg.Clock.Now()
	metrics.JobStartLateness.Observe(startedAt.Sub(job.ScheduledAt).Seconds())
	timeout := cr.timeout
	var cause error
	if execErr == nil {
		execErr, cause = x.execute(runCtx, ar, timeout)
	}
	execErr = maskError(masker, execErr)
	finishedAt := x.cfg.Clock.Now()
	metrics.JobDuration.Observe(finishedAt.Sub(startedAt).Seconds())

	log := job.Log()
	if x.run(job.ID) != ar {
		// The job was recovered while this run went on (this node was
		// cut off long enough to be declared dead) and claimed again
		// here: the row, on this node and running, is the rerun's now,
		// and the database's guard (node_id, status) cannot tell the two
		// runs apart. This run's outcome is dropped; the rerun's stands.
		log.Warnf("this run's outcome is not recorded: the job was recovered during it and is running again on node %s", x.cfg.NodeID)
		return status
	}
	if ar.paused.Load() && errors.Is(cause, errShutdown) {
		log.Warnf("pause lost: the job was paused when node %s stopped; a retry runs unpaused (pause it again if needed)", x.cfg.NodeID)
	}
	var pe *PanicError
	if errors.As(execErr, &pe) {
		log.Errorf("%v\n%s", pe.Value, pe.Stack)
	}
	v := classify(execErr, cause, ar.stopRequested.Load(), timeout, job.Snoozes)
	res := tasks.Result{Status: v.resultStatus(), Err: v.err, Output: masker.Mask(job.Result()), StartedAt: startedAt, FinishedAt: finishedAt,
		Retrying: v.outcome == models.OutcomeSnoozed || (v.status == models.JobFailed && v.outcome == models.OutcomeNone && job.Attempt < job.MaxAttempts)}
	x.onComplete(cr.ctx, cr.task, job, res)
	return x.complete(job, v, res.Output, finishedAt, dbStartedAt, cr.backoff, errors.Is(cause, errShutdown))
}

// begin moves a job to running, unless the claim already has, and says
// when it started as the row has it; false when the job is not to run
// (its start failed, or the row is no longer ours), and its time here is
// over.
func (x *executor) begin(r *execRun, cj *chimedb.ClaimedJob, job *tasks.Job) (dbStartedAt time.Time, ok bool) {
	if cj.Started {
		// The claim wrote running: no start to wait for. A stop asked
		// since is seen by the controller once the run is registered, as
		// for any running job.
		dbStartedAt = *cj.StartedAt
	} else {
		attempt, at, err := x.starter.start(job.ID, cj.Attempt)
		if err != nil {
			job.Log().WithError(err).Error("could not mark the job running; releasing it")
			x.releaseUnstarted(r, job, at)
			return time.Time{}, false
		}
		if attempt == 0 {
			// Canceled or taken over between claim and start: not ours to run.
			x.log.WithField(fieldJobID, job.ID).Info("job changed before it started; not running it")
			return time.Time{}, false
		}
		job.Attempt, dbStartedAt = attempt, at
	}
	// A first attempt's start is in the row (started_at, attempt, node_id)
	// and needs no log row; a retry's or a recovered job's is logged, since
	// the row keeps only the latest attempt and the story is in the log.
	if job.Attempt > 1 || cj.Recoveries > 0 {
		job.Log().Infof("running: attempt %d of %d", job.Attempt, job.MaxAttempts)
	}
	return dbStartedAt, true
}

// execute calls Execute under the definition's timeout, which does not
// count paused time, and returns its error and the cause of its context.
func (x *executor) execute(runCtx context.Context, ar *activeRun, timeout time.Duration) (execErr, cause error) {
	execCtx, cancelExec := tasks.WithActiveTimeout(runCtx, ar.job, timeout)
	defer cancelExec()
	// A timeout also calls Stop: a task that does not watch ctx (a child
	// process, say) is told to stop the way an admin's stop would.
	stopOnTimeout := context.AfterFunc(execCtx, func() {
		if errors.Is(context.Cause(execCtx), tasks.ErrTimeout) {
			_ = safeBool(ar.task.Stop)
		}
	})
	x.signals.started.Signal(ar.job.ID)
	x.herd.starting()
	execErr = safeCall(func() error { return ar.task.Execute(execCtx, ar.job) })
	stopOnTimeout()
	return execErr, context.Cause(execCtx)
}

// onComplete calls the task's OnComplete, bounded by onCompleteTimeout on
// the engine's clock (its context's cause is then DeadlineExceeded); its
// error does not change the outcome.
func (x *executor) onComplete(runCtx context.Context, task tasks.Task, job *tasks.Job, res tasks.Result) {
	cctx, cancelC := context.WithCancelCause(context.WithoutCancel(runCtx))
	defer cancelC(context.Canceled)
	t := x.cfg.Clock.AfterFunc(onCompleteTimeout, func() { cancelC(context.DeadlineExceeded) })
	defer t.Stop()
	if err := safeCall(func() error { return task.OnComplete(cctx, job, res) }); err != nil {
		job.Log().WithError(err).Warn("on_complete failed; the outcome stands")
	}
}

// verdict is how a run ended, as the engine records it.
type verdict struct {
	// status is succeeded, failed, stopped or canceled, or pending for a
	// snooze.
	status  models.JobStatus
	outcome models.JobOutcome // the typed outcome the task chose
	err     error             // what to record in jobs.error
	snooze  time.Duration     // with outcome snoozed: due again after this
	// handBack: a draining node cut the run off; it goes back to pending
	// at once with its attempt given back.
	handBack bool
}

// resultStatus is the tasks.Result status of v.
func (v verdict) resultStatus() string {
	if v.outcome == models.OutcomeSnoozed {
		return tasks.StatusSnoozed
	}
	return string(v.status)
}

// classify turns how Execute ended into the run's verdict. A stop asked
// for wins; then the typed outcome the task chose (tasks.SkipRetry,
// Snooze, Cancel), so that a task may say what a timeout means to it; a
// snooze past tasks.MaxSnoozes (snoozes is the job's count so far) is a
// failed attempt.
func classify(err, cause error, stopRequested bool, timeout time.Duration, snoozes int) verdict {
	var (
		skip   *tasks.SkipRetryError
		cancel *tasks.CancelError
		snooze *tasks.SnoozeError
	)
	switch {
	case err == nil:
		return verdict{status: models.JobSucceeded}
	case stopRequested || errors.Is(cause, tasks.ErrStopped):
		return verdict{status: models.JobStopped, err: err}
	case errors.As(err, &skip):
		return verdict{status: models.JobFailed, outcome: models.OutcomeSkipRetry, err: err}
	case errors.As(err, &cancel):
		return verdict{status: models.JobCanceled, outcome: models.OutcomeCanceled, err: err}
	case errors.As(err, &snooze) && snoozes >= tasks.MaxSnoozes:
		return verdict{status: models.JobFailed, err: fmt.Errorf(
			"snoozed %d times already, the most a job may (tasks.MaxSnoozes); this snooze counts as a failed attempt: %w", snoozes, err)}
	case errors.As(err, &snooze):
		// Snooze clamps its delay; a SnoozeError built by hand may not.
		d := min(max(snooze.Delay, 0), tasks.MaxSnoozeDelay)
		return verdict{status: models.JobPending, outcome: models.OutcomeSnoozed, snooze: d}
	case errors.Is(cause, tasks.ErrTimeout):
		return verdict{status: models.JobFailed, err: fmt.Errorf("timeout: still running after %v of active time: %w", timeout, err)}
	case errors.Is(cause, errShutdown):
		return verdict{status: models.JobFailed, err: fmt.Errorf("interrupted: %w: %w", errShutdown, err)}
	case errors.Is(cause, errHandedBack):
		return verdict{status: models.JobPending, handBack: true, err: fmt.Errorf("%w: %w", errHandedBack, err)}
	}
	return verdict{status: models.JobFailed, err: err}
}

// complete hands the outcome to the completer and returns the status it
// records. A failed attempt with attempts left goes back to pending, due
// after the backoff (at once when shutdown cut it off: the job did nothing
// wrong); a snoozed one, due after its snooze, with its attempt given back.
func (x *executor) complete(job *tasks.Job, v verdict, output string, at, startedAt time.Time, backoff time.Duration, interrupted bool) models.JobStatus {
	c := completion{log: job.Log(), status: v.status}
	c.out = chimedb.JobOutcome{ID: job.ID, RunID: job.RunID, StepID: job.StepID, Status: v.status, Outcome: v.outcome, FinishedAt: at}
	if output != "" {
		c.out.Result = &output
	}
	switch v.status {
	case models.JobSucceeded:
		// Said in the node's log only: the row's columns hold all of it,
		// and the store derives the job's last log line from them
		// (models.SucceededLine) instead of a job_logs row per job.
		c.level, c.appOnly = logrus.InfoLevel, true
		c.succeeded, c.attempt, c.took = true, job.Attempt, at.Sub(job.ScheduledAt)
	case models.JobStopped:
		c.level, c.msg = logrus.WarnLevel, fmt.Sprintf("stopped: %v", v.err)
	case models.JobCanceled:
		c.level, c.msg = logrus.WarnLevel, fmt.Sprintf("canceled by the task, not retried (attempt %d of %d): %v", job.Attempt, job.MaxAttempts, v.err)
	case models.JobPending:
		if v.handBack {
			c.out.RunAt, c.out.HandBack = at, true
			c.level, c.msg = logrus.WarnLevel, fmt.Sprintf("handed back to pending: node %s is draining and its drain_timeout is over; attempt %d not used",
				x.cfg.NodeID, job.Attempt)
			c.status = "handed_back"
			break
		}
		c.out.RunAt = at.Add(v.snooze)
		c.level, c.msg = logrus.InfoLevel, fmt.Sprintf("snoozed: runs again in %v; attempt %d not used (snooze %d of at most %d)",
			v.snooze, job.Attempt, job.Snoozes+1, tasks.MaxSnoozes)
		c.status = "snoozed"
	case models.JobFailed:
		x.failed(&c, job, v, at, startedAt, backoff, interrupted)
	}
	if v.err != nil {
		s := v.err.Error()
		c.out.Error = &s
	}
	if c.out.Status != models.JobPending && handedOff(job) {
		c.out.Notice = outcomeNotice(job, c.out.Status, job.Attempt, true)
	}
	x.completer.add(c)
	return c.out.Status
}

// failed fills c for a failed attempt: a retry while attempts are left,
// unless the task said SkipRetry, else the job's failure.
func (x *executor) failed(c *completion, job *tasks.Job, v verdict, at, startedAt time.Time, backoff time.Duration, interrupted bool) {
	switch {
	case errors.As(v.err, new(*secretRefError)):
		c.level, c.msg = logrus.ErrorLevel, fmt.Sprintf("failed (attempt %d of %d): %v", job.Attempt, job.MaxAttempts, v.err)
	case v.outcome == models.OutcomeSkipRetry:
		c.level, c.msg = logrus.ErrorLevel, fmt.Sprintf("failed (attempt %d of %d), not retried as the task asked: %v", job.Attempt, job.MaxAttempts, v.err)
	case job.Attempt < job.MaxAttempts:
		var delay time.Duration
		if !interrupted {
			delay = retryBackoff(backoff, job.Attempt, x.cfg.MaxBackoff)
		}
		c.out.Status = models.JobPending
		c.out.RunAt = at.Add(delay)
		// The next attempt overwrites started_at: say here when this one began.
		c.level, c.msg = logrus.WarnLevel, fmt.Sprintf("attempt %d of %d failed: %v; retry in %v; this attempt started at %s",
			job.Attempt, job.MaxAttempts, v.err, delay.Round(time.Millisecond), startedAt.UTC().Format(startedLayout))
		c.status = "retry"
	default:
		c.level, c.msg = logrus.ErrorLevel, fmt.Sprintf("failed (attempt %d of %d): %v", job.Attempt, job.MaxAttempts, v.err)
	}
}

// finishUnstarted fails a claimed job that never started.
func (x *executor) finishUnstarted(job *tasks.Job, err error) {
	s := err.Error()
	x.completer.add(completion{
		log: job.Log(), status: models.JobFailed, level: logrus.ErrorLevel, msg: "failed before starting: " + s,
		out: chimedb.JobOutcome{ID: job.ID, RunID: job.RunID, StepID: job.StepID, Status: models.JobFailed, FinishedAt: x.cfg.Clock.Now(), Error: &s,
			// The row's attempt is unchanged: the job never started.
			Notice: outcomeNotice(job, models.JobFailed, job.Attempt-1, false)},
	})
}

// release gives a claimed job that never began back to pending without
// using an attempt: a queued one, or (cj.Started) one the claim moved
// straight to running.
func (x *executor) release(r *execRun, job *tasks.Job, cj *chimedb.ClaimedJob, reason string) {
	p := &chimedb.ReleaseJobsParams{NodeID: x.cfg.NodeID, IDs: []int64{job.ID}, Now: chimedb.DBTime(x.cfg.Clock.Now()), Reason: reason}
	if cj != nil && cj.Started {
		p.Started, p.StartedAt = true, *cj.StartedAt
	}
	if _, err := x.st.ReleaseJobs(r.db, p); err != nil {
		x.log.WithError(err).WithField(fieldJobID, job.ID).Error("releasing the job failed; it stays queued until this node restarts")
	}
}

// releaseUnstarted gives back a job whose start failed, until the
// database takes it or the engine's database context ends. Its start
// failed only as far as this node knows: the UPDATE may have committed
// and its answer been lost (the database went away meanwhile), so the row
// is released as queued and as started at startedAt (the starter writes
// one started_at for all its tries). A job left either way on a node that
// stays alive is never run and never recovered: its heartbeat_at is kept
// fresh with the node's other running jobs (TestDatabaseOutage found
// three so, 20 s after MariaDB came back).
func (x *executor) releaseUnstarted(r *execRun, job *tasks.Job, startedAt time.Time) {
	const reason = "released to pending: marking it running failed"
	queued := &chimedb.ReleaseJobsParams{NodeID: x.cfg.NodeID, IDs: []int64{job.ID}, Now: chimedb.DBTime(x.cfg.Clock.Now()), Reason: reason}
	started := *queued
	started.Started, started.StartedAt = true, startedAt
	for _, p := range []*chimedb.ReleaseJobsParams{queued, &started} {
		for attempt := 1; ; attempt++ {
			_, err := x.st.ReleaseJobs(r.db, p)
			if err == nil {
				break
			}
			if r.db.Err() != nil {
				x.log.WithError(err).WithField(fieldJobID, job.ID).Error("releasing the job failed; it stays with this node until it restarts")
				return
			}
			x.log.WithError(err).WithField(fieldJobID, job.ID).Warn("releasing the job failed; retrying")
			sleepCtx(r.db, x.cfg.Clock, min(time.Duration(attempt)*200*time.Millisecond, 5*time.Second))
		}
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

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
