package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"testing"

	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// transient decides between retrying a batch as it is and splitting it to
// write around a refused row, so a misread costs either a frozen completer
// or a placeholder instead of an outcome.
func TestTransient(t *testing.T) {
	t.Parallel()
	wrap := func(err error) error { return fmt.Errorf("write job outcomes: %w", err) }
	for _, err := range []error{
		context.DeadlineExceeded, driver.ErrBadConn, mysqldrv.ErrInvalidConn,
		&net.OpError{Op: "write", Err: errors.New("connection reset by peer")},
		&mysqldrv.MySQLError{Number: 1213}, &mysqldrv.MySQLError{Number: 1205},
		&mysqldrv.MySQLError{Number: 1290}, &mysqldrv.MySQLError{Number: 1142},
		errors.New("database is locked (5) (SQLITE_BUSY)"),
		// PostgreSQL: deadlock, serialization, admin shutdown, too many
		// connections, read-only transaction, an aborted transaction.
		&pgconn.PgError{Code: "40P01"}, &pgconn.PgError{Code: "40001"}, &pgconn.PgError{Code: "57P01"},
		&pgconn.PgError{Code: "53300"}, &pgconn.PgError{Code: "25006"}, &pgconn.PgError{Code: "25P02"},
	} {
		require.True(t, transient(wrap(err)), "%v", err)
	}
	for _, err := range []error{
		&mysqldrv.MySQLError{Number: 1366}, &mysqldrv.MySQLError{Number: 1406},
		&mysqldrv.MySQLError{Number: 1644}, mysqldrv.ErrPktTooLarge,
		errors.New("constraint failed: refused (1811)"),
		// PostgreSQL: a NUL byte, a value too long, a bad timestamp, a
		// trigger's refusal, a unique key.
		&pgconn.PgError{Code: "22021"}, &pgconn.PgError{Code: "22001"}, &pgconn.PgError{Code: "22007"},
		&pgconn.PgError{Code: "P0001"}, &pgconn.PgError{Code: "23505"},
	} {
		require.False(t, transient(wrap(err)), "%v", err)
	}
	for code, want := range map[string]bool{"40001": true, "40P01": true, "55P03": true, "22021": false, "23505": false} {
		require.Equal(t, want, Retryable(wrap(&pgconn.PgError{Code: code})), code)
	}
}
