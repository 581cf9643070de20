package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// sqliteTimeLayout is how the SQLite driver writes a time.Time, and so how
// dbNowExpr must write one: SQLite compares timestamps as text.
const sqliteTimeLayout = "2006-01-02 15:04:05.999999999-07:00"

// dbNowExpr returns an SQL expression for the database's clock plus off, and
// its one argument. Cluster judgements (heartbeats, leases, who is dead) are
// made with it inside the statement, so no node's own clock takes part.
// MySQL uses UTC_TIMESTAMP(6), which does not depend on the session time
// zone, PostgreSQL statement_timestamp(), a timestamptz; SQLite's strftime has millisecond precision, which is plenty for
// timeouts measured in seconds.
func (s *Store) dbNowExpr(off time.Duration) (string, any) {
	switch s.dialect {
	case MySQL:
		return "TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(6))", off.Microseconds()
	case Postgres:
		// statement_timestamp(), like UTC_TIMESTAMP(6), is one instant for
		// the whole statement (now() would be the transaction's start).
		return "(statement_timestamp() + CAST(? AS BIGINT) * INTERVAL '1 microsecond')", off.Microseconds()
	}
	return "strftime('%Y-%m-%d %H:%M:%f+00:00', 'now', ?)", fmt.Sprintf("%+.3f seconds", off.Seconds())
}

// DBNow returns the database's clock, UTC. Callers that must pass a time to
// a query whose outcome other nodes rely on (recovering a dead node's jobs,
// retention cut-offs) take it from here rather than from their own clock.
func (s *Store) DBNow(ctx context.Context) (time.Time, error) {
	if s.dialect != SQLite {
		q := "SELECT UTC_TIMESTAMP(6)"
		if s.dialect == Postgres {
			q = "SELECT statement_timestamp()"
		}
		var t time.Time
		if err := s.sqlDB.QueryRowContext(ctx, q).Scan(&t); err != nil {
			return time.Time{}, fmt.Errorf("read the database clock: %w", err)
		}
		return DBTime(t), nil
	}
	expr, arg := s.dbNowExpr(0)
	var v string
	if err := s.sqlDB.QueryRowContext(ctx, "SELECT "+expr, arg).Scan(&v); err != nil {
		return time.Time{}, fmt.Errorf("read the database clock: %w", err)
	}
	t, err := time.Parse(sqliteTimeLayout, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("read the database clock: %w", err)
	}
	return DBTime(t), nil
}

// RegisterNode writes p as an alive node whose started_at and heartbeat_at
// are the database's now. A row left by an earlier process with the same id
// is taken over: the id names the node, not the process. Its drain is
// kept: a node drained for maintenance stays drained across restarts
// until an admin undrains it. A new row takes p.Drain.
func (s *Store) RegisterNode(ctx context.Context, p *chimedb.RegisterNodeParams) error {
	now, arg := s.dbNowExpr(0)
	q := "INSERT INTO nodes (id, hostname, pid, version, roles, tags, drain, started_at, heartbeat_at, status) VALUES (?, ?, ?, ?, ?, ?, ?, " +
		now + ", " + now + ", ?) "
	if s.dialect == MySQL {
		q += "ON DUPLICATE KEY UPDATE hostname = VALUES(hostname), pid = VALUES(pid), version = VALUES(version), " +
			"roles = VALUES(roles), tags = VALUES(tags), started_at = VALUES(started_at), heartbeat_at = VALUES(heartbeat_at), status = VALUES(status)"
	} else {
		q += "ON CONFLICT (id) DO UPDATE SET hostname = excluded.hostname, pid = excluded.pid, version = excluded.version, " +
			"roles = excluded.roles, tags = excluded.tags, started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at, status = excluded.status"
	}
	if _, err := s.sqlDB.ExecContext(ctx, q, p.ID, p.Hostname, p.PID, p.Version, p.Roles, p.Tags, p.Drain, arg, arg, chimedb.NodeAlive); err != nil {
		return fmt.Errorf("register node %s: %w", p.ID, err)
	}
	return nil
}

