package store

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
	"gorm.io/gorm"
)

// InTx runs fn in a transaction and retries it when the database reports a
// deadlock (MySQL 1213), a lock wait timeout (1205), or SQLite being busy:
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
	msg := err.Error()
	return strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "database is locked")
}
