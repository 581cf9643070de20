package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/chimesched/chime/models"
)

// forUpdate locks the selected rows on MySQL; SQLite's single writer makes
// the lock implicit.
func (s *Store) forUpdate(q *gorm.DB) *gorm.DB {
	if s.dialect == MySQL {
		return q.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	return q
}

// jobsByID names the jobs table for statements that pick rows by id. On
// MySQL it forces the primary key: with id IN (…) and node_id = ? in one
// WHERE, the optimizer may otherwise walk idx_jobs_node, and a locking read
// along that index waits on rows other transactions of this node hold
// (the claim's fresh queued rows, the completer's), serializing the
// engine's writers behind each other.
func (s *Store) jobsByID() string {
	if s.dialect == MySQL {
		return "jobs FORCE INDEX (PRIMARY)"
	}
	return "jobs"
}

// lockClause is the locking suffix of a SELECT on MySQL.
func (s *Store) lockClause() string {
	if s.dialect == MySQL {
		return " FOR UPDATE"
	}
	return ""
}

// StartJobsParams moves queued jobs to running.
type StartJobsParams struct {
	NodeID string
	IDs    []int64
	Now    time.Time
}

// StartJobs moves the jobs in p.IDs from queued to running in one
// transaction: attempt + 1, started_at and heartbeat_at = p.Now. Only rows
// still queued on p.NodeID and not asked to stop move; the result maps each
// job that moved to its new attempt number, so a caller whose job is absent
// knows somebody else changed it (a cancel, a recovery) and must not run it.
func (s *Store) StartJobs(ctx context.Context, p *StartJobsParams) (map[int64]int, error) {
	if len(p.IDs) == 0 {
		return map[int64]int{}, nil
	}
	now := DBTime(p.Now)
	started := make(map[int64]int, len(p.IDs))
	err := s.InTx(ctx, func(tx *gorm.DB) error {
		clear(started)
		var rows []struct {
			ID      int64
			Attempt int
		}
		if err := tx.Raw(`SELECT id, attempt FROM `+s.jobsByID()+` WHERE id IN ? AND node_id = ? AND status = ? AND control <> ?`+s.lockClause(),
			p.IDs, p.NodeID, models.JobQueued, models.ControlStop).Scan(&rows).Error; err != nil {
			return fmt.Errorf("select queued jobs: %w", err)
		}
		if len(rows) == 0 {
			return nil
		}
		ids := make([]int64, len(rows))
		for i, r := range rows {
			ids[i] = r.ID
			started[r.ID] = r.Attempt + 1
		}
		return tx.Exec(`UPDATE `+s.jobsByID()+` SET status = ?, attempt = attempt + 1, started_at = ?, heartbeat_at = ? WHERE id IN ?`,
			models.JobRunning, now, now, ids).Error
	})
	if err != nil {
		return nil, fmt.Errorf("start %d jobs on node %s: %w", len(p.IDs), p.NodeID, err)
	}
	return started, nil
}

// ReleaseJobsParams sends queued jobs back to pending.
type ReleaseJobsParams struct {
	NodeID string
	// IDs limits the release to these jobs; nil releases every job queued on NodeID.
	IDs []int64
	// Reason is written to job_logs for each released job.
	Reason string
	Now    time.Time
}

// ReleaseJobs puts jobs queued on p.NodeID back to pending without using an
// attempt (they never started), and logs p.Reason for each. It returns the
// ids released.
func (s *Store) ReleaseJobs(ctx context.Context, p *ReleaseJobsParams) ([]int64, error) {
	if p.IDs != nil && len(p.IDs) == 0 {
		return nil, nil
	}
	now := DBTime(p.Now)
	var ids []int64
	err := s.InTx(ctx, func(tx *gorm.DB) error {
		ids = nil
		q := tx.Model(&models.Job{}).Where("node_id = ? AND status = ?", p.NodeID, models.JobQueued)
		if p.IDs != nil {
			q = q.Where("id IN ?", p.IDs)
		}
		if err := s.forUpdate(q).Pluck("id", &ids).Error; err != nil {
			return fmt.Errorf("select queued jobs: %w", err)
		}
		if len(ids) == 0 {
			return nil
		}
		if err := tx.Exec(`UPDATE jobs SET status = ?, node_id = '', queued_at = NULL WHERE id IN ?`,
			models.JobPending, ids).Error; err != nil {
			return err
		}
		return insertJobLogs(tx, logsFor(ids, "info", p.Reason, now))
	})
	if err != nil {
		return nil, fmt.Errorf("release queued jobs of node %s: %w", p.NodeID, err)
	}
	return ids, nil
}

// CancelStopRequested cancels every pending or queued job whose control
// says stop, clearing control and logging the cancel. Any node may run it:
// the rows are not running anywhere. It returns the ids canceled.
func (s *Store) CancelStopRequested(ctx context.Context, now time.Time) ([]int64, error) {
	now = DBTime(now)
	var ids []int64
	err := s.InTx(ctx, func(tx *gorm.DB) error {
		ids = nil
		// status IN (…) first so idx_jobs_claim bounds the scan to live rows.
		q := tx.Model(&models.Job{}).Where("status IN ? AND control = ?",
			[]models.JobStatus{models.JobPending, models.JobQueued}, models.ControlStop)
		if s.dialect == MySQL {
			q = q.Clauses(clause.Locking{Strength: "UPDATE", Options: "SKIP LOCKED"})
		}
		if err := q.Pluck("id", &ids).Error; err != nil {
			return fmt.Errorf("select jobs to cancel: %w", err)
		}
		if len(ids) == 0 {
			return nil
		}
		if err := tx.Exec(`UPDATE jobs SET status = ?, control = '', finished_at = ? WHERE id IN ?`,
			models.JobCanceled, now, ids).Error; err != nil {
			return err
		}
		return insertJobLogs(tx, logsFor(ids, "info", "canceled: control = stop before the job started", now))
	})
	if err != nil {
		return nil, fmt.Errorf("cancel jobs asked to stop: %w", err)
	}
	return ids, nil
}

// ControlRequest is a control action waiting on a job this node runs.
type ControlRequest struct {
	ID      int64
	Status  models.JobStatus
	Control models.JobControl
}

// ControlRequests lists this node's running or paused jobs whose control
// column asks for something (served by idx_jobs_node).
func (s *Store) ControlRequests(ctx context.Context, nodeID string) ([]ControlRequest, error) {
	var out []ControlRequest
	err := s.db.WithContext(ctx).Model(&models.Job{}).Select("id, status, control").
		Where("node_id = ? AND status IN ? AND control <> ''", nodeID,
			[]models.JobStatus{models.JobRunning, models.JobPaused}).
		Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("read control requests of node %s: %w", nodeID, err)
	}
	return out, nil
}

