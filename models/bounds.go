package models

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// The integers chime turns into a duration: every one goes through
// Bound.Duration, which refuses a value outside its column's range instead
// of computing with it. MariaDB and PostgreSQL store these columns as INT
// and the API refuses more than MaxSeconds, but SQLite's INTEGER holds any
// int64, and nobody checks an admin's UPDATE: 9223372037 seconds is a
// time.Duration that wraps negative, and a negative interval made the
// schedule engine's plan walk loop and allocate until the node died. A row
// a Bound refuses is invalid: a schedule becomes invalid with the error as
// its status_reason, a job of a refused definition fails before it starts
// with the error, and both are logged. docs/security.md has the table.

// MaxSeconds is the most seconds any column of seconds holds: the largest
// INT of MariaDB and PostgreSQL, 2^31 − 1 (about 68 years). Multiplied by
// time.Second it is far from overflowing a time.Duration (about 292 years).
const MaxSeconds = math.MaxInt32

// MaxRetentionDays bounds retention_days: a century is longer than anyone
// keeps job history, and days × 24h overflows time.Duration past about
// 106751 days into a negative age that would delete every finished job.
const MaxRetentionDays = 36500

// Bound is the range of one integer that becomes a duration: Unit per step,
// from Min to Max steps, both inclusive. Max × Unit never overflows. A
// Bound without a Unit is a counter's (see Counters), never a duration.
type Bound struct {
	// Column names the value as admins write it: table.column, or the
	// setting's key.
	Column   string
	Min, Max int64
	Unit     time.Duration
}

// The bounds of every integer column chime turns into a duration.
var (
	// IntervalBound is an interval schedule's step; 0 would fire without end.
	IntervalBound = Bound{Column: "schedules.interval_seconds", Min: 1, Max: MaxSeconds, Unit: time.Second}
	// CatchupWindowBound is how old a missed fire may be and still be
	// written; NULL means no window, 0 drops every missed fire.
	CatchupWindowBound = Bound{Column: "schedules.catchup_window_seconds", Min: 0, Max: MaxSeconds, Unit: time.Second}
	// TimeoutBound is a run's active time; 0 means none.
	TimeoutBound = Bound{Column: "job_definitions.timeout_seconds", Min: 0, Max: MaxSeconds, Unit: time.Second}
	// RetryBackoffBound is the first retry's delay, doubled per retry up to
	// the task engine's cap; 0 retries at once.
	RetryBackoffBound = Bound{Column: "job_definitions.retry_backoff_seconds", Min: 0, Max: MaxSeconds, Unit: time.Second}
	// RetentionBound is how long finished jobs are kept (the
	// configurations row or file key retention_days); 0 keeps them forever.
	RetentionBound = Bound{Column: "retention_days", Min: 0, Max: MaxRetentionDays, Unit: 24 * time.Hour}
)

// Bounds lists every Bound, for tests that walk them all and for the docs.
func Bounds() []Bound {
	return []Bound{IntervalBound, CatchupWindowBound, TimeoutBound, RetryBackoffBound, RetentionBound}
}

// OutOfBoundsError is a value a Bound refuses.
type OutOfBoundsError struct {
	Bound Bound
	Value int64
}

func (e *OutOfBoundsError) Error() string {
	if e.Bound.Unit == 0 {
		return fmt.Sprintf("%s is %d, outside %d to %d", e.Bound.Column, e.Value, e.Bound.Min, e.Bound.Max)
	}
	return fmt.Sprintf("%s is %d, outside %d to %d (%s)", e.Bound.Column, e.Value, e.Bound.Min, e.Bound.Max, e.Bound.unitName())
}

func (b Bound) unitName() string {
	switch b.Unit {
	case time.Second:
		return "seconds"
	case 24 * time.Hour:
		return "days"
	}
	return "× " + b.Unit.String()
}

// Check reports whether v is within b.
func (b Bound) Check(v int64) error {
	if v < b.Min || v > b.Max {
		return &OutOfBoundsError{Bound: b, Value: v}
	}
	return nil
}

// Duration is v steps of b's Unit, or an *OutOfBoundsError when v is
// outside b. It is the one conversion from such an integer to a
// time.Duration.
func (b Bound) Duration(v int64) (time.Duration, error) {
	if err := b.Check(v); err != nil {
		return 0, err
	}
	return time.Duration(v) * b.Unit, nil
}

