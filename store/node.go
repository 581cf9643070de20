package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/chimesched/chime/models"
)

// RecoverNodeParams names a node whose previous process died.
type RecoverNodeParams struct {
	NodeID string
	Now    time.Time
}

// RecoverNodeResult counts what RecoverNode did.
type RecoverNodeResult struct {
	Released []int64 // queued → pending, attempt unchanged
	Retried  []int64 // running/paused → pending for another attempt
	Failed   []int64 // running/paused with no attempt left → failed
	Stopped  []int64 // running/paused with control = stop → stopped
}

// RecoverNode cleans up after a process of p.NodeID that died without a
// graceful stop (kill -9, power loss): the new process with the same node
// id calls it before claiming. Its queued jobs never started and go back to
// pending without using an attempt. Its running or paused jobs were cut off
// and have used one: they go back to pending, due now, while attempts
// remain, else they fail with the reason. One asked to stop becomes stopped.
// Every change is logged to job_logs in the same transaction.
func (s *Store) RecoverNode(ctx context.Context, p *RecoverNodeParams) (*RecoverNodeResult, error) {
	now := DBTime(p.Now)
	res := &RecoverNodeResult{}
	err := s.InTx(ctx, func(tx *gorm.DB) error {
		*res = RecoverNodeResult{}
		var jobs []models.Job
		q := tx.Select("id, job_definition_id, status, control, attempt, max_attempts").
			Where("node_id = ? AND status IN ?", p.NodeID, activeStatuses)
		if err := s.forUpdate(q).Find(&jobs).Error; err != nil {
			return fmt.Errorf("select jobs left by the dead process: %w", err)
		}
		if len(jobs) == 0 {
			return nil
		}
		defMax, err := definitionMaxAttempts(tx, jobs)
		if err != nil {
			return err
		}
		var logs []models.JobLog
		for _, j := range jobs {
			maxAttempts := j.MaxAttempts
			if maxAttempts <= 0 {
				maxAttempts = defMax[j.JobDefinitionID]
			}
			maxAttempts = max(maxAttempts, 1)
			var msg, level string
			var err error
			switch {
			case j.Status == models.JobQueued:
				res.Released = append(res.Released, j.ID)
				level, msg = "warning", fmt.Sprintf("released to pending: node %s restarted before the job started", p.NodeID)
				err = tx.Exec(`UPDATE jobs SET status = ?, node_id = '', queued_at = NULL WHERE id = ?`, models.JobPending, j.ID).Error
			case j.Control == models.ControlStop:
				res.Stopped = append(res.Stopped, j.ID)
				reason := fmt.Sprintf("node %s died during attempt %d, which had been asked to stop", p.NodeID, j.Attempt)
				level, msg = "warning", "stopped: "+reason
				err = tx.Exec(`UPDATE jobs SET status = ?, control = '', finished_at = ?, error = ? WHERE id = ?`,
					models.JobStopped, now, reason, j.ID).Error
			case j.Attempt < maxAttempts:
				res.Retried = append(res.Retried, j.ID)
				reason := fmt.Sprintf("node %s died during attempt %d of %d", p.NodeID, j.Attempt, maxAttempts)
				level, msg = "warning", reason+"; retrying"
				err = tx.Exec(`UPDATE jobs SET status = ?, node_id = '', control = '', run_at = ?, error = ? WHERE id = ?`,
					models.JobPending, now, reason, j.ID).Error
			default:
				res.Failed = append(res.Failed, j.ID)
				reason := fmt.Sprintf("node %s died during attempt %d of %d; no attempts left", p.NodeID, j.Attempt, maxAttempts)
				level, msg = "error", "failed: "+reason
				err = tx.Exec(`UPDATE jobs SET status = ?, control = '', finished_at = ?, error = ? WHERE id = ?`,
					models.JobFailed, now, reason, j.ID).Error
			}
			if err != nil {
				return fmt.Errorf("recover job %d: %w", j.ID, err)
			}
			logs = append(logs, models.JobLog{JobID: j.ID, Level: level, Message: msg, CreatedAt: now})
		}
		return insertJobLogs(tx, logs)
	})
	if err != nil {
		return nil, fmt.Errorf("recover jobs of node %s: %w", p.NodeID, err)
	}
	return res, nil
}

func definitionMaxAttempts(tx *gorm.DB, jobs []models.Job) (map[int64]int, error) {
	ids := make([]int64, 0, len(jobs))
	for _, j := range jobs {
		ids = append(ids, j.JobDefinitionID)
	}
	var defs []models.JobDefinition
	if err := tx.Select("id, max_attempts").Where("id IN ?", ids).Find(&defs).Error; err != nil {
		return nil, fmt.Errorf("read max_attempts of definitions: %w", err)
	}
	out := make(map[int64]int, len(defs))
	for _, d := range defs {
		out[d.ID] = d.MaxAttempts
	}
	return out, nil
}
