package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// MaxRecoveries caps the reruns after node loss that use no attempt
// (jobs.recoveries). A job that takes its node down every time it runs
// would otherwise be recovered, and take the next node down, forever: past
// the cap it is treated as if its definition did not request recovery.
const MaxRecoveries = 5

// RecoverNode cleans up after a process of p.NodeID that died without a
// graceful stop (kill -9, power loss): the new process with the same node
// id calls it before claiming, and the cluster's reaper for a dead node.
// Its queued jobs never started and go back to pending without using an
// attempt. Its running or paused jobs were cut off: see recoverCutOff.
// Every change is logged to job_logs in the same transaction, and the
// failed and stopped jobs' notices are recorded in it.
func (s *Store) RecoverNode(ctx context.Context, p *chimedb.RecoverNodeParams) (*chimedb.RecoverNodeResult, error) {
	now := DBTime(p.Now)
	res := &chimedb.RecoverNodeResult{}
	var bad badJobs
	err := s.InTx(ctx, func(tx *gorm.DB) error {
		*res, bad = chimedb.RecoverNodeResult{}, badJobs{}
		if p.UnlessAlive {
			// The lock orders this recovery with the node's registration,
			// which writes the same row: either the node registers after
			// the recovery commits, or the recovery sees it alive.
			var status []string
			if err := s.forUpdate(tx.Model(&models.Node{}).Where("id = ?", p.NodeID)).Pluck("status", &status).Error; err != nil {
				return fmt.Errorf("read the status of node %s: %w", p.NodeID, err)
			}
			if len(status) == 1 && status[0] == chimedb.NodeAlive {
				return nil
			}
		}
		var jobs []models.Job
		var err error
		if bad.rows, err = s.lockMatching(tx, &jobs, "id, job_definition_id, status, control, attempt, max_attempts, recoveries, run_id", 0,
			"node_id = ? AND status IN ?", p.NodeID, activeStatuses); err != nil {
			return fmt.Errorf("select jobs left by the dead process: %w", err)
		}
		if bad.failed, err = s.failBadJobs(tx, bad.rows, now, activeStatuses); err != nil {
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
		more, err := recoverCutOff(tx, cut, pols, now, res, "", func(j models.Job, maxAttempts int) string {
			return fmt.Sprintf("node %s died during attempt %d of %d", p.NodeID, j.Attempt, maxAttempts)
		})
		if err != nil {
			return err
		}
		logs = append(logs, more...)
		if err := s.decideRunsOfCut(tx, cut, res, now); err != nil {
			return err
		}
		if err := s.enqueueNotices(tx, append(append([]int64(nil), res.Failed...), res.Stopped...)); err != nil {
			return err
		}
		return s.insertJobLogs(tx, logs)
	})
	if err != nil {
		return nil, fmt.Errorf("recover jobs of node %s: %w", p.NodeID, err)
	}
	s.logBadJobs(bad, "the recovery of node "+p.NodeID)
	return res, nil
}

// recoverCutOff moves running or paused jobs whose attempt was cut off (the
// node died, or its heartbeats stopped) on:
//
//   - stopped, when a stop had been asked;
//   - back to pending, due now, with the attempt given back (attempt - 1,
//     recoveries + 1), when the definition requests recovery and the job
//     has been recovered fewer than MaxRecoveries times: the rerun is the
//     same attempt again, so attempt still says which try it is and
//     max_attempts is not used up by the loss of a node;
//   - back to pending, due now, for its next attempt while attempts remain;
//   - else failed, with the reason.
//
// why says what cut the attempt off, for jobs.error and job_logs; by names
// who decided ("by the reconciler"), or is empty. Every move is guarded by
// status, as all moves out of running are.
func recoverCutOff(tx *gorm.DB, jobs []models.Job, pols map[int64]defPolicy, now time.Time, res *chimedb.RecoverNodeResult,
	by string, why func(j models.Job, maxAttempts int) string) ([]models.JobLog, error) {
	if by != "" {
		by = " " + by
	}
	logs := make([]models.JobLog, 0, len(jobs))
	for _, j := range jobs {
		pol, ok := pols[j.JobDefinitionID]
		if !ok {
			// The definition is gone (plain SQL): take the column
			// defaults; the rerun fails at once, naming the definition.
			pol = defPolicy{recovery: true}
		}
		maxAttempts := j.MaxAttempts
		if maxAttempts <= 0 {
			maxAttempts = pol.maxAttempts
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
		case pol.recovery && j.Recoveries < MaxRecoveries:
			res.Recovered = append(res.Recovered, j.ID)
			level, msg = "warning", fmt.Sprintf("back to pending%s: %s; recovering (requests_recovery): attempt %d runs again without using an attempt (recovery %d of %d)",
				by, reason, j.Attempt, j.Recoveries+1, MaxRecoveries)+pauseLost(j)
			stmt, args = `UPDATE jobs SET status = ?, node_id = '', control = '', run_at = ?, error = ?,
				attempt = CASE WHEN attempt > 0 THEN attempt - 1 ELSE 0 END, recoveries = recoveries + 1 WHERE id = ? AND status IN ?`,
				[]any{models.JobPending, now, reason, j.ID, stalledStatuses}
		case j.Attempt < maxAttempts:
			res.Retried = append(res.Retried, j.ID)
			level, msg = "warning", "back to pending"+by+": "+reason+"; retrying"+noRecovery(pol, j)+pauseLost(j)
			stmt, args = `UPDATE jobs SET status = ?, node_id = '', control = '', run_at = ?, error = ? WHERE id = ? AND status IN ?`,
				[]any{models.JobPending, now, reason, j.ID, stalledStatuses}
		default:
			res.Failed = append(res.Failed, j.ID)
			reason += "; no attempts left" + noRecovery(pol, j)
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

// decideRunsOfCut decides, in a recovery's transaction, the workflow runs
// of the jobs it ended (failed or stopped), as a completion does: a
// failure edge goes on at once rather than at the reconciler's next pass,
// and a run under the stop policy says it is stopping before the
// completion of another of its steps could start the step after (see
// localReady). A run that cannot be decided here must not hold back the
// recovery: AdvanceRuns decides it later, or fails it with the reason.
func (s *Store) decideRunsOfCut(tx *gorm.DB, jobs []models.Job, res *chimedb.RecoverNodeResult, now time.Time) error {
	ended := make(map[int64]models.JobStatus, len(res.Failed)+len(res.Stopped))
	for _, id := range res.Failed {
		ended[id] = models.JobFailed
	}
	for _, id := range res.Stopped {
		ended[id] = models.JobStopped
	}
	var outs []chimedb.JobOutcome
	for _, j := range jobs {
		if st, ok := ended[j.ID]; ok && j.RunID != nil {
			outs = append(outs, chimedb.JobOutcome{ID: j.ID, RunID: *j.RunID, Status: st})
		}
	}
	if len(outs) == 0 {
		return nil
	}
	if err := s.savepoint(tx, func() error { return s.advanceRunsOf(tx, outs, nil, now) }); err != nil {
		if transient(err) {
			return err
		}
		s.log.WithError(err).Error("could not decide the workflow runs of the recovered jobs; the reconciler retries")
	}
	return nil
}

// noRecovery says why a job cut off by node loss was not recovered for free.
func noRecovery(pol defPolicy, j models.Job) string {
	if !pol.recovery {
		return " (requests_recovery is off)"
	}
	return fmt.Sprintf(" (recovered %d times already, the most a job is)", j.Recoveries)
}

// defPolicy is what recovery needs of a job's definition.
type defPolicy struct {
	maxAttempts int
	recovery    bool
}

func definitionPolicies(tx *gorm.DB, jobs []models.Job) (map[int64]defPolicy, error) {
	ids := make([]int64, 0, len(jobs))
	for _, j := range jobs {
		ids = append(ids, j.JobDefinitionID)
	}
	defs, err := definitionsByID(tx, ids)
	if err != nil {
		return nil, fmt.Errorf("read max_attempts and requests_recovery of definitions: %w", err)
	}
	out := make(map[int64]defPolicy, len(defs))
	for _, d := range defs {
		if d.Unreadable == "" { // else as if gone: the rerun fails at once, with the reason
			out[d.ID] = defPolicy{maxAttempts: d.MaxAttempts, recovery: d.RequestsRecovery}
		}
	}
	return out, nil
}

// pauseLost says so when a job cut off while paused (or asked to pause)
// goes back to pending: the next attempt runs unpaused.
func pauseLost(j models.Job) string {
	if j.Status == models.JobPaused || j.Control == models.ControlPause {
		return "; pause lost: the job was paused (or asked to pause) and the retry runs unpaused (pause it again if needed)"
	}
	return ""
}
