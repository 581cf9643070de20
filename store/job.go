package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// forUpdate locks the selected rows on MySQL and PostgreSQL; SQLite's
// single writer makes the lock implicit.
func (s *Store) forUpdate(q *gorm.DB) *gorm.DB {
	if s.rowLocks() {
		return q.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	return q
}

// lockMatching reads into out the columns cols of the jobs that match where
// (at most limit when limit > 0, in id order) and locks their rows, for a
// sweep that moves them. A plain read finds them and a locking read by
// primary key checks where again: a locking read along idx_jobs_claim_order
// locks every row it passes before the rest of where is seen (MySQL), so a
// sweep over the running rows for a few stalled ones, or over every active
// row for a dead node's, waited on each row a completion or a fire held
// and held the live rows it had passed meanwhile (1.4 s seen at 14,000
// jobs/s). The rows the sweep wants are rarely locked by anyone else.
//
// A row that cannot be run as it is (see readJobs) is not in out but in
// bad, locked too: the sweep fails it (failBadJobs).
func (s *Store) lockMatching(tx *gorm.DB, out *[]models.Job, cols string, limit int, where string, args ...any) (bad []badRow, err error) {
	var ids []int64
	q := tx.Model(&models.Job{}).Where(where, args...).Order("id")
	if limit > 0 {
		q = q.Limit(limit)
	}
	if err := q.Pluck("id", &ids).Error; err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		*out = nil
		return nil, nil
	}
	*out, bad, err = readJobs(s.forUpdate(tx.Table(s.jobsByID()).Select(cols).Where("id IN ?", ids).Where(where, args...).Order("id")), true)
	return bad, err
}

// jobsByID names the jobs table for statements that pick rows by id. On
// MySQL it forces the primary key: with id IN (…) and status IN (…) in one
// WHERE, the optimizer may otherwise walk idx_jobs_claim_order, and a
// locking read along that index waits on rows other transactions of this node hold
// (the claim's fresh queued rows, the completer's), serializing the
// engine's writers behind each other.
func (s *Store) jobsByID() string {
	if s.dialect == MySQL {
		return "jobs FORCE INDEX (PRIMARY)"
	}
	return "jobs"
}

// lockClause is the locking suffix of a SELECT on MySQL and PostgreSQL.
func (s *Store) lockClause() string {
	if s.rowLocks() {
		return " FOR UPDATE"
	}
	return ""
}

