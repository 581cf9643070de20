package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// stalledStatuses are the states in which the task engine heartbeats a job.
var stalledStatuses = []models.JobStatus{models.JobRunning, models.JobPaused}

// RecoverStalledJobs finds jobs running or paused whose heartbeat_at (or,
// before the first heartbeat, started_at) is older than silentFor by the
// database's clock, and whose row has not been written for as long either
// (updated_at is set by the database on every write, trigger or ON UPDATE,
// so it is a heartbeat on the database's clock even when the node's own
// clock, which writes heartbeat_at, is minutes behind). Each is treated
// like a job of a dead node (see recoverCutOff): recovered without using
// an attempt when its definition requests recovery, else retried while
// attempts remain or failed with the reason; one asked to stop is stopped. This should never happen while
// nodes heartbeat their jobs; it catches what a bug or a lost update left.
// Every move is guarded by the job's status, as all moves out of running.
func (s *Store) RecoverStalledJobs(ctx context.Context, silentFor time.Duration) (*chimedb.RecoverNodeResult, error) {
	now, err := s.DBNow(ctx)
	if err != nil {
		return nil, err
	}
	cutoff := now.Add(-silentFor)
	res := &chimedb.RecoverNodeResult{}
	var bad badJobs
	err = s.InTx(ctx, func(tx *gorm.DB) error {
		*res, bad = chimedb.RecoverNodeResult{}, badJobs{}
		var jobs []models.Job
		var err error
		if bad.rows, err = s.lockMatching(tx, &jobs, "id, job_definition_id, status, control, attempt, max_attempts, recoveries, node_id, heartbeat_at, run_id", 1000,
			"status IN ? AND COALESCE(heartbeat_at, started_at, updated_at) < ? AND updated_at < ?", stalledStatuses, cutoff, cutoff); err != nil {
			return fmt.Errorf("select stalled jobs: %w", err)
		}
		if bad.failed, err = s.failBadJobs(tx, bad.rows, now, stalledStatuses); err != nil {
			return err
		}
		res.Failed = bad.failed
		if len(jobs) == 0 {
			return s.enqueueNotices(tx, res.Failed)
		}
		pols, err := definitionPolicies(tx, jobs)
		if err != nil {
			return err
		}
		logs, err := recoverCutOff(tx, jobs, pols, now, res, "by the reconciler", func(j models.Job, maxAttempts int) string {
			return fmt.Sprintf("no heartbeat from node %s for more than %s during attempt %d of %d", j.NodeID, silentFor, j.Attempt, maxAttempts)
		})
		if err != nil {
			return err
		}
		if err := s.decideRunsOfCut(tx, jobs, res, now); err != nil {
			return err
		}
		if err := s.enqueueNotices(tx, append(append([]int64(nil), res.Failed...), res.Stopped...)); err != nil {
			return err
		}
		return s.insertJobLogs(tx, logs)
	})
	if err != nil {
		return nil, fmt.Errorf("recover stalled jobs: %w", err)
	}
	s.logBadJobs(bad, "the reconciler")
	return res, nil
}

// ReleaseStuckQueued sends back to pending, without using an attempt, jobs
// queued on a node that never started them: queued_at and the row's last
// write both older than olderThan by the database's clock. A task engine
// starts a queued job as soon as its OnQueue returns, and a release that
// failed (the database was away) leaves the row queued on a live node that
// no longer knows it, which the dead-node reaper does not see. Releasing a
// job a node does still hold is safe: its start is guarded by status and
// node_id, so that node will not run it.
func (s *Store) ReleaseStuckQueued(ctx context.Context, olderThan time.Duration) ([]int64, error) {
	now, err := s.DBNow(ctx)
	if err != nil {
		return nil, err
	}
	cutoff := now.Add(-olderThan)
	var ids []int64
	var bad badJobs
	err = s.InTx(ctx, func(tx *gorm.DB) error {
		ids, bad = nil, badJobs{}
		var jobs []models.Job
		var err error
		if bad.rows, err = s.lockMatching(tx, &jobs, "id, node_id", 1000,
			"status = ? AND COALESCE(queued_at, updated_at) < ? AND updated_at < ?", models.JobQueued, cutoff, cutoff); err != nil {
			return fmt.Errorf("select stuck queued jobs: %w", err)
		}
		if bad.failed, err = s.failBadJobs(tx, bad.rows, now, []models.JobStatus{models.JobQueued}); err != nil {
			return err
		}
		if err := s.enqueueNotices(tx, bad.failed); err != nil {
			return err
		}
		var logs []models.JobLog
		for _, j := range jobs {
			res := tx.Exec(`UPDATE jobs SET status = ?, node_id = '', queued_at = NULL WHERE id = ? AND status = ?`,
				models.JobPending, j.ID, models.JobQueued)
			if res.Error != nil {
				return fmt.Errorf("release stuck queued job %d: %w", j.ID, res.Error)
			}
			if res.RowsAffected == 0 {
				continue
			}
			ids = append(ids, j.ID)
			logs = append(logs, models.JobLog{JobID: j.ID, Level: "warning", CreatedAt: now, Message: fmt.Sprintf(
				"released to pending by the reconciler: queued on node %s for more than %s without starting", j.NodeID, olderThan)})
		}
		return s.insertJobLogs(tx, logs)
	})
	if err != nil {
		return nil, fmt.Errorf("release stuck queued jobs: %w", err)
	}
	s.logBadJobs(bad, "the reconciler")
	return ids, nil
}

