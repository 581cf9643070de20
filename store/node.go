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
// Every change is logged to job_logs in the same transaction, and the
// failed and stopped jobs' notices are recorded in it.
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
		var cut []models.Job
		for _, j := range jobs {
			if j.Status != models.JobQueued {
				cut = append(cut, j)
				continue
			}
			res.Released = append(res.Released, j.ID)
			if err := tx.Exec(`UPDATE jobs SET status = ?, node_id = '', queued_at = NULL WHERE id = ?`, models.JobPending, j.ID).Error; err != nil {
				return fmt.Errorf("release job %d: %w", j.ID, err)
			}
			logs = append(logs, models.JobLog{JobID: j.ID, Level: "warning", CreatedAt: now,
				Message: fmt.Sprintf("released to pending: node %s restarted before the job started", p.NodeID)})
		}
		more, err := recoverCutOff(tx, cut, defMax, now, res, "", func(j models.Job, maxAttempts int) string {
			return fmt.Sprintf("node %s died during attempt %d of %d", p.NodeID, j.Attempt, maxAttempts)
		})
		if err != nil {
			return err
		}
		logs = append(logs, more...)
		if err := s.enqueueNotices(tx, append(append([]int64(nil), res.Failed...), res.Stopped...)); err != nil {
			return err
		}
		return insertJobLogs(tx, logs)
	})
	if err != nil {
		return nil, fmt.Errorf("recover jobs of node %s: %w", p.NodeID, err)
	}
	return res, nil
}

// recoverCutOff moves running or paused jobs whose attempt was cut off (the
// node died, or its heartbeats stopped) on: stopped when a stop had been
// asked, back to pending, due now, while attempts remain, else failed. why
// says what cut the attempt off, for jobs.error and job_logs; by names who
// decided ("by the reconciler"), or is empty. Every move is guarded by
// status, as all moves out of running are.
func recoverCutOff(tx *gorm.DB, jobs []models.Job, defMax map[int64]int, now time.Time, res *RecoverNodeResult,
	by string, why func(j models.Job, maxAttempts int) string) ([]models.JobLog, error) {
	if by != "" {
		by = " " + by
	}
	logs := make([]models.JobLog, 0, len(jobs))
	for _, j := range jobs {
		maxAttempts := j.MaxAttempts
		if maxAttempts <= 0 {
			maxAttempts = defMax[j.JobDefinitionID]
		}
		maxAttempts = max(maxAttempts, 1)
		reason := why(j, maxAttempts)
		var level, msg, stmt string
		var args []any
		switch {
		case j.Control == models.ControlStop:
			res.Stopped = append(res.Stopped, j.ID)
			level, msg = "warning", "stopped"+by+": "+reason+", which had been asked to stop"
			stmt, args = `UPDATE jobs SET status = ?, control = '', finished_at = ?, error = ? WHERE id = ? AND status IN ?`,
				[]any{models.JobStopped, now, reason, j.ID, stalledStatuses}
		case j.Attempt < maxAttempts:
			res.Retried = append(res.Retried, j.ID)
			level, msg = "warning", "back to pending"+by+": "+reason+"; retrying"
			stmt, args = `UPDATE jobs SET status = ?, node_id = '', control = '', run_at = ?, error = ? WHERE id = ? AND status IN ?`,
				[]any{models.JobPending, now, reason, j.ID, stalledStatuses}
		default:
			res.Failed = append(res.Failed, j.ID)
			reason += "; no attempts left"
			level, msg = "error", "failed"+by+": "+reason
			stmt, args = `UPDATE jobs SET status = ?, control = '', finished_at = ?, error = ? WHERE id = ? AND status IN ?`,
				[]any{models.JobFailed, now, reason, j.ID, stalledStatuses}
		}
		if err := tx.Exec(stmt, args...).Error; err != nil {
			return nil, fmt.Errorf("recover job %d: %w", j.ID, err)
		}
		logs = append(logs, models.JobLog{JobID: j.ID, Level: level, Message: msg, CreatedAt: now})
	}
	return logs, nil
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