// StartJobs moves the jobs in p.Jobs from queued to running: attempt + 1,
// started_at and heartbeat_at = p.Now. Only rows still queued on p.NodeID
// with the attempt count of their claim and not asked to stop move; the
// result maps each job that moved to its new attempt number, so a caller
// whose job is absent knows somebody else changed it (a cancel, a
// recovery, a release and a claim by another node) and must not run it.
//
// It is one guarded UPDATE by primary key in autocommit, one round trip on
// every job's way to Execute: the guard makes a locking SELECT first
// unnecessary, and when every row matched (the rule) the new attempts are
// known without reading anything. Only when some row did not match does it
// read which ones moved: the rows running on p.NodeID since p.Now.
func (s *Store) StartJobs(ctx context.Context, p *chimedb.StartJobsParams) (map[int64]int, error) {
	started := make(map[int64]int, len(p.Jobs))
	if len(p.Jobs) == 0 {
		return started, nil
	}
	now := DBTime(p.Now)
	// Group ids by claimed attempt: (attempt = ? AND id IN (…)) OR …, which
	// the range optimizer still turns into primary key lookups.
	want := make(map[int64]int, len(p.Jobs))
	byAttempt := map[int][]int64{}
	var attempts []int
	for _, j := range p.Jobs {
		if _, dup := want[j.ID]; dup {
			continue // one start per row; a second copy is not run
		}
		want[j.ID] = j.Attempt + 1
		if _, ok := byAttempt[j.Attempt]; !ok {
			attempts = append(attempts, j.Attempt)
		}
		byAttempt[j.Attempt] = append(byAttempt[j.Attempt], j.ID)
	}
	var cond strings.Builder
	args := []any{models.JobRunning, now, now, p.NodeID, models.JobQueued, models.ControlStop}
	for i, a := range attempts {
		if i > 0 {
			cond.WriteString(" OR ")
		}
		cond.WriteString("(attempt = ? AND id IN ?)")
		args = append(args, a, byAttempt[a])
	}
	res := s.db.WithContext(ctx).Exec(`UPDATE `+s.jobsByID()+` SET status = ?, attempt = attempt + 1, started_at = ?, heartbeat_at = ?
		WHERE node_id = ? AND status = ? AND control <> ? AND (`+cond.String()+`)`, args...)
	if res.Error != nil {
		return nil, fmt.Errorf("start %d jobs on node %s: %w", len(want), p.NodeID, res.Error)
	}
	if res.RowsAffected == int64(len(want)) {
		return want, nil
	}
	ids := make([]int64, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	var moved []int64
	if err := s.db.WithContext(ctx).Raw(`SELECT id FROM `+s.jobsByID()+` WHERE id IN ? AND node_id = ? AND status IN ? AND started_at = ?`,
		ids, p.NodeID, []models.JobStatus{models.JobRunning, models.JobPaused}, now).Scan(&moved).Error; err != nil {
		return nil, fmt.Errorf("start %d jobs on node %s: read which started: %w", len(want), p.NodeID, err)
	}
	for _, id := range moved {
		started[id] = want[id]
	}
	return started, nil
}

// ReleaseJobs puts jobs queued on p.NodeID back to pending without using an
// attempt (they never started), and logs p.Reason for each. It returns the
// ids released.
//
// With p.Started it releases instead jobs of p.IDs that a claim moved
// straight to running (chimedb.ClaimedJob.Started) and that never began: still
// running on p.NodeID since p.StartedAt. Their attempt is given back and
// started_at cleared, as if the claim had never happened.
func (s *Store) ReleaseJobs(ctx context.Context, p *chimedb.ReleaseJobsParams) ([]int64, error) {
	if p.IDs != nil && len(p.IDs) == 0 || p.Started && len(p.IDs) == 0 {
		return nil, nil
	}
	now := DBTime(p.Now)
	var ids []int64
	err := s.InTx(ctx, func(tx *gorm.DB) error {
		ids = nil
		q := tx.Model(&models.Job{}).Where("node_id = ? AND status = ?", p.NodeID, models.JobQueued)
		if p.Started {
			q = tx.Model(&models.Job{}).Where("node_id = ? AND status = ? AND started_at = ?", p.NodeID, models.JobRunning, DBTime(p.StartedAt))
		}
		if p.IDs != nil {
			q = q.Where("id IN ?", p.IDs)
		}
		if err := s.forUpdate(q).Pluck("id", &ids).Error; err != nil {
			return fmt.Errorf("select queued jobs: %w", err)
		}
		if len(ids) == 0 {
			return nil
		}
		upd := `UPDATE jobs SET status = ?, node_id = '', queued_at = NULL WHERE id IN ?`
		if p.Started {
			upd = `UPDATE jobs SET status = ?, node_id = '', queued_at = NULL, started_at = NULL, heartbeat_at = NULL,
				attempt = CASE WHEN attempt > 0 THEN attempt - 1 ELSE 0 END WHERE id IN ?`
		}
		if err := tx.Exec(upd, models.JobPending, ids).Error; err != nil {
			return err
		}
		return s.insertJobLogs(tx, logsFor(ids, "info", p.Reason, now))
	})
	if err != nil {
		return nil, fmt.Errorf("release queued jobs of node %s: %w", p.NodeID, err)
	}
	return ids, nil
}

// CancelStopRequested cancels every pending or queued job whose control
// says stop, clearing control and logging the cancel. Any node may run it:
// the rows are not running anywhere. It returns the ids canceled.
//
// control has no index, so finding the requests means walking the pending
// and queued part of idx_jobs_claim_order: the whole backlog. That walk is a plain
// (consistent, READ COMMITTED) read that takes no locks; only the few rows
// it finds are then locked, by primary key, and re-checked. A locking walk
// would lock and release every pending row each ControlInterval, which
// stalls the claim (SKIP LOCKED passes over those rows, a start or
// completion waits on them) and costs the server far more CPU.
func (s *Store) CancelStopRequested(ctx context.Context, now time.Time) ([]int64, error) {
	now = DBTime(now)
	live := []models.JobStatus{models.JobPending, models.JobQueued}
	var found []int64
	// status IN (…) bounds the scan to live rows of idx_jobs_claim_order.
	if err := s.db.WithContext(ctx).Model(&models.Job{}).Where("status IN ? AND control = ?", live, models.ControlStop).
		Pluck("id", &found).Error; err != nil {
		return nil, fmt.Errorf("find jobs to cancel: %w", err)
	}
	if len(found) == 0 {
		return nil, nil
	}
	var ids []int64
	err := s.InTx(ctx, func(tx *gorm.DB) error {
		ids = nil
		// Re-checked under lock: a row may have been claimed or started
		// since the read. SKIP LOCKED leaves a row a claim holds right now
		// to the next tick.
		q := tx.Table(s.jobsByID()).Where("id IN ? AND status IN ? AND control = ?", found, live, models.ControlStop)
		if s.rowLocks() {
			q = q.Clauses(clause.Locking{Strength: "UPDATE", Options: "SKIP LOCKED"})
		}
		if err := q.Pluck("id", &ids).Error; err != nil {
			return fmt.Errorf("select jobs to cancel: %w", err)
		}
		if len(ids) == 0 {
			return nil
		}
		if err := tx.Exec(`UPDATE `+s.jobsByID()+` SET status = ?, control = '', finished_at = ? WHERE id IN ?`,
			models.JobCanceled, now, ids).Error; err != nil {
			return err
		}
		if err := s.enqueueNotices(tx, ids); err != nil {
			return err
		}
		return s.insertJobLogs(tx, logsFor(ids, "info", "canceled: control = stop before the job started", now))
	})
	if err != nil {
		return nil, fmt.Errorf("cancel jobs asked to stop: %w", err)
	}
	return ids, nil
}

// ControlRequests lists this node's running or paused jobs whose control
// column asks for something (idx_jobs_claim_order bounds it to the live rows).
func (s *Store) ControlRequests(ctx context.Context, nodeID string) ([]chimedb.ControlRequest, error) {
	var out []chimedb.ControlRequest
	err := s.db.WithContext(ctx).Model(&models.Job{}).Select("id, status, control").
		Where("node_id = ? AND status IN ? AND control <> ''", nodeID,
			[]models.JobStatus{models.JobRunning, models.JobPaused}).
		Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("read control requests of node %s: %w", nodeID, err)
	}
	return out, nil
}