// ResetJob forces one queued, running or paused job back to pending, due
// now, whatever node holds it and whatever its attempts: the admin's repair
// for a job that is stuck (`chime job reset ID`, POST /api/v1/jobs/{id}/reset).
// The attempt count is kept, so the next run is the next attempt. A node
// still running it cannot report it afterwards: completions are guarded by
// node_id and status. A pending job is returned unchanged; a finished one is
// chimedb.ErrJobState, a missing one chimedb.ErrNotFound.
func (s *Store) ResetJob(ctx context.Context, id int64, reason string) (*models.Job, error) {
	return s.resetJob(ctx, id, reason, 0)
}

// ResetSilentJob is ResetJob for a job no node looks after any more: its
// node is not alive in nodes or has not beaten for failoverAfter, or the
// job itself (heartbeat_at, and updated_at on the database's clock) has
// been silent that long. A job a live node still runs is chimedb.ErrJobState with
// the node and the heartbeat ages in the message: resetting it would start
// attempt n+1 beside a process nobody can stop any more.
func (s *Store) ResetSilentJob(ctx context.Context, id int64, reason string, failoverAfter time.Duration) (*models.Job, error) {
	if failoverAfter <= 0 {
		return nil, fmt.Errorf("reset job %d: failoverAfter must be positive", id)
	}
	return s.resetJob(ctx, id, reason, failoverAfter)
}

// AskJobToStop sets control = stop on a queued, running or paused job, as
// a forced reset's first step, and returns the row. Unlike a stop through
// Admin.ControlJob it never cancels a pending job: a job that went back to
// pending in the meantime is returned as it is.
func (s *Store) AskJobToStop(ctx context.Context, id int64, reason string) (*models.Job, error) {
	now, err := s.DBNow(ctx)
	if err != nil {
		return nil, err
	}
	var job models.Job
	err = s.InTx(ctx, func(tx *gorm.DB) error {
		job = models.Job{}
		if err := first(s.forUpdate(tx.Where("id = ?", id)), &job); err != nil {
			return err
		}
		if job.Status == models.JobPending || job.Status.Finished() || job.Control == models.ControlStop {
			return nil
		}
		if err := tx.Exec(`UPDATE jobs SET control = ? WHERE id = ? AND status = ?`, models.ControlStop, id, job.Status).Error; err != nil {
			return err
		}
		msg := fmt.Sprintf("stop requested by %s before a forced reset (%s on node %s, attempt %d)", reason, job.Status, job.NodeID, job.Attempt)
		if err := s.insertJobLogs(tx, []models.JobLog{{JobID: id, Level: "warning", Message: msg, CreatedAt: now}}); err != nil {
			return err
		}
		return first(tx.Where("id = ?", id), &job)
	})
	if err != nil {
		return nil, fmt.Errorf("ask job %d to stop: %w", id, err)
	}
	return &job, nil
}

// resetJob is ResetJob; with liveWithin > 0 it refuses a job that a node
// alive within that window still looks after.
func (s *Store) resetJob(ctx context.Context, id int64, reason string, liveWithin time.Duration) (*models.Job, error) {
	now, err := s.DBNow(ctx)
	if err != nil {
		return nil, err
	}
	if reason == "" {
		reason = "an admin"
	}
	var job models.Job
	err = s.InTx(ctx, func(tx *gorm.DB) error {
		job = models.Job{}
		if err := first(s.forUpdate(tx.Where("id = ?", id)), &job); err != nil {
			return err
		}
		switch {
		case job.Status == models.JobPending:
			return nil
		case job.Status.Finished():
			return fmt.Errorf("job %d is %s: %w", id, job.Status, chimedb.ErrJobState)
		}
		if liveWithin > 0 {
			if err := s.refuseLive(tx, &job, now, liveWithin); err != nil {
				return err
			}
		}
		msg := fmt.Sprintf("reset to pending by %s (was %s on node %s, attempt %d)", reason, job.Status, job.NodeID, job.Attempt)
		if err := tx.Exec(`UPDATE jobs SET status = ?, node_id = '', control = '', queued_at = NULL, run_at = ? WHERE id = ? AND status = ?`,
			models.JobPending, now, id, job.Status).Error; err != nil {
			return err
		}
		if err := s.insertJobLogs(tx, []models.JobLog{{JobID: id, Level: "warning", Message: msg, CreatedAt: now}}); err != nil {
			return err
		}
		// Read into an empty row: gorm leaves a field as it was when its
		// column is NULL, and the reset cleared queued_at.
		job = models.Job{}
		return first(tx.Where("id = ?", id), &job)
	})
	if err != nil {
		return nil, fmt.Errorf("reset job %d: %w", id, err)
	}
	return &job, nil
}

