package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/sirupsen/logrus"
	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
)

// InTx runs fn in a transaction and retries it when the database reports a
// deadlock (MySQL 1213, PostgreSQL 40P01), a lock wait timeout (1205), a
// serialization failure (PostgreSQL 40001), or SQLite being busy:
// those abort the whole transaction, and running it again is the documented
// remedy. fn must therefore be safe to run more than once. When ctx
// carries a chimedb.Actor, the transaction is marked with it for the
// audit log (see markAudit).
func (s *Store) InTx(ctx context.Context, fn func(tx *gorm.DB) error) error {
	db := s.db.WithContext(ctx)
	a, marked := chimedb.ActorOf(ctx)
	if marked {
		inner := fn
		fn = func(tx *gorm.DB) error {
			if err := s.markAudit(tx, a); err != nil {
				return err
			}
			if err := inner(tx); err != nil {
				return err
			}
			return s.unmarkAudit(tx)
		}
	}
	if marked && s.dialect == MySQL {
		// MySQL's mark is a session variable, which a failed transaction
		// would leave on its pooled connection: pin one connection and
		// clear the mark on it however the transaction ended.
		return db.Connection(func(c *gorm.DB) error {
			defer c.WithContext(context.WithoutCancel(ctx)).Exec("SET @chime_actor = NULL, @chime_door = NULL")
			return s.retryTx(ctx, c, fn)
		})
	}
	return s.retryTx(ctx, db, fn)
}

func (s *Store) retryTx(ctx context.Context, db *gorm.DB, fn func(tx *gorm.DB) error) error {
	const attempts = 8
	var err error
	for i := 0; i < attempts; i++ {
		err = db.Transaction(fn)
		if err == nil || !Retryable(err) {
			return err
		}
		s.noteRetry(err, i+1)
		backoff := time.Duration(1<<i)*5*time.Millisecond + time.Duration(rand.IntN(5))*time.Millisecond
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
	}
	return err
}

// noteRetry makes a retried transaction visible: a deadlock or a
// serialization failure points at two transactions taking rows in
// different orders, which a retry hides but does not fix, so it is logged
// at warn; SQLite's busy and a lock wait are the expected cost of
// contention and are logged at debug. Both are counted through OnTxRetry.
func (s *Store) noteRetry(err error, attempt int) {
	reason := RetryReason(err)
	if s.onTxRetry != nil {
		s.onTxRetry(reason)
	}
	entry := s.log.WithFields(logrus.Fields{"reason": reason, "attempt": attempt})
	switch reason {
	case "deadlock", "serialization":
		entry.WithError(err).Warn("transaction aborted by the database; running it again")
	default:
		entry.WithError(err).Debug("transaction aborted by the database; running it again")
	}
}

// RetryReason names why a Retryable error aborted its transaction:
// deadlock, lock_wait, serialization, lock_not_available or busy.
func RetryReason(err error) string {
	var me *mysqldrv.MySQLError
	if errors.As(err, &me) {
		if me.Number == 1213 {
			return "deadlock"
		}
		return "lock_wait"
	}
	switch pgCode(err) {
	case pgDeadlock:
		return "deadlock"
	case pgSerialization:
		return "serialization"
	case pgLockNotAvailable:
		return "lock_not_available"
	}
	return "busy"
}

// Retryable reports whether err aborted a transaction that may simply be run again.
func Retryable(err error) bool {
	var me *mysqldrv.MySQLError
	if errors.As(err, &me) {
		return me.Number == 1213 || me.Number == 1205
	}
	switch pgCode(err) {
	case "":
	case pgSerialization, pgDeadlock, pgLockNotAvailable:
		return true
	default:
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "database is locked")
}

// savepoint runs fn, one or more statements inside tx, so that when fn
// fails the transaction goes on without fn's writes. MySQL and SQLite
// roll back only the failed statement already; PostgreSQL aborts the whole
// transaction on any error, so there fn runs under a SAVEPOINT, rolled
// back to on failure. Only the paths that contain a refused row use it:
// it costs two round trips.
func (s *Store) savepoint(tx *gorm.DB, fn func() error) error {
	if s.dialect != Postgres {
		return fn()
	}
	return savepointAlways(tx, fn)
}

// savepointAlways runs fn under a SAVEPOINT on every dialect, rolled back
// to when fn fails: for a fn of several statements that must stand or
// fall together, where MySQL and SQLite would keep those before the one
// that failed (a workflow step's job written, its ledger row refused:
// the step would be written again).
func savepointAlways(tx *gorm.DB, fn func() error) error {
	if err := tx.Exec("SAVEPOINT chime_contain").Error; err != nil {
		return err
	}
	if err := fn(); err != nil {
		if rerr := tx.Exec("ROLLBACK TO SAVEPOINT chime_contain").Error; rerr != nil {
			// The transaction is unusable: the caller must retry it whole.
			return fmt.Errorf("%w (rolling back to the savepoint after: %v)", rerr, err)
		}
		return err
	}
	return tx.Exec("RELEASE SAVEPOINT chime_contain").Error
}
