package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// finishedStatuses are the states no engine moves a job out of.
var finishedStatuses = []models.JobStatus{models.JobSucceeded, models.JobFailed, models.JobStopped, models.JobCanceled}

// checkAge refuses an age that would put the cutoff at or after now, which
// would delete every finished row: days × 24h overflowing time.Duration
// turns a huge retention into just such a negative age.
func checkAge(olderThan time.Duration) error {
	if olderThan <= 0 {
		return fmt.Errorf("age must be positive, got %s", olderThan)
	}
	return nil
}

// DeleteFinishedJobs deletes at most batch finished jobs whose finished_at
// is older than olderThan by the database's clock, with their job_logs and
// notifications, in one transaction, and returns how many jobs went. Callers loop until it
// returns fewer than batch: small transactions keep row locks and undo logs
// short, so claims and fires on the same tables are not held up.
//
// Deleting an old fire frees its (schedule_id, scheduled_at) key; that is
// safe because the schedule engine never fires a time before the trigger's
// last_fire_at again.
func (s *Store) DeleteFinishedJobs(ctx context.Context, olderThan time.Duration, batch int) (int, error) {
	if err := checkAge(olderThan); err != nil {
		return 0, fmt.Errorf("delete finished jobs: %w", err)
	}
	if batch <= 0 {
		batch = 500
	}
	now, err := s.DBNow(ctx)
	if err != nil {
		return 0, err
	}
	cutoff := now.Add(-olderThan)
	var n int
	err = s.InTx(ctx, func(tx *gorm.DB) error {
		n = 0
		var ids []int64
		if err := tx.Raw(finishedBeforeSQL, finishedBeforeArgs(cutoff, batch)...).Scan(&ids).Error; err != nil {
			return fmt.Errorf("select finished jobs: %w", err)
		}
		if len(ids) == 0 {
			return nil
		}
		if err := tx.Exec("DELETE FROM job_logs WHERE job_id IN ?", ids).Error; err != nil {
			return fmt.Errorf("delete job logs: %w", err)
		}
		// A notice still pending for a job this old is not worth sending.
		if err := tx.Exec("DELETE FROM notifications WHERE job_id IN ?", ids).Error; err != nil {
			return fmt.Errorf("delete notifications: %w", err)
		}
		res := tx.Exec("DELETE FROM jobs WHERE id IN ? AND status IN ?", ids, finishedStatuses)
		if res.Error != nil {
			return fmt.Errorf("delete jobs: %w", res.Error)
		}
		n = int(res.RowsAffected)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("delete finished jobs older than %s: %w", olderThan, err)
	}
	return n, nil
}

// finishedBeforeSQL picks finished jobs that finished before a cutoff. A
// job finishes after it became due, so run_at < cutoff only narrows the
// set, and its claim_key bound makes the scan a range on
// idx_jobs_claim_order; status keeps a job that an admin re-queued
// (finished_at left set) out of it. The order of deletion does not matter.
const finishedBeforeSQL = `SELECT id FROM jobs WHERE status IN ? AND claim_key <= ? AND run_at < ? AND finished_at < ? LIMIT ?`

func finishedBeforeArgs(cutoff time.Time, batch int) []any {
	return []any{finishedStatuses, ClaimKeyUntil(cutoff), cutoff, cutoff, batch}
}

// ExplainDeleteFinishedJobs returns the database's plan for the SELECT
// with which DeleteFinishedJobs picks its batch, for tests that prove it
// reads a range of idx_jobs_claim_order.
func (s *Store) ExplainDeleteFinishedJobs(ctx context.Context, cutoff time.Time, batch int) (string, error) {
	return s.explain(ctx, finishedBeforeSQL, finishedBeforeArgs(cutoff, batch)...)
}

// DeleteGoneNodes deletes the rows of nodes stopped or dead for longer than
// olderThan by the database's clock that hold no unfinished job. A node id
// defaults to hostname-pid, so every restart adds a row; without this the
// table would only grow.
func (s *Store) DeleteGoneNodes(ctx context.Context, olderThan time.Duration) (int, error) {
	if err := checkAge(olderThan); err != nil {
		return 0, fmt.Errorf("delete gone nodes: %w", err)
	}
	now, err := s.DBNow(ctx)
	if err != nil {
		return 0, err
	}
	res := s.db.WithContext(ctx).Exec(`DELETE FROM nodes WHERE status IN ? AND heartbeat_at < ?
		AND NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.node_id = nodes.id AND jobs.status IN ?)`,
		[]string{chimedb.NodeStopped, chimedb.NodeDead}, now.Add(-olderThan), activeStatuses)
	if res.Error != nil {
		return 0, fmt.Errorf("delete nodes gone for %s: %w", olderThan, res.Error)
	}
	return int(res.RowsAffected), nil
}
