package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"testing"

	mysqldrv "github.com/go-sql-driver/mysql"
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
	} {
		require.True(t, transient(wrap(err)), "%v", err)
	}
	for _, err := range []error{
		&mysqldrv.MySQLError{Number: 1366}, &mysqldrv.MySQLError{Number: 1406},
		&mysqldrv.MySQLError{Number: 1644}, mysqldrv.ErrPktTooLarge,
		errors.New("constraint failed: refused (1811)"),
	} {
		require.False(t, transient(wrap(err)), "%v", err)
	}
}