// Durations returns d's timeout and first retry backoff, or why d cannot
// be run (Unreadable, or a value out of its Bound): a definition is checked when it is read, by the schedule engine
// (its schedules become invalid) and by the task engine (its jobs fail
// before they start).
func (d *JobDefinition) Durations() (timeout, backoff time.Duration, err error) {
	if d.Unreadable != "" {
		return 0, 0, errors.New(d.Unreadable)
	}
	if timeout, err = TimeoutBound.Duration(int64(d.TimeoutSeconds)); err != nil {
		return 0, 0, err
	}
	if backoff, err = RetryBackoffBound.Duration(int64(d.RetryBackoffSeconds)); err != nil {
		return 0, 0, err
	}
	return timeout, backoff, nil
}

// MinTime and MaxTime bound the times fires are computed from and to:
// years 1 to 9999, what SQLite's text, MySQL's DATETIME (from year 1000)
// and PostgreSQL's timestamptz can all hold, or at least compare as times.
// A schedule whose start_at, end_at, run_at or created_at, or whose
// trigger's last_fire_at or spec_changed_at, lies outside is invalid; a
// schedule has no fire after MaxTime.
var (
	MinTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxTime = time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC)
)

// CheckTime reports whether t, read from column, lies within MinTime and
// MaxTime.
func CheckTime(column string, t time.Time) error {
	if t.Before(MinTime) || t.After(MaxTime) {
		return fmt.Errorf("%s is %s, outside years 1 to 9999", column, t.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// TimeColumn is a nullable time and the column it was read from.
type TimeColumn struct {
	Column string
	T      *time.Time
}

// CheckTimes is CheckTime of each column that is not NULL, in order.
func CheckTimes(cols ...TimeColumn) error {
	for _, c := range cols {
		if c.T != nil {
			if err := CheckTime(c.Column, *c.T); err != nil {
				return err
			}
		}
	}
	return nil
}

// MaxCount is the most a counter chime increments may hold: one below the
// largest INT of MariaDB and PostgreSQL, so that the increment still fits.
// One more than that failed the statement ("integer out of range"), and
// the statement was the claim of every job it picked, or the outbox's
// claim: one row an admin wrote stopped the node's jobs or its emails.
const MaxCount = math.MaxInt32 - 1

// The counters chime increments, or compares with a limit (a negative
// count would take billions of increments to reach it): Bounds without a
// Unit, checked by Job.CheckBounds and Notification.CheckBounds.
var (
	// AttemptBound is jobs.attempt: a start adds one.
	AttemptBound = Bound{Column: "jobs.attempt", Min: 0, Max: MaxCount}
	// RecoveriesBound is jobs.recoveries: a recovery adds one.
	RecoveriesBound = Bound{Column: "jobs.recoveries", Min: 0, Max: MaxCount}
	// SnoozesBound is jobs.snoozes: a snooze adds one.
	SnoozesBound = Bound{Column: "jobs.snoozes", Min: 0, Max: MaxCount}
	// NoticeAttemptsBound is notifications.attempts: the outbox's claim
	// adds one.
	NoticeAttemptsBound = Bound{Column: "notifications.attempts", Min: 0, Max: MaxCount}
)

// Counters lists the counter Bounds, for tests and the docs.
func Counters() []Bound {
	return []Bound{AttemptBound, RecoveriesBound, SnoozesBound, NoticeAttemptsBound}
}

// CheckBounds reports the first counter of j out of its Bound, or the
// first time out of MinTime to MaxTime: a row an admin wrote that chime
// must not run (see store's claim).
func (j *Job) CheckBounds() error {
	for _, c := range []struct {
		b Bound
		v int
	}{{AttemptBound, j.Attempt}, {RecoveriesBound, j.Recoveries}, {SnoozesBound, j.Snoozes}} {
		if err := c.b.Check(int64(c.v)); err != nil {
			return err
		}
	}
	return CheckTimes(TimeColumn{"jobs.scheduled_at", &j.ScheduledAt}, TimeColumn{"jobs.run_at", &j.RunAt},
		TimeColumn{"jobs.queued_at", j.QueuedAt}, TimeColumn{"jobs.started_at", j.StartedAt},
		TimeColumn{"jobs.finished_at", j.FinishedAt}, TimeColumn{"jobs.heartbeat_at", j.HeartbeatAt},
		TimeColumn{"jobs.created_at", &j.CreatedAt}, TimeColumn{"jobs.updated_at", &j.UpdatedAt})
}

// CheckBounds is Job.CheckBounds for a notice.
func (n *Notification) CheckBounds() error {
	if err := NoticeAttemptsBound.Check(int64(n.Attempts)); err != nil {
		return err
	}
	return CheckTimes(TimeColumn{"notifications.next_attempt_at", &n.NextAttemptAt}, TimeColumn{"notifications.created_at", &n.CreatedAt},
		TimeColumn{"notifications.sent_at", n.SentAt}, TimeColumn{"notifications.updated_at", &n.UpdatedAt})
}
