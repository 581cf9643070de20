package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
)

// TryAcquireLease takes or renews the lease called name for holder, with
// expires_at = the database's now + ttl. It succeeds only when holder
// already holds the lease, or the lease is free (released, never taken, or
// expired by the database's clock): a node with a skewed clock can neither
// steal a live lease nor keep one alive by writing a far-future time.
//
// A caller that does not get the lease also learns whether its holder is
// a live node, and cuts an absurd expires_at (more than
// chimedb.MaxLeaseTTLs × ttl past the database's now, or something the
// database does not compare as a time before that, such as PostgreSQL's
// 'infinity') to now + ttl: a row written by hand then expires on the
// database's clock like any other, and the caller takes it over after
// ttl. A holder renews to now + its own TTL, so a live holder's row is
// never absurd while the nodes' TTLs agree within MaxLeaseTTLs.
//
// ExpiresAt is in database time, for logs and the API. A holder must not
// compare it with its own clock; it should count ttl from when it sent the
// request, on its monotonic clock, minus a safety margin (see
// cluster.Elector).
func (s *Store) TryAcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (*chimedb.LeaseTry, error) {
	if holder == "" {
		return nil, fmt.Errorf("acquire lease %q: empty holder", name)
	}
	if s.dialect == SQLite {
		// One process on one file: no network to be cut off from, and
		// its writers take turns anyway.
		return s.tryAcquireLeaseTx(ctx, name, holder, ttl)
	}
	now, nowArg := s.dbNowExpr(0)
	until, untilArg := s.dbNowExpr(ttl)
	limit, limitArg := s.dbNowExpr(chimedb.MaxLeaseTTLs * ttl)
	// Every statement is on its own, outside any transaction: a node cut
	// off from the database between a statement and its COMMIT would
	// otherwise leave the lease row locked, and every takeover (or the
	// holder's renewals) waiting, until the server drops the connection.
	taken, err := s.takeLease(ctx, name, holder, now, nowArg, until, untilArg)
	if err != nil {
		return nil, fmt.Errorf("acquire lease %q for %s: %w", name, holder, err)
	}
	out := &chimedb.LeaseTry{}
	conn := s.sqlDB
	var exp leaseTime
	row := func() error {
		return conn.QueryRowContext(ctx, "SELECT holder, expires_at FROM leases WHERE name = ?", name).Scan(&out.Holder, &exp)
	}
	if !taken {
		// Either someone else holds it, or the row does not exist yet:
		// create it, already held by us; a duplicate key means another
		// node created it first and we simply read who won. Only a
		// missing row is inserted: MySQL's ON DUPLICATE KEY locks the row
		// it finds, and would wait for the holder's fenced batches.
		if err := row(); errors.Is(err, sql.ErrNoRows) {
			ins := "INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, " + until + ") "
			if s.dialect == MySQL {
				ins += "ON DUPLICATE KEY UPDATE name = name"
			} else {
				ins += "ON CONFLICT (name) DO NOTHING"
			}
			if _, err := conn.ExecContext(ctx, ins, name, holder, untilArg); err != nil {
				return nil, fmt.Errorf("acquire lease %q for %s: %w", name, holder, err)
			}
		} else if err != nil {
			return nil, fmt.Errorf("acquire lease %q for %s: %w", name, holder, err)
		}
		if err := s.checkLease(ctx, conn, out, name, until, untilArg, limit, limitArg); err != nil {
			return nil, fmt.Errorf("acquire lease %q for %s: %w", name, holder, err)
		}
	}
	if err := row(); err != nil {
		return nil, fmt.Errorf("acquire lease %q for %s: %w", name, holder, err)
	}
	out.ExpiresAt = exp.t
	out.Held = out.Holder == holder
	return out, nil
}

// takeLease renews the lease for holder or takes it over when it is free,
// in one autocommit statement, and reports whether it did. On PostgreSQL
// a renewal updates the row with the lock an UPDATE of non-key columns
// takes, which does not wait for the fenced transactions' FOR KEY SHARE
// (see fence), while a takeover first locks the row FOR UPDATE, which
// does: the holder's renewals go on beside its fire batches, and a
// takeover waits for them. MySQL has only shared and exclusive row locks:
// there a renewal also waits for the holder's open batches.
func (s *Store) takeLease(ctx context.Context, name, holder, now string, nowArg any, until string, untilArg any) (bool, error) {
	if s.dialect != Postgres {
		res, err := s.sqlDB.ExecContext(ctx, "UPDATE leases SET holder = ?, expires_at = "+until+
			" WHERE name = ? AND (holder = ? OR holder = '' OR expires_at < "+now+")",
			holder, untilArg, name, holder, nowArg)
		if err != nil {
			return false, err
		}
		n, _ := res.RowsAffected()
		return n > 0, nil
	}
	res, err := s.sqlDB.ExecContext(ctx, "UPDATE leases SET expires_at = "+until+" WHERE name = ? AND holder = ?", untilArg, name, holder)
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return true, nil
	}
	free := "(holder = '' OR expires_at < " + now + ")"
	res, err = s.sqlDB.ExecContext(ctx, "UPDATE leases SET holder = ?, expires_at = "+until+" WHERE name = ? AND "+free+
		" AND name IN (SELECT name FROM leases WHERE name = ? AND "+free+" FOR UPDATE)",
		holder, untilArg, name, nowArg, name, nowArg)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// tryAcquireLeaseTx is TryAcquireLease on SQLite: the same statements in