// refuseLive returns chimedb.ErrJobState when job's node is alive in nodes and beat
// within window, and the job itself was written within window: the same
// judgements the dead-node reaper and RecoverStalledJobs make, so a reset
// is allowed exactly when failover or the reconciler would act. now is the
// database's clock.
func (s *Store) refuseLive(tx *gorm.DB, job *models.Job, now time.Time, window time.Duration) error {
	if job.NodeID == "" {
		return nil
	}
	var node struct {
		Status      string
		HeartbeatAt time.Time
	}
	res := tx.Raw("SELECT status, heartbeat_at FROM nodes WHERE id = ?", job.NodeID).Scan(&node)
	if res.Error != nil {
		return fmt.Errorf("read node %s: %w", job.NodeID, res.Error)
	}
	cutoff := now.Add(-window)
	if res.RowsAffected == 0 || node.Status != chimedb.NodeAlive || node.HeartbeatAt.Before(cutoff) {
		return nil
	}
	last := chimedb.JobLastHeard(job)
	if last.Before(cutoff) {
		return nil
	}
	return fmt.Errorf("job %d is %s on node %s, which is alive (its last heartbeat %s ago, the job's %s ago, "+
		"by the database's clock); a reset would start another attempt beside the running one. "+
		"Stop it, or wait until the node is silent for %s, or force the reset (it asks the job to stop first): %w",
		job.ID, job.Status, job.NodeID, age(now, node.HeartbeatAt), age(now, last), window, chimedb.ErrJobState)
}

func age(now, t time.Time) time.Duration {
	d := now.Sub(t)
	if d < 0 {
		d = 0
	}
	return d.Round(100 * time.Millisecond)
}

// FindScheduleAnomalies lists, up to limit each, active schedules without a
// trigger row, and triggers whose next_fire_at is more than overdueAfter
// behind the database's clock. Schedules created in the last overdueAfter
// are left out: the schedule engine creates their trigger on its next sync.
func (s *Store) FindScheduleAnomalies(ctx context.Context, overdueAfter time.Duration, limit int) (*chimedb.ScheduleAnomalies, error) {
	now, err := s.DBNow(ctx)
	if err != nil {
		return nil, err
	}
	cutoff := now.Add(-overdueAfter)
	out := &chimedb.ScheduleAnomalies{}
	db := s.db.WithContext(ctx)
	err = db.Raw(`SELECT s.id FROM schedules s LEFT JOIN time_triggers t ON t.schedule_id = s.id
		WHERE s.status = ? AND t.id IS NULL AND s.updated_at < ? ORDER BY s.id LIMIT ?`,
		models.ScheduleActive, cutoff, limit).Scan(&out.MissingTrigger).Error
	if err != nil {
		return nil, fmt.Errorf("find active schedules without a trigger: %w", err)
	}
	var trigs []models.TimeTrigger
	err = db.Raw(`SELECT t.schedule_id, t.next_fire_at FROM time_triggers t JOIN schedules s ON s.id = t.schedule_id
		WHERE s.status = ? AND t.next_fire_at < ? AND s.updated_at < ? ORDER BY t.next_fire_at LIMIT ?`,
		models.ScheduleActive, cutoff, cutoff, limit).Scan(&trigs).Error
	if err != nil {
		return nil, fmt.Errorf("find overdue triggers: %w", err)
	}
	for _, t := range trigs {
		if t.NextFireAt != nil {
			out.Overdue = append(out.Overdue, chimedb.OverdueTrigger{ScheduleID: t.ScheduleID, NextFireAt: t.NextFireAt.UTC(), Overdue: now.Sub(*t.NextFireAt)})
		}
	}
	return out, nil
}

// TouchSchedules sets updated_at = the database's now on active schedules,
// which is how any node tells the schedule engine to look at a schedule
// again: its sync re-reads rows by updated_at, creating a missing trigger
// and catching up an overdue one under the schedule's misfire policy.
func (s *Store) TouchSchedules(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	now, err := s.DBNow(ctx)
	if err != nil {
		return err
	}
	if err := s.db.WithContext(ctx).Exec("UPDATE schedules SET updated_at = ? WHERE id IN ? AND status = ?",
		now, ids, models.ScheduleActive).Error; err != nil {
		return fmt.Errorf("touch %d schedules: %w", len(ids), err)
	}
	return nil
}