// ControlOutcomeParams records what the engine did about a control request.
type ControlOutcomeParams struct {
	ID     int64
	NodeID string
	// To is the new status (paused or running), or "" to leave status alone
	// (a refusal, or a stop whose status is written when Execute returns).
	To models.JobStatus
}

// SetControlOutcome clears control and, when p.To is set, moves the job to
// it, provided the job is still running or paused on p.NodeID. It reports
// whether the row was there to change.
func (s *Store) SetControlOutcome(ctx context.Context, p *ControlOutcomeParams) (bool, error) {
	set := map[string]any{"control": models.ControlNone}
	if p.To != "" {
		set["status"] = p.To
	}
	res := s.db.WithContext(ctx).Model(&models.Job{}).
		Where("id = ? AND node_id = ? AND status IN ?", p.ID, p.NodeID,
			[]models.JobStatus{models.JobRunning, models.JobPaused}).
		Updates(set)
	if res.Error != nil {
		return false, fmt.Errorf("record control outcome of job %d: %w", p.ID, res.Error)
	}
	return res.RowsAffected > 0, nil
}

// HeartbeatJobs sets heartbeat_at on every job running or paused on nodeID.
func (s *Store) HeartbeatJobs(ctx context.Context, nodeID string, now time.Time) (int64, error) {
	res := s.db.WithContext(ctx).Exec(`UPDATE jobs SET heartbeat_at = ? WHERE node_id = ? AND status IN ?`,
		DBTime(now), nodeID, []models.JobStatus{models.JobRunning, models.JobPaused})
	if res.Error != nil {
		return 0, fmt.Errorf("heartbeat jobs of node %s: %w", nodeID, res.Error)
	}
	return res.RowsAffected, nil
}
