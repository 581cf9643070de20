package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// GetJob returns one job or chimedb.ErrNotFound; a row chime cannot run as it is
// comes back with Unreadable set (see shownJobs).
func (a *Admin) GetJob(ctx context.Context, id int64) (*models.Job, error) {
	jobs, err := shownJobs(a.s.db.WithContext(ctx).Model(&models.Job{}).Where("id = ?", id).Limit(1))
	if err == nil && len(jobs) == 0 {
		err = chimedb.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("job %d: %w", id, err)
	}
	return &jobs[0], nil
}

// InsertJob writes a pending job (a manual trigger or an ad hoc run) with
// a log line saying who asked for it, and fills j's id. A second job of the
// same schedule at the same scheduled_at wraps chimedb.ErrConflict.
func (a *Admin) InsertJob(ctx context.Context, j *models.Job, logMessage string) error {
	now := DBTime(time.Now())
	j.ScheduledAt, j.RunAt = DBTime(j.ScheduledAt), DBTime(j.RunAt)
	j.Status, j.Control, j.CreatedAt, j.UpdatedAt = models.JobPending, models.ControlNone, now, now
	return a.s.InTx(ctx, func(tx *gorm.DB) error {
		j.ID = 0
		if err := tx.Create(j).Error; err != nil {
			return fmt.Errorf("insert job: %w", conflict(err))
		}
		return tx.Create(&models.JobLog{JobID: j.ID, Level: "info", Message: logMessage, CreatedAt: now}).Error
	})
}

// ControlJob records an admin's pause, resume or stop request for job id.
// The task engine running the job acts on jobs.control within its control
// interval; a stop of a job no node has claimed yet (pending) cancels it at
// once, since there is nothing to stop. A request the job's status cannot
// honour returns chimedb.ErrJobState with the reason. It returns the row afterwards.
func (a *Admin) ControlJob(ctx context.Context, id int64, c models.JobControl) (*models.Job, error) {
	var out models.Job
	err := a.s.InTx(ctx, func(tx *gorm.DB) error {
		now := DBTime(time.Now())
		var j models.Job
		if err := first(a.s.forUpdate(tx.Where("id = ?", id)), &j); err != nil {
			return fmt.Errorf("job %d: %w", id, err)
		}
		set := map[string]any{"updated_at": now}
		var msg string
		switch c {
		case models.ControlPause:
			if j.Status != models.JobQueued && j.Status != models.JobRunning {
				return fmt.Errorf("job %d is %s; only a queued or running job can be paused: %w", id, j.Status, chimedb.ErrJobState)
			}
			set["control"], msg = models.ControlPause, "pause requested through the API"
		case models.ControlResume:
			switch {
			case j.Status == models.JobPaused:
				set["control"], msg = models.ControlResume, "resume requested through the API"
			case j.Control == models.ControlPause && !j.Status.Finished():
				// The engine has not acted on the pause yet: withdrawing
				// it is the resume.
				set["control"], msg = models.ControlNone, "pause request withdrawn through the API"
			default:
				return fmt.Errorf("job %d is %s; only a paused job can be resumed: %w", id, j.Status, chimedb.ErrJobState)
			}
		case models.ControlStop:
			switch {
			case j.Status.Finished():
				return fmt.Errorf("job %d is already %s: %w", id, j.Status, chimedb.ErrJobState)
			case j.Status == models.JobPending:
				set["status"], set["control"], set["finished_at"] = models.JobCanceled, models.ControlNone, now
				msg = "canceled through the API before any node claimed it"
			default:
				set["control"], msg = models.ControlStop, "stop requested through the API"
			}
		default:
			return fmt.Errorf("job %d: unknown control %q", id, c)
		}
		if err := tx.Model(&models.Job{}).Where("id = ?", id).Updates(set).Error; err != nil {
			return fmt.Errorf("set control of job %d: %w", id, err)
		}
		if err := tx.Create(&models.JobLog{JobID: id, Level: "info", Message: msg, CreatedAt: now}).Error; err != nil {
			return fmt.Errorf("log control of job %d: %w", id, err)
		}
		if set["status"] == models.JobCanceled {
			if err := a.s.enqueueNotices(tx, []int64{id}); err != nil {
				return err
			}
		}
		out = models.Job{}
		return first(tx.Where("id = ?", id), &out)
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}
