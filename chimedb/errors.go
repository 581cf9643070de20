package chimedb

import (
	"errors"
	"time"
)

// Sentinels a store wraps in its errors; the API maps them to 404 and 409
// with errors.Is, so no caller matches a driver's or gorm's errors.
var (
	// ErrNotFound: no row has that id (or name).
	ErrNotFound = errors.New("not found")
	// ErrConflict: a row with the same unique key (a name, or a schedule's
	// job at the same scheduled_at) already exists.
	ErrConflict = errors.New("already exists")
	// ErrNoDefinition: a schedule names a job definition that does not exist.
	ErrNoDefinition = errors.New("job definition does not exist")
	// ErrNoWorkflow: a schedule names a workflow that does not exist.
	ErrNoWorkflow = errors.New("workflow does not exist")
	// ErrNoCalendar: a schedule names a calendar that does not exist.
	ErrNoCalendar = errors.New("calendar does not exist")
	// ErrInUse: the row is referenced by others and cannot be deleted.
	ErrInUse = errors.New("in use")
	// ErrJobState: the job's status does not allow the requested action.
	ErrJobState = errors.New("not allowed in this job state")
	// ErrLeaseLost: a write fenced by a lease (chimedb.LeaseFence) found
	// the lease held by another node, or expired by the database's clock,
	// and wrote nothing.
	ErrLeaseLost = errors.New("lease not held")
)

// Node statuses in nodes.status.
const (
	NodeAlive   = "alive"
	NodeStopped = "stopped"
	NodeDead    = "dead"
)

// DBTime is the form in which a store writes a time: UTC, microseconds
// (MySQL's DATETIME(6)), so a time read back equals the one written.
func DBTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }
