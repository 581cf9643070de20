package store

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
)

// fence is a fenced transaction's first statement (chimedb.LeaseFence): the
// lease row, held by f.Holder and live by the database's clock, read with a
// shared lock so that a takeover's UPDATE of the row waits for this
// transaction to end. Shared, not exclusive: the schedule engine's writers
// run several fenced batches side by side (fire-ahead). On PostgreSQL the
// lock is FOR KEY SHARE, which the holder's renewal does not wait for and
// a takeover (FOR UPDATE, see takeLease) does; on MySQL, LOCK IN SHARE
// MODE, which the renewal waits for too, for as long as a batch is held
// open (the fire-ahead, 200 ms by default). SQLite's
// transactions exclude every other writer already, so there the read alone
// is enough.
func (s *Store) fence(tx *gorm.DB, f *chimedb.LeaseFence) error {
	ctx, conn := tx.Statement.Context, tx.Statement.ConnPool
	now, nowArg := s.dbNowExpr(0)
	var q string
	args := []any{}
	switch s.dialect {
	case Postgres:
		// set_config(..., true) is SET LOCAL: it ends with the
		// transaction, and costs no round trip of its own.
		sel := "1"
		if f.IdleTimeout > 0 {
			sel = "set_config('idle_in_transaction_session_timeout', ?, true)"
			args = append(args, strconv.FormatInt(max(f.IdleTimeout.Milliseconds(), 1), 10))
		}
		q = "SELECT " + sel + " FROM leases WHERE name = ? AND holder = ? AND expires_at > " + now + " FOR KEY SHARE"
	case MySQL:
		if f.IdleTimeout > 0 && !s.noIdleTimeout.Load() {
			secs := int64((f.IdleTimeout + time.Second - 1) / time.Second)
			if _, err := conn.ExecContext(ctx, "SET SESSION idle_transaction_timeout = "+strconv.FormatInt(secs, 10)); err != nil {
				// MySQL has no such variable (1193): there the takeover
				// waits until the server drops a cut-off connection.
				// Elsewhere the shorter bound stays on the pooled
				// connection (a SESSION variable) for its later
				// transactions too, which is harmless: none of chime's
				// pauses longer than the fire-ahead (see
				// DefaultIdleTxTimeout).
				var me *mysqldrv.MySQLError
				if !errors.As(err, &me) || me.Number != 1193 {
					return fmt.Errorf("fence on lease %q: %w", f.Name, err)
				}
				s.noIdleTimeout.Store(true)
			}
		}
		q = "SELECT 1 FROM leases WHERE name = ? AND holder = ? AND expires_at > " + now + " LOCK IN SHARE MODE"
	default:
		q = "SELECT 1 FROM leases WHERE name = ? AND holder = ? AND expires_at > " + now
	}
	args = append(args, f.Name, f.Holder, nowArg)
	rows, err := conn.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("fence on lease %q: %w", f.Name, err)
	}
	held := rows.Next()
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("fence on lease %q: %w", f.Name, err)
	}
	if !held {
		return fmt.Errorf("lease %q for %s: %w", f.Name, f.Holder, chimedb.ErrLeaseLost)
	}
	return nil
}