// HeartbeatNode sets the node's heartbeat_at to the database's now and its
// status to alive, and returns the status it had before: "alive" normally,
// "dead" when other nodes gave up on it (its jobs were handed over), ""
// when the row had gone, in which case it is registered again from p.
func (s *Store) HeartbeatNode(ctx context.Context, p *chimedb.RegisterNodeParams) (string, error) {
	now, arg := s.dbNowExpr(0)
	// The common case is one UPDATE; only when it matches nothing do we look
	// closer, so a healthy cluster pays one statement per node and beat.
	res, err := s.sqlDB.ExecContext(ctx, "UPDATE nodes SET heartbeat_at = "+now+" WHERE id = ? AND status = ?", arg, p.ID, chimedb.NodeAlive)
	if err != nil {
		return "", fmt.Errorf("heartbeat of node %s: %w", p.ID, err)
	}
	if n, err := res.RowsAffected(); err == nil && n > 0 {
		return chimedb.NodeAlive, nil
	}
	var prev string
	err = s.InTx(ctx, func(tx *gorm.DB) error {
		prev = ""
		q := "SELECT status FROM nodes WHERE id = ?"
		if s.rowLocks() {
			q += " FOR UPDATE"
		}
		err := tx.Statement.ConnPool.QueryRowContext(tx.Statement.Context, q, p.ID).Scan(&prev)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil:
			return err
		}
		_, err = tx.Statement.ConnPool.ExecContext(tx.Statement.Context,
			"UPDATE nodes SET heartbeat_at = "+now+", status = ? WHERE id = ?", arg, chimedb.NodeAlive, p.ID)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("heartbeat of node %s: %w", p.ID, err)
	}
	if prev == "" {
		return "", s.RegisterNode(ctx, p)
	}
	return prev, nil
}

// SetNodeStatus sets a node's status, e.g. stopped on a graceful exit, so
// the others need not wait for the failover window to know it is gone.
func (s *Store) SetNodeStatus(ctx context.Context, id, status string) error {
	if _, err := s.sqlDB.ExecContext(ctx, "UPDATE nodes SET status = ? WHERE id = ?", status, id); err != nil {
		return fmt.Errorf("set node %s %s: %w", id, status, err)
	}
	return nil
}