// SetControlOutcome clears control and, when p.To is set, moves the job to
// it, provided the job is still running or paused on p.NodeID. It reports
// whether the row was there to change.
func (s *Store) SetControlOutcome(ctx context.Context, p *chimedb.ControlOutcomeParams) (bool, error) {
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
//
// The node's completions and starts write the same rows at the same time,
// by primary key, and the heartbeat must not take their locks in another
// order: a single UPDATE on node_id and status walks an index of those
// columns (MySQL: idx_jobs_node; PostgreSQL: idx_jobs_claim_order, or the
// heap), and such a walk and a write by primary key deadlock. On MySQL
// the walk locks each index entry before its row, while a completion
// locks the row and then needs the entry to change the status: one row
// is enough (seen under TestRateLimitHeld). So on MySQL the heartbeat
// reads the ids without locking and writes them by primary key, in id
// order like the completions (see CompleteJobs). PostgreSQL locks rows
// only, but a completion's UPDATE by id takes them in whatever order its
// plan reads them (an index scan: by id; a bitmap or sequential scan: by
// where the rows lie), so no order of the heartbeat's is sure to match:
// there the heartbeat skips the rows another transaction holds instead
// of waiting for them, and a heartbeat that never waits is in no
// deadlock. A skipped row is held by a writer right then (a completion, a
// control outcome, a recovery, an admin): most write the row, which sets
// its updated_at, and the stall check takes that for a beat too (see
// RecoverStalledJobs); the next beat bumps it anyway. Waiting also made
// the beat, which rewrites every running row of the node (1,000 rows at a
// pool of 1,000), queue behind each outcome batch in flight, and later
// batches queue behind the beat's locks: beats of 0.2–1.9 s in continuous
// runs. The rows it takes, it takes in id order.
func (s *Store) HeartbeatJobs(ctx context.Context, nodeID string, now time.Time) (int64, error) {
	db := s.db.WithContext(ctx)
	var n int64
	var err error
	switch s.dialect {
	case MySQL:
		n, err = s.heartbeatByID(db, nodeID, now)
	case Postgres:
		// NO KEY UPDATE: the lock the UPDATE takes anyway.
		res := db.Exec(`UPDATE jobs SET heartbeat_at = ? WHERE id IN
			(SELECT id FROM jobs WHERE node_id = ? AND status IN ? ORDER BY id FOR NO KEY UPDATE SKIP LOCKED)`, DBTime(now), nodeID, stalledStatuses)
		n, err = res.RowsAffected, res.Error
	default:
		// One writer at a time: no lock order to keep.
		res := db.Exec(`UPDATE jobs SET heartbeat_at = ? WHERE node_id = ? AND status IN ?`, DBTime(now), nodeID, stalledStatuses)
		n, err = res.RowsAffected, res.Error
	}
	if err != nil {
		return 0, fmt.Errorf("heartbeat jobs of node %s: %w", nodeID, err)
	}
	return n, nil
}

// heartbeatChunk bounds the ids of one UPDATE of heartbeatByID.
const heartbeatChunk = 1000

// heartbeatByID is MySQL's heartbeat: the node's active ids, read without
// a lock, then written by primary key in id order, each statement in
// autocommit and guarded again (a row that ended meanwhile is left
// alone). A job that starts after the read is beaten by the next one; its
// start wrote heartbeat_at already.
func (s *Store) heartbeatByID(db *gorm.DB, nodeID string, now time.Time) (int64, error) {
	var ids []int64
	if err := db.Raw(`SELECT id FROM jobs WHERE node_id = ? AND status IN ? ORDER BY id`, nodeID, stalledStatuses).
		Scan(&ids).Error; err != nil {
		return 0, err
	}
	var n int64
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), heartbeatChunk)]
		ids = ids[len(chunk):]
		res := db.Exec(`UPDATE `+s.jobsByID()+` SET heartbeat_at = ? WHERE id IN ? AND node_id = ? AND status IN ?`,
			DBTime(now), chunk, nodeID, stalledStatuses)
		if res.Error != nil {
			return n, res.Error
		}
		n += res.RowsAffected
	}
	return n, nil
}
