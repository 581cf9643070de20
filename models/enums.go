package models

// JobStatus is the jobs.status column.
type JobStatus string

const (
	JobPending   JobStatus = "pending"
	JobQueued    JobStatus = "queued"
	JobRunning   JobStatus = "running"
	JobPaused    JobStatus = "paused"
	JobSucceeded JobStatus = "succeeded"
	JobFailed    JobStatus = "failed"
	JobStopped   JobStatus = "stopped"
	JobCanceled  JobStatus = "canceled"
)

// Finished reports whether no engine will touch a job in this state again.
func (s JobStatus) Finished() bool {
	switch s {
	case JobSucceeded, JobFailed, JobStopped, JobCanceled:
		return true
	}
	return false
}

// JobOutcome is the jobs.outcome column: the typed outcome a task chose for
// its last run. The status says the rest.
type JobOutcome string

const (
	OutcomeNone JobOutcome = ""
	// OutcomeSkipRetry: failed, not retried though attempts were left.
	OutcomeSkipRetry JobOutcome = "skip_retry"
	// OutcomeSnoozed: back to pending, due at run_at, no attempt used.
	OutcomeSnoozed JobOutcome = "snoozed"
	// OutcomeCanceled: status canceled, by the task.
	OutcomeCanceled JobOutcome = "canceled"
)

// JobControl is the jobs.control column: an action an admin asked for.
type JobControl string

const (
	ControlNone   JobControl = ""
	ControlPause  JobControl = "pause"
	ControlResume JobControl = "resume"
	ControlStop   JobControl = "stop"
)

// ScheduleType is the schedules.schedule_type column.
type ScheduleType string

const (
	ScheduleCron     ScheduleType = "cron"
	ScheduleInterval ScheduleType = "interval"
	ScheduleOnce     ScheduleType = "once"
)

// ScheduleStatus is the schedules.status column.
type ScheduleStatus string

const (
	ScheduleActive    ScheduleStatus = "active"
	SchedulePaused    ScheduleStatus = "paused"
	ScheduleCompleted ScheduleStatus = "completed"
	ScheduleInvalid   ScheduleStatus = "invalid"
)

// MisfirePolicy says what happens to fires missed while no engine was firing.
type MisfirePolicy string

const (
	// MisfireFireOnce collapses all missed fires into one catch-up job (the paper's rule).
	MisfireFireOnce MisfirePolicy = "fire_once"
	// MisfireSkip drops missed fires and resumes the cadence.
	MisfireSkip MisfirePolicy = "skip"
	// MisfireFireAll writes each missed fire, up to a cap.
	MisfireFireAll MisfirePolicy = "fire_all"
)

// Concurrency says whether jobs of one schedule may overlap.
type Concurrency string

const (
	ConcurrencyAllow  Concurrency = "allow"
	ConcurrencyForbid Concurrency = "forbid"
)

// NotifyOn is job_definitions.notify_on.
type NotifyOn string

const (
	NotifyNever   NotifyOn = "never"
	NotifyFailure NotifyOn = "failure"
	NotifySuccess NotifyOn = "success"
	NotifyAlways  NotifyOn = "always"
)

// NotificationStatus is notifications.status.
type NotificationStatus string

const (
	// NotificationPending waits for its next attempt (next_attempt_at).
	NotificationPending NotificationStatus = "pending"
	// NotificationSent was accepted by the SMTP server.
	NotificationSent NotificationStatus = "sent"
	// NotificationFailed was given up: attempts used up, a permanent SMTP
	// refusal, or nothing to send (no recipients, the job gone); see last_error.
	NotificationFailed NotificationStatus = "failed"
)

// CronSyntax is schedules.cron_syntax: how a cron schedule's cron_expr reads.
type CronSyntax string

const (
	// SyntaxStandard: 5 fields (6 with seconds first) and descriptors,
	// day-of-week 0-6 from Sunday; DSTPolicy applies.
	SyntaxStandard CronSyntax = "standard"
	// SyntaxQuartz: Quartz 2.3.2's CronExpression (6 or 7 fields, ?, L, W,
	// #, day-of-week 1-7 from Sunday), its daylight-saving behaviour included.
	SyntaxQuartz CronSyntax = "quartz"
)

// DSTPolicy is schedules.dst_policy: what a standard-syntax cron schedule
// does with a wall time that a daylight-saving change skips (the gap) or
// repeats (the overlap). It applies to expressions with a fixed hour;
// those whose hour field starts with * (hourly and finer) fire on real
// instants whatever the policy: none in the gap, both in the overlap.
type DSTPolicy string

const (
	// DSTOnce (the default): the gap's wall time fires at the first
	// instant after the gap, the repeated one at its first occurrence, so
	// a daily job fires exactly once every day.
	DSTOnce DSTPolicy = "once"
	// DSTSkip: no fire in the gap; the repeated wall time fires once.
	DSTSkip DSTPolicy = "skip"
	// DSTBoth: the gap's wall time fires after the gap; the repeated one
	// fires at both occurrences.
	DSTBoth DSTPolicy = "both"
	// DSTWall: plain wall-clock matching, chime's behaviour before
	// dst_policy: no fire in the gap, both occurrences in the overlap.
	DSTWall DSTPolicy = "wall"
)

// CalendarKind is calendars.kind: Quartz's calendar classes.
type CalendarKind string

const (
	CalendarHoliday CalendarKind = "holiday"
	CalendarAnnual  CalendarKind = "annual"
	CalendarMonthly CalendarKind = "monthly"
	CalendarWeekly  CalendarKind = "weekly"
	CalendarDaily   CalendarKind = "daily"
	CalendarCron    CalendarKind = "cron"
)
