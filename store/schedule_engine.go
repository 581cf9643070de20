package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/chimesched/chime/models"
)

// This file holds the schedule engine's reads and bookkeeping writes. The
// plain types they take and return live in chimedb, with the interface
// (chimedb.ScheduleStore) the engine calls them through.

// scheduleInChunk bounds IN lists, well under both databases' placeholder limits.
const scheduleInChunk = 1000

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