// one transaction.
func (s *Store) tryAcquireLeaseTx(ctx context.Context, name, holder string, ttl time.Duration) (*chimedb.LeaseTry, error) {
	if holder == "" {
		return nil, fmt.Errorf("acquire lease %q: empty holder", name)
	}
	now, nowArg := s.dbNowExpr(0)
	until, untilArg := s.dbNowExpr(ttl)
	limit, limitArg := s.dbNowExpr(chimedb.MaxLeaseTTLs * ttl)
	var out *chimedb.LeaseTry
	err := s.InTx(ctx, func(tx *gorm.DB) error {
		out = &chimedb.LeaseTry{}
		conn, c := tx.Statement.ConnPool, tx.Statement.Context
		res, err := conn.ExecContext(c, "UPDATE leases SET holder = ?, expires_at = "+until+
			" WHERE name = ? AND (holder = ? OR holder = '' OR expires_at < "+now+")",
			holder, untilArg, name, holder, nowArg)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			// Either someone else holds it, or the row does not exist yet:
			// create it, already held by us; a duplicate key means another
			// node created it first and we simply read who won.
			ins := "INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, " + until + ") "
			if s.dialect == MySQL {
				ins += "ON DUPLICATE KEY UPDATE name = name"
			} else {
				ins += "ON CONFLICT (name) DO NOTHING"
			}
			if _, err := conn.ExecContext(c, ins, name, holder, untilArg); err != nil {
				return err
			}
			if err := s.checkLease(c, conn, out, name, until, untilArg, limit, limitArg); err != nil {
				return err
			}
		}
		var exp leaseTime
		if err := conn.QueryRowContext(c, "SELECT holder, expires_at FROM leases WHERE name = ?", name).Scan(&out.Holder, &exp); err != nil {
			return err
		}
		out.ExpiresAt = exp.t
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("acquire lease %q for %s: %w", name, holder, err)
	}
	out.Held = out.Holder == holder
	return out, nil
}

// checkLease is what a caller that did not get the lease looks at: whether
// the holder is a live node, and whether the expiry is absurd, which it
// cuts to until (now + the caller's TTL).
func (s *Store) checkLease(c context.Context, conn gorm.ConnPool, out *chimedb.LeaseTry, name, until string, untilArg any, limit string, limitArg any) error {
	var seen string
	var exp sql.NullString
	var absurd, live int
	err := conn.QueryRowContext(c, "SELECT l.holder, l.expires_at, CASE WHEN l.expires_at <= "+limit+" THEN 0 ELSE 1 END, "+
		"CASE WHEN n.status = ? THEN 1 ELSE 0 END FROM leases l LEFT JOIN nodes n ON n.id = l.holder WHERE l.name = ?",
		limitArg, chimedb.NodeAlive, name).Scan(&seen, &exp, &absurd, &live)
	if err != nil {
		return err
	}
	out.HolderLive = live == 1
	if absurd == 0 {
		return nil
	}
	res, err := conn.ExecContext(c, "UPDATE leases SET expires_at = "+until+" WHERE name = ? AND holder = ? AND NOT (expires_at <= "+limit+")",
		untilArg, name, seen, limitArg)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n > 0 {
		out.Cut = exp.String
	}
	return nil
}

// leaseTime reads expires_at as the driver gives it when that is a time,
// and as the zero time when not (SQLite text, PostgreSQL's infinities):
// it is for logs, and the row is judged in SQL.
type leaseTime struct{ t time.Time }

func (l *leaseTime) Scan(v any) error {
	if t, ok := v.(time.Time); ok {
		l.t = t.UTC()
	}
	return nil
}

// ReleaseLease gives up name if holder holds it, so a standby can take it
// at once instead of waiting for it to expire.
func (s *Store) ReleaseLease(ctx context.Context, name, holder string) error {
	now, arg := s.dbNowExpr(0)
	if _, err := s.sqlDB.ExecContext(ctx, "UPDATE leases SET holder = '', expires_at = "+now+" WHERE name = ? AND holder = ?",
		arg, name, holder); err != nil {
		return fmt.Errorf("release lease %q held by %s: %w", name, holder, err)
	}
	return nil
}

// GetLease reads a lease; a missing row is a free lease.
func (s *Store) GetLease(ctx context.Context, name string) (*chimedb.LeaseState, error) {
	now, arg := s.dbNowExpr(0)
	out := &chimedb.LeaseState{Name: name}
	rows, err := s.sqlDB.QueryContext(ctx,
		"SELECT holder, expires_at, CASE WHEN holder <> '' AND expires_at > "+now+" THEN 1 ELSE 0 END FROM leases WHERE name = ?",
		arg, name)
	if err != nil {
		return nil, fmt.Errorf("read lease %q: %w", name, err)
	}
	defer rows.Close()
	if rows.Next() {
		var live int
		var exp leaseTime
		if err := rows.Scan(&out.Holder, &exp, &live); err != nil {
			return nil, fmt.Errorf("read lease %q: %w", name, err)
		}
		out.Live, out.ExpiresAt = live == 1, exp.t
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read lease %q: %w", name, err)
	}
	return out, nil
}
