package scheduleengine

import (
	"context"
	"time"

	"github.com/chimesched/chime/models"
)

// Store is the database as the schedule engine needs it. NewDBStore
// implements it on chime's store; tests may fake it.
type Store interface {
	// LoadSchedules reads schedules with their definitions and triggers.
	LoadSchedules(ctx context.Context, p *LoadSchedulesParams) (*LoadSchedulesResult, error)
	// EnsureTriggers creates the time_triggers rows that do not exist yet and
	// leaves existing ones alone.
	EnsureTriggers(ctx context.Context, p *EnsureTriggersParams) error
	// UnfinishedSchedules returns which of the given schedules have a job
	// that is not finished, for concurrency = forbid.
	UnfinishedSchedules(ctx context.Context, scheduleIDs []int64) (map[int64]bool, error)
	// WriteFires writes one batch of fires in one transaction.
	WriteFires(ctx context.Context, p *WriteFiresParams) (*WriteFiresResult, error)
	// MarkInvalid sets an active schedule to invalid with a reason.
	MarkInvalid(ctx context.Context, p *MarkInvalidParams) error
	// AcquireLease takes or renews a lease and reports whether p.Holder holds it.
	AcquireLease(ctx context.Context, p *LeaseParams) (bool, error)
	// ReleaseLease gives up a lease held by p.Holder, so a standby need not
	// wait for it to expire.
	ReleaseLease(ctx context.Context, p *LeaseParams) error
}

// LoadSchedulesParams selects what LoadSchedules reads.
type LoadSchedulesParams struct {
	// ChangedSince, when set, returns schedules of any status whose row or
	// definition was updated at or after it. Nil returns every active schedule.
	ChangedSince *time.Time
}

// ScheduleRow is one schedule with what the engine needs beside it.
type ScheduleRow struct {
	Schedule   models.Schedule
	Definition *models.JobDefinition // nil when job_definition_id points nowhere
	Trigger    *models.TimeTrigger   // nil before the engine first saw the schedule
}

// LoadSchedulesResult is what LoadSchedules read.
type LoadSchedulesResult struct {
	Rows []ScheduleRow
	// MaxUpdatedAt is the latest updated_at among the rows and their
	// definitions, in the database's clock: the next ChangedSince.
	MaxUpdatedAt time.Time
}

// TriggerRow is the absolute state of one time_triggers row. Absolute values,
// not increments, so two leaders that fire the same occurrence write the same
// row instead of counting it twice.
type TriggerRow struct {
	ScheduleID     int64
	NextFireAt     *time.Time
	LastFireAt     *time.Time
	FiredCount     int64
	RemainingCount *int64
	MisfiredCount  int64
}

// EnsureTriggersParams lists triggers to create if missing.
type EnsureTriggersParams struct {
	Triggers []TriggerRow
	Now      time.Time
}

// FireJob is one jobs row to insert.
type FireJob struct {
	ScheduleID      int64
	JobDefinitionID int64
	ScheduledAt     time.Time
	MaxAttempts     int
	Params          models.JSON
	CatchUp         bool
	MissedFires     int
}

// WriteFiresParams is one batch: the jobs, the trigger advances of every
// schedule handled, and the schedules used up.
type WriteFiresParams struct {
	Jobs     []FireJob
	Triggers []TriggerRow
	Complete []int64
	Now      time.Time
}

// WriteFiresResult says what the batch did.
type WriteFiresResult struct {
	// Inserted and InsertedCatchUp count new job rows by kind.
	Inserted, InsertedCatchUp int
	// Duplicates counts fires already written (the unique key made them no-ops).
	Duplicates int
	// Inactive lists schedules that were no longer active when the batch
	// committed (paused or deleted since the last sync): nothing was written
	// for them.
	Inactive []int64
}

// MarkInvalidParams names a schedule that cannot be scheduled.
type MarkInvalidParams struct {
	ScheduleID int64
	Reason     string
	Now        time.Time
}

// LeaseParams names a lease and its would-be holder.
type LeaseParams struct {
	Name   string
	Holder string
	Now    time.Time
	TTL    time.Duration
}
