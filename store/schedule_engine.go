package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/chimesched/chime/models"
)

// This file holds the schedule engine's reads and bookkeeping writes, and the
// plain types its Store interface (scheduleengine.Store) is shaped in. The
// types live here, not in scheduleengine, so store implements that interface
// without importing the engine.

// scheduleInChunk bounds IN lists, well under both databases' placeholder limits.
const scheduleInChunk = 1000

// LoadSchedulesParams selects what LoadSchedules reads.
type LoadSchedulesParams struct {
	// ChangedSince, when set, returns schedules of any status whose row,
	// definition or calendar was updated at or after it. Nil returns every active schedule.
	ChangedSince *time.Time
}

// ScheduleRow is one schedule with what the engine needs beside it.
type ScheduleRow struct {
	Schedule   models.Schedule
	Definition *models.JobDefinition // nil when job_definition_id points nowhere
	Trigger    *models.TimeTrigger   // nil before the engine first saw the schedule
	Calendar   *models.Calendar      // the calendar calendar_id names; nil when none, or when it points nowhere
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
	ScheduledAt     time.Time
	MaxAttempts     int
	Params          models.JSON
	CatchUp         bool
	MissedFires     int
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
	// Stale holds the stored trigger of each schedule whose row no longer
	// had the batch's FromLastFireAt: nothing was written for it, and the
	// writer should plan again from this state.
	Stale []TriggerRow
}

// MarkInvalidParams names a schedule that cannot be scheduled.
type MarkInvalidParams struct {
	ScheduleID int64
	Reason     string
	Now        time.Time
}

func (s *Store) LoadSchedules(ctx context.Context, p *LoadSchedulesParams) (*LoadSchedulesResult, error) {
	db := s.DB().WithContext(ctx)
	var scheds []models.Schedule
	q := db.Model(&models.Schedule{}).Order("id")
	if p.ChangedSince != nil {
		since := DBTime(*p.ChangedSince)
		q = q.Where("updated_at >= ? OR job_definition_id IN (SELECT id FROM job_definitions WHERE updated_at >= ?)"+
			" OR calendar_id IN (SELECT id FROM calendars WHERE updated_at >= ?)", since, since, since)
	} else {
		q = q.Where("status = ?", models.ScheduleActive)
	}
	if err := q.Find(&scheds).Error; err != nil {
		return nil, fmt.Errorf("load schedules: %w", err)
	}
	res := &LoadSchedulesResult{Rows: make([]ScheduleRow, len(scheds))}
	defIDs := make([]int64, 0, len(scheds))
	ids := make([]int64, 0, len(scheds))
	for i, s := range scheds {
		res.Rows[i].Schedule = s
		defIDs = append(defIDs, s.JobDefinitionID)
		ids = append(ids, s.ID)
		if s.UpdatedAt.After(res.MaxUpdatedAt) {
			res.MaxUpdatedAt = s.UpdatedAt
		}
	}
	slices.Sort(defIDs)
	defIDs = slices.Compact(defIDs)
	defs := make(map[int64]*models.JobDefinition, len(defIDs))
	for chunk := range slices.Chunk(defIDs, scheduleInChunk) {
		var rows []models.JobDefinition
		if err := db.Where("id IN ?", chunk).Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("load job definitions: %w", err)
		}
		for i := range rows {
			defs[rows[i].ID] = &rows[i]
			if rows[i].UpdatedAt.After(res.MaxUpdatedAt) {
				res.MaxUpdatedAt = rows[i].UpdatedAt
			}
		}
	}
	trigs := make(map[int64]*models.TimeTrigger, len(ids))
	for chunk := range slices.Chunk(ids, scheduleInChunk) {
		var rows []models.TimeTrigger
		if err := db.Where("schedule_id IN ?", chunk).Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("load time triggers: %w", err)
		}
		for i := range rows {
			trigs[rows[i].ScheduleID] = &rows[i]
		}
	}
	var calIDs []int64
	for _, sc := range scheds {
		if sc.CalendarID != nil {
			calIDs = append(calIDs, *sc.CalendarID)
		}
	}
	cals, err := calendarsByID(db, calIDs)
	if err != nil {
		return nil, err
	}
	for _, c := range cals {
		if c.UpdatedAt.After(res.MaxUpdatedAt) {
			res.MaxUpdatedAt = c.UpdatedAt
		}
	}
	for i := range res.Rows {
		r := &res.Rows[i]
		r.Definition = defs[r.Schedule.JobDefinitionID]
		r.Trigger = trigs[r.Schedule.ID]
		if id := r.Schedule.CalendarID; id != nil {
			r.Calendar = cals[*id]
		}
	}
	return res, nil
}

func (s *Store) UnfinishedSchedules(ctx context.Context, scheduleIDs []int64) (map[int64]bool, error) {
	busy := map[int64]bool{}
	for chunk := range slices.Chunk(scheduleIDs, scheduleInChunk) {
		var ids []int64
		err := s.DB().WithContext(ctx).Model(&models.Job{}).Distinct("schedule_id").
			Where("schedule_id IN ? AND status IN ?", chunk, unfinishedJobs).Pluck("schedule_id", &ids).Error
		if err != nil {
			return nil, fmt.Errorf("find unfinished jobs of forbid-overlap schedules: %w", err)
		}
		for _, id := range ids {
			busy[id] = true
		}
	}
	return busy, nil
}

// unfinishedJobs are the statuses that make a forbid-overlap schedule busy.
var unfinishedJobs = []models.JobStatus{models.JobPending, models.JobQueued, models.JobRunning, models.JobPaused}

func (s *Store) MarkInvalid(ctx context.Context, p *MarkInvalidParams) error {
	reason := p.Reason
	if len(reason) > 1000 {
		reason = reason[:1000]
	}
	err := s.DB().WithContext(ctx).Model(&models.Schedule{}).
		Where("id = ? AND status = ?", p.ScheduleID, models.ScheduleActive).
		Updates(map[string]any{"status": models.ScheduleInvalid, "status_reason": reason, "updated_at": DBTime(p.Now)}).Error
	if err != nil {
		return fmt.Errorf("mark schedule %d invalid: %w", p.ScheduleID, err)
	}
	return nil
}
