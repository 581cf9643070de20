// Package tasks is the plugin contract of chime: the Task interface a job
// type implements, the Base it may embed for working defaults, the Job a run
// receives, and the Registry that maps a definition's task_type to a
// factory.
//
// Plugin authors import this package and nothing else of chime. It must stay
// free of the database: it imports no gorm, no store, no engine (only logrus,
// clockwork for Job.Clock, and internal/strictjson, which decodes params and
// API requests alike). The task
// engine (taskengine) consumes it, never the other way round. Built-in tasks
// live in sub-packages (tasks/sleep, tasks/shell, tasks/httpcall,
// tasks/email) and are registered by tasks/builtin.
//
// # Writing a task
//
// Embed Base, decode params with Job.Bind, call Job.Checkpoint between units
// of work so Pause really holds the task, and return when ctx ends:
//
//	type Report struct{ tasks.Base }
//
//	func (r *Report) Execute(ctx context.Context, job *tasks.Job) error {
//		var p struct{ Rows int `json:"rows"` }
//		if err := job.Bind(&p); err != nil {
//			return err
//		}
//		for i := 0; i < p.Rows; i++ {
//			if err := job.Checkpoint(ctx); err != nil {
//				return err
//			}
//			// ... one row of work ...
//		}
//		job.SetResult("done")
//		return nil
//	}
//
//	tasks.MustRegister("report", func() tasks.Task { return &Report{} })
//
// A task that also wants its params checked before a job is ever written
// (by the API, say) implements Validator.
//
// # Outcomes
//
// A plain error from Execute fails the attempt, and the engine retries it
// while attempts remain. Return SkipRetry(err) to fail the job at once,
// Snooze(d) to run it again after d without using an attempt, or
// Cancel(err) to end it canceled; jobs.outcome records which.
//
// # Lifecycle, as the engine drives it
//
// For each claimed job the engine:
//
//  1. builds a *Job (ids, params, NotifySpec, a Logger whose hook writes
//     job_logs, the Notifier) and a fresh Task from the Registry;
//  2. calls Prepare(ctx, task, job): this derives the cancellable context
//     the run uses and, when the task embeds Base, hands Base the job and
//     the cancel function, which is how Base.Stop and Base.Pause reach them;
//  3. calls OnQueue(ctx, job); an error fails the job without running it.
//     A task that declares QueueFree (its OnQueue does nothing) skips this
//     step, and the engine may claim its jobs straight into running;
//  4. wraps ctx with WithActiveTimeout(ctx, job, timeout), so time spent
//     paused does not count against the definition's timeout, and calls
//     Execute(ctx, job) — recovering a panic into a failure;
//  5. meanwhile, on a control request, calls Pause, Resume or Stop from
//     another goroutine, and records a false return as a refusal;
//  6. builds a Result (status succeeded, failed, stopped, canceled or
//     snoozed; Err; Output from job.Result(); start and finish times) and
//     calls OnComplete(ctx, job, r), whose error it logs without changing
//     the status;
//  7. calls the CancelFunc from Prepare.
//
// After the run, context.Cause of the Execute context tells why it ended:
// ErrStopped after Stop, ErrTimeout after the active timeout.
//
// Pause accounting (Job.Checkpoint, Job.Paused, Job.PausedDuration and the
// active timeout) follows Base.Pause and Base.Resume. A task that overrides
// Pause or Resume, as tasks/shell does to signal its child, calls the Base
// method from its override so the accounting stays right. A task whose work
// is one exchange that cannot be held midway (tasks/httpcall, tasks/email)
// calls Base.BeginUnpausable before it instead: a pause holds the task until
// then, and is refused after.
package tasks
