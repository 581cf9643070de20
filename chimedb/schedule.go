package chimedb

import (
	"context"
	"time"

	"github.com/chimesched/chime/models"
)

// LoadSchedulesParams selects what LoadSchedules reads.
type LoadSchedulesParams struct {
	// ChangedSince, when set, returns schedules of any status whose row,
	// definition or calendar was updated at or after it. Nil returns every
	// active schedule.
	ChangedSince *time.Time
	// AfterID and Limit read one page in id order (keyset paging): the
	// rows with id > AfterID, at most Limit of them; Limit 0 reads them
	// all. A page shorter than Limit is the last. Pages are separate
	// reads, not one snapshot: a row changed after its page was read is
	// seen by the next ChangedSince read from before the first page.
	AfterID int64
	Limit   int
}

// ScheduleRow is one schedule with what the engine needs beside it.
type ScheduleRow struct {
	Schedule   models.Schedule
	Definition *models.JobDefinition // nil when job_definition_id points nowhere
	Trigger    *models.TimeTrigger   // nil before the engine first saw the schedule
	Calendar   *models.Calendar      // the calendar calendar_id names; nil when none, or when it points nowhere
	Workflow   *models.Workflow      // the workflow workflow_id names; nil when none, or when it points nowhere
}

// LoadSchedulesResult is what LoadSchedules read.
type LoadSchedulesResult struct {
	Rows []ScheduleRow
	// MaxUpdatedAt is the latest updated_at among the rows, their
	// definitions and calendars, in the database's clock: the next ChangedSince.
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
	// FromLastFireAt is, in WriteFires, the last_fire_at the writer planned
	// from (nil: the schedule had never fired). The schedule's jobs, trigger
	// and completion are written only while the stored row still holds it
	// (or does not exist yet); otherwise another writer has moved the row on
	// since, and the batch's part for this schedule is dropped and reported
	// in WriteFiresResult.Stale. EnsureTriggers ignores it.
	FromLastFireAt *time.Time
	// SpecHash and SpecChangedAt are written only when the row is created
	// (EnsureTriggers, or a fire that finds no row); SetTriggerSpecs changes
	// them afterwards.
	SpecHash      string
	SpecChangedAt *time.Time
}

// TriggerSpec records that a schedule's timing is now Hash, in the trigger
// row that still holds From (optimistic: a row another writer updated
// meanwhile is left alone).
type TriggerSpec struct {
	ScheduleID int64
	From       string
	Hash       string
	// ChangedAt is when the change was seen; fires count from it, and
	// next_fire_at becomes NextFireAt (nil: none), the next fire under the
	// new timing. Nil ChangedAt adopts a row that had no hash (From empty):
	// only spec_hash is written.
	ChangedAt  *time.Time
	NextFireAt *time.Time
}

// SetTriggerSpecsParams lists spec changes to record.
type SetTriggerSpecsParams struct {
	Specs []TriggerSpec
	Now   time.Time
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
	// WorkflowID, when not 0, makes the fire a workflow run (pending, with
	// Params as its run params) instead of a job: JobDefinitionID and
	// MaxAttempts are then unused. The run's (schedule_id, scheduled_at)
	// is unique, as a job's is.
	WorkflowID  int64
	ScheduledAt time.Time
	MaxAttempts int
	Params      models.JSON
	CatchUp     bool
	MissedFires int
}

// WriteFiresParams is one batch: the jobs, the trigger advances of every
// schedule handled, and the schedules used up. Jobs and Complete are
// written only for schedules with a row in Triggers, which carries the
// check (TriggerRow.FromLastFireAt).
type WriteFiresParams struct {
	Jobs     []FireJob
	Triggers []TriggerRow
	Complete []int64
	Now      time.Time
	// HandoffNode, when set with HandoffSlots > 0, has WriteFires write up
	// to HandoffSlots of the batch's new on-time jobs straight as running
	// on that node (attempt 1, queued_at = started_at = heartbeat_at =
	// Now), instead of pending: the node's task engine has reserved that
	// many workers for them, so they skip the claim. Only jobs whose
	// definition's task type is in HandoffKinds (task types whose OnQueue
	// does nothing, tasks.QueueFree) and whose schedule does not forbid
	// overlap are handed off; catch-up jobs never are.
	HandoffNode  string
	HandoffKinds []string
	HandoffSlots int
	// HandoffQueued, with HandoffNode, has WriteFires write up to this many
	// more such jobs, past the HandoffSlots written running, queued on
	// that node (queued_at = Now, attempt 0): the node's task engine holds
	// them in its backlog until a worker frees and starts them then, as it
	// does a claimed job (taskengine.Config.Backlog). Queued, a job that
	// never ran goes back to pending without using an attempt wherever it
	// is given back: the node's Stop or drain, its restart, the reaper of a
	// dead node, the reconciler of a job queued too long.
	HandoffQueued int
	// BeforeCommit, if set, is called inside the transaction after its
	// last statement, just before COMMIT; an error rolls the batch back and
	// is returned. The schedule engine's fire-ahead waits in it for the
	// batch's instant, so a batch prepared early commits on time and not
	// before (see scheduleengine.Config.FireAhead).
	BeforeCommit func(ctx context.Context) error
	// Fence, when set, makes the batch conditional on a lease, inside its
	// own transaction: see LeaseFence. A batch whose lease is not held
	// writes nothing and fails with ErrLeaseLost.
	Fence *LeaseFence
}

// LeaseFence makes a transaction's writes conditional on a lease: its
// first statement reads the lease row, held by Holder and not expired by
// the database's clock, with a shared lock kept until the transaction
// ends, and the transaction fails with ErrLeaseLost when the row is not
// so. A takeover (TryAcquireLease by another node) updates that row, so it
// waits for every fenced transaction that read it: a commit of the old
// holder lands before the lease can pass, never after, however late its
// COMMIT reaches the server (a partition, a frozen process).
//
// A client cut off in the middle of such a transaction would hold the
// takeover back for as long as the server keeps the transaction: IdleTimeout
// has the server end a fenced transaction (and its connection) that has
// waited that long for its client's next statement (PostgreSQL's
// idle_in_transaction_session_timeout, MariaDB's idle_transaction_timeout
// rounded up to whole seconds; MySQL has no such setting, and the
// transaction lasts until the server drops the connection). It must exceed
// the longest pause the writer makes inside the transaction on purpose (the
// schedule engine's fire-ahead wait).
type LeaseFence struct {
	Name, Holder string
	IdleTimeout  time.Duration
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
	// Busy lists active schedules whose row another transaction held (an
	// admin's session in the middle of an edit, a client left in a
	// transaction): nothing was written for them, and the batch did not
	// wait for them. The writer tries them again later.
	Busy []int64
	// Stale holds the stored trigger of each schedule whose row no longer
	// had the batch's FromLastFireAt: nothing was written for it, and the
	// writer should plan again from this state.
	Stale []TriggerRow
	// HandedOff are the jobs written as running (Started set) or queued on
	// HandoffNode, with their definitions and schedule names: the node's
	// task engine owns them from the commit on and must run or release them.
	HandedOff []ClaimedJob
}

// MarkInvalidParams names a schedule that cannot be scheduled.
type MarkInvalidParams struct {
	ScheduleID int64
	Reason     string
	Now        time.Time
}