// DeclareDeadNodes marks dead every alive node whose heartbeat_at is older
// than failoverAfter by the database's clock, and returns them. Each row is
// taken by a guarded UPDATE, so when several nodes reap at once each dead
// node is declared exactly once, and a node whose heartbeat lands first is
// left alone.
func (s *Store) DeclareDeadNodes(ctx context.Context, failoverAfter time.Duration) ([]chimedb.DeadNode, error) {
	dbNow, err := s.DBNow(ctx)
	if err != nil {
		return nil, err
	}
	cutoff, cutArg := s.dbNowExpr(-failoverAfter)
	rows, err := s.sqlDB.QueryContext(ctx, "SELECT id, heartbeat_at FROM nodes WHERE status = ? AND heartbeat_at < "+cutoff, chimedb.NodeAlive, cutArg)
	if err != nil {
		return nil, fmt.Errorf("find silent nodes: %w", err)
	}
	var silent []chimedb.DeadNode
	for rows.Next() {
		var d chimedb.DeadNode
		if err := rows.Scan(&d.ID, &d.HeartbeatAt); err != nil {
			rows.Close()
			return nil, fmt.Errorf("find silent nodes: %w", err)
		}
		silent = append(silent, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find silent nodes: %w", err)
	}
	var dead []chimedb.DeadNode
	for _, d := range silent {
		res, err := s.sqlDB.ExecContext(ctx, "UPDATE nodes SET status = ? WHERE id = ? AND status = ? AND heartbeat_at < "+cutoff,
			chimedb.NodeDead, d.ID, chimedb.NodeAlive, cutArg)
		if err != nil {
			return dead, fmt.Errorf("declare node %s dead: %w", d.ID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			continue // it beat in time, or another node declared it first
		}
		d.Silence = dbNow.Sub(d.HeartbeatAt)
		dead = append(dead, d)
	}
	return dead, nil
}

// OrphanNodes returns the node ids that hold queued, running or paused jobs
// but are not alive in nodes: dead, stopped without releasing everything,
// or unknown. Their jobs are due for RecoverNode. A reaper that crashed
// between declaring a node dead and recovering its jobs is finished here.
func (s *Store) OrphanNodes(ctx context.Context) ([]string, error) {
	var ids []string
	err := s.db.WithContext(ctx).Raw(
		"SELECT DISTINCT node_id FROM jobs WHERE status IN ? AND node_id <> '' "+
			"AND node_id NOT IN (SELECT id FROM nodes WHERE status = ?)", activeStatuses, chimedb.NodeAlive).
		Scan(&ids).Error
	if err != nil {
		return nil, fmt.Errorf("find nodes holding jobs without being alive: %w", err)
	}
	return ids, nil
}

// DeleteReplacedNodes deletes the rows that earlier processes on hostname
// left under their default id (hostname-pid, see configs) once they
// stopped or were declared dead, and returns their ids. keep is the caller's
// own id. A row that still names a queued, running or paused job stays
// for the reaper; a row whose id was chosen (CHIME_NODE_ID) stays too:
// such a node takes its row over when it comes back. Without this every
// restart with the default id left one more stopped row in `chime nodes`
// until retention. jobs.node_id keeps the id string, and nothing joins
// on the row of a finished job's node.
func (s *Store) DeleteReplacedNodes(ctx context.Context, hostname, keep string) ([]string, error) {
	if hostname == "" {
		return nil, nil
	}
	rows, err := s.sqlDB.QueryContext(ctx, "SELECT id, pid FROM nodes WHERE hostname = ? AND id <> ? AND status IN (?, ?)",
		hostname, keep, chimedb.NodeStopped, chimedb.NodeDead)
	if err != nil {
		return nil, fmt.Errorf("find replaced nodes of %s: %w", hostname, err)
	}
	var ids []string
	for rows.Next() {
		var id string
		var pid int
		if err := rows.Scan(&id, &pid); err != nil {
			rows.Close()
			return nil, fmt.Errorf("find replaced nodes of %s: %w", hostname, err)
		}
		if id == fmt.Sprintf("%s-%d", hostname, pid) {
			ids = append(ids, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find replaced nodes of %s: %w", hostname, err)
	}
	var gone []string
	for _, id := range ids {
		// Guarded again: the row may have come back to life, or been
		// given jobs, since the SELECT.
		res := s.db.WithContext(ctx).Exec(`DELETE FROM nodes WHERE id = ? AND status IN ?
			AND NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.node_id = ? AND jobs.status IN ?)`,
			id, []string{chimedb.NodeStopped, chimedb.NodeDead}, id, activeStatuses)
		if res.Error != nil {
			return gone, fmt.Errorf("delete replaced node %s: %w", id, res.Error)
		}
		if res.RowsAffected > 0 {
			gone = append(gone, id)
		}
	}
	return gone, nil
}

// CountWaitingJobs counts the pending jobs that are due by the database's
// clock: the backlog no worker has claimed. It reads idx_jobs_claim_order
// only: a row whose claim_key is at or below ClaimKeyFrom(now) is due
// whatever its priority, so the bulk of a backlog is counted from the index
// alone, and only the rows of the few minutes above that need run_at.
func (s *Store) CountWaitingJobs(ctx context.Context) (int64, error) {
	now, err := s.DBNow(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	if err := s.db.WithContext(ctx).Raw(countWaitingSQL, countWaitingArgs(now)...).Scan(&n).Error; err != nil {
		return 0, fmt.Errorf("count waiting jobs: %w", err)
	}
	return n, nil
}

const countWaitingSQL = `SELECT (SELECT COUNT(*) FROM jobs WHERE status = ? AND claim_key <= ?)
	+ (SELECT COUNT(*) FROM jobs WHERE status = ? AND claim_key > ? AND claim_key <= ? AND run_at <= ?)`

func countWaitingArgs(now time.Time) []any {
	sure := ClaimKeyFrom(now)
	return []any{models.JobPending, sure, models.JobPending, sure, ClaimKeyUntil(now), now}
}

// ExplainCountWaitingJobs returns the database's plan for CountWaitingJobs
// at now, for tests that prove it reads ranges of idx_jobs_claim_order.
func (s *Store) ExplainCountWaitingJobs(ctx context.Context, now time.Time) (string, error) {
	return s.explain(ctx, countWaitingSQL, countWaitingArgs(now)...)
}

// SyncDrain reads node id's drain and, when it is draining and idle, moves
// it to drained with a guarded UPDATE (an undrain that lands first wins).
// A gone row is chimedb.ErrNotFound, not "": the node must not read the
// loss of its row as an undrain.
func (s *Store) SyncDrain(ctx context.Context, id string, idle bool) (string, error) {
	if idle {
		if _, err := s.sqlDB.ExecContext(ctx, "UPDATE nodes SET drain = ? WHERE id = ? AND drain = ?",
			models.NodeDrained, id, models.NodeDraining); err != nil {
			return "", fmt.Errorf("mark node %s drained: %w", id, err)
		}
	}
	var drain string
	err := s.sqlDB.QueryRowContext(ctx, "SELECT drain FROM nodes WHERE id = ?", id).Scan(&drain)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("read the drain of node %s: its row is gone: %w", id, chimedb.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("read the drain of node %s: %w", id, err)
	}
	return drain, nil
}
