package store

import (
	"context"
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
// expiresAt is in database time, for logs and the API. A holder must not
// compare it with its own clock; it should count ttl from when it sent the
// request, on its monotonic clock, minus a safety margin (see
// cluster.Elector).
func (s *Store) TryAcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (held bool, expiresAt time.Time, err error) {
	if holder == "" {
		return false, time.Time{}, fmt.Errorf("acquire lease %q: empty holder", name)
	}
	now, nowArg := s.dbNowExpr(0)
	until, untilArg := s.dbNowExpr(ttl)
	var got string
	err = s.InTx(ctx, func(tx *gorm.DB) error {
		got, expiresAt = "", time.Time{}
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
		}
		return conn.QueryRowContext(c, "SELECT holder, expires_at FROM leases WHERE name = ?", name).Scan(&got, &expiresAt)
	})
	if err != nil {
		return false, time.Time{}, fmt.Errorf("acquire lease %q for %s: %w", name, holder, err)
	}
	return got == holder, expiresAt.UTC(), nil
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
		if err := rows.Scan(&out.Holder, &out.ExpiresAt, &live); err != nil {
			return nil, fmt.Errorf("read lease %q: %w", name, err)
		}
		out.Live = live == 1
		out.ExpiresAt = out.ExpiresAt.UTC()
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read lease %q: %w", name, err)
	}
	return out, nil
}
