package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
	"gorm.io/gorm"
)

// InTx runs fn in a transaction and retries it when the database reports a
// deadlock (MySQL 1213, PostgreSQL 40P01), a lock wait timeout (1205), a
// serialization failure (PostgreSQL 40001), or SQLite being busy:
// those abort the whole transaction, and running it again is the documented
// remedy. fn must therefore be safe to run more than once.
func (s *Store) InTx(ctx context.Context, fn func(tx *gorm.DB) error) error {
	const attempts = 8
	var err error
	for i := 0; i < attempts; i++ {
		err = s.db.WithContext(ctx).Transaction(fn)
		if err == nil || !Retryable(err) {
			return err
		}
		backoff := time.Duration(1<<i)*5*time.Millisecond + time.Duration(rand.IntN(5))*time.Millisecond
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
	}
	return err
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
