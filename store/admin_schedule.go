package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// GetSchedule returns one schedule or chimedb.ErrNotFound.
func (a *Admin) GetSchedule(ctx context.Context, id int64) (*models.Schedule, error) {
	var s models.Schedule
	if err := first(a.s.db.WithContext(ctx).Where("id = ?", id), &s); err != nil {
		return nil, fmt.Errorf("schedule %d: %w", id, err)
	}
	return &s, nil
}

// ScheduleTriggers returns the time_triggers rows of the given schedules by
// schedule id; schedules the engine has not seen yet have none.
func (a *Admin) ScheduleTriggers(ctx context.Context, ids []int64) (map[int64]models.TimeTrigger, error) {
	out := make(map[int64]models.TimeTrigger, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []models.TimeTrigger
	if err := a.s.db.WithContext(ctx).Where("schedule_id IN ?", ids).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read time triggers: %w", err)
	}
	for _, r := range rows {
		out[r.ScheduleID] = r
	}
	return out, nil
}

func normalizeSchedule(s *models.Schedule) {
	for _, t := range []**time.Time{&s.RunAt, &s.StartAt, &s.EndAt} {
		if *t != nil {
			v := DBTime(**t)
			*t = &v
		}
	}
	if s.CronSyntax == "" {
		s.CronSyntax = models.SyntaxStandard
	}
	if s.DSTPolicy == "" {
		s.DSTPolicy = models.DSTOnce
	}
}

// CreateSchedule inserts s and fills its id and times. The definition row
// is locked while the schedule is written, so a concurrent DeleteDefinition
// cannot leave the schedule pointing at nothing; a definition that is gone
// returns chimedb.ErrNoDefinition; so does its calendar (chimedb.ErrNoCalendar). A duplicate
// name wraps chimedb.ErrConflict.
func (a *Admin) CreateSchedule(ctx context.Context, s *models.Schedule) error {
	normalizeSchedule(s)
	now := DBTime(time.Now())
	if s.CreatedAt.IsZero() {
		// The API sets it: an interval schedule's grid counts from it, and
		// the preview it showed must match.
		s.CreatedAt = now
	}
	s.ID, s.CreatedAt, s.UpdatedAt = 0, DBTime(s.CreatedAt), now
	return a.s.InTx(ctx, func(tx *gorm.DB) error {
		s.ID = 0
		if err := a.lockTarget(tx, s); err != nil {
			return err
		}
		if err := a.lockCalendar(tx, s.CalendarID); err != nil {
			return err
		}
		if err := tx.Create(s).Error; err != nil {
			return fmt.Errorf("create schedule %q: %w", s.Name, conflict(err))
		}
		return nil
	})
}

func (a *Admin) lockDefinition(tx *gorm.DB, id int64) error {
	var d models.JobDefinition
	err := first(a.s.forUpdate(tx.Select("id").Where("id = ?", id)), &d)
	if errors.Is(err, chimedb.ErrNotFound) {
		return fmt.Errorf("job definition %d: %w", id, chimedb.ErrNoDefinition)
	}
	if err != nil {
		return fmt.Errorf("lock job definition %d: %w", id, err)
	}
	return nil
}

// lockTarget locks what s fires, its definition or its workflow (a
// schedule of a workflow: chimedb.ErrNoWorkflow when it is gone), as
// lockDefinition does.
func (a *Admin) lockTarget(tx *gorm.DB, s *models.Schedule) error {
	if s.WorkflowID == nil {
		return a.lockDefinition(tx, s.JobDefinitionID)
	}
	var wf models.Workflow
	err := first(a.s.forUpdate(tx.Select("id").Where("id = ?", *s.WorkflowID)), &wf)
	if errors.Is(err, chimedb.ErrNotFound) {
		return fmt.Errorf("workflow %d: %w", *s.WorkflowID, chimedb.ErrNoWorkflow)
	}
	if err != nil {
		return fmt.Errorf("lock workflow %d: %w", *s.WorkflowID, err)
	}
	return nil
}

var scheduleColumns = []string{"name", "job_definition_id", "workflow_id", "schedule_type", "cron_expr", "cron_syntax", "dst_policy", "calendar_id", "interval_seconds",
	"run_at", "timezone", "start_at", "end_at", "max_runs", "misfire_policy", "catchup_window_seconds",
	"concurrency", "params", "status", "status_reason", "priority", "queue", "required_tags", "updated_at"}

// UpdateSchedule writes every admin-owned column of s (row s.ID), with the
// same definition lock as CreateSchedule; a duplicate name wraps chimedb.ErrConflict.
func (a *Admin) UpdateSchedule(ctx context.Context, s *models.Schedule) error {
	normalizeSchedule(s)
	s.UpdatedAt = DBTime(time.Now())
	return a.s.InTx(ctx, func(tx *gorm.DB) error {
		if err := a.lockTarget(tx, s); err != nil {
			return err
		}
		if err := a.lockCalendar(tx, s.CalendarID); err != nil {
			return err
		}
		r := tx.Model(&models.Schedule{}).Where("id = ?", s.ID).Select(scheduleColumns).Updates(s)
		if r.Error != nil {
			return fmt.Errorf("update schedule %d: %w", s.ID, conflict(r.Error))
		}
		if r.RowsAffected == 0 {
			return fmt.Errorf("schedule %d: %w", s.ID, chimedb.ErrNotFound)
		}
		return nil
	})
}

// SetScheduleStatus moves schedule id to status to when its status is one
// of from; it returns the row as it is afterwards. A status outside from
// leaves the row alone and returns it with changed = false, so the caller
// can say why nothing happened.
func (a *Admin) SetScheduleStatus(ctx context.Context, id int64, to models.ScheduleStatus, from ...models.ScheduleStatus) (s *models.Schedule, changed bool, err error) {
	var r *gorm.DB
	err = a.s.audited(ctx, func(tx *gorm.DB) error {
		r = tx.Model(&models.Schedule{}).Where("id = ? AND status IN ?", id, from).
			Updates(map[string]any{"status": to, "status_reason": "", "updated_at": DBTime(time.Now())})
		return r.Error
	})
	if err != nil {
		return nil, false, fmt.Errorf("set status of schedule %d: %w", id, err)
	}
	s, err = a.GetSchedule(ctx, id)
	if err != nil {
		return nil, false, err
	}
	return s, r.RowsAffected > 0, nil
}

// DeleteSchedule deletes schedule id and its time_triggers row. Its jobs
// stay: they are history, and pending ones still run.
func (a *Admin) DeleteSchedule(ctx context.Context, id int64) error {
	return a.s.InTx(ctx, func(tx *gorm.DB) error {
		r := tx.Delete(&models.Schedule{}, id)
		if r.Error != nil {
			return fmt.Errorf("delete schedule %d: %w", id, r.Error)
		}
		if r.RowsAffected == 0 {
			return fmt.Errorf("schedule %d: %w", id, chimedb.ErrNotFound)
		}
		if err := tx.Where("schedule_id = ?", id).Delete(&models.TimeTrigger{}).Error; err != nil {
			return fmt.Errorf("delete time trigger of schedule %d: %w", id, err)
		}
		return nil
	})
}
