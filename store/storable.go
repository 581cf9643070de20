package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"

	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chimesched/chime/chimedb"
)

// stmtTextBudget bounds the task text (results, errors, log lines) one
// multi-row statement carries, so that a batch of large values is split
// into several statements that each fit max_allowed_packet. A row larger
// than the budget goes alone. Ordinary batches are far below it and stay
// one statement.
const stmtTextBudget = 1 << 20

// Storable is chimedb.Storable: s as a column of maxBytes can hold it.
func Storable(s string, maxBytes int) string { return chimedb.Storable(s, maxBytes) }

// storable is Storable for this database: PostgreSQL refuses a NUL byte
// in text (22021), which is valid UTF-8 the others keep, so there it
// becomes U+FFFD, as an invalid byte does everywhere.
func (s *Store) storable(v string, maxBytes int) string {
	if s.dialect == Postgres && strings.IndexByte(v, 0) >= 0 {
		v = strings.ReplaceAll(v, "\x00", "\uFFFD")
	}
	return Storable(v, maxBytes)
}

func (s *Store) storablePtr(p *string, maxBytes int) *string {
	if p == nil {
		return nil
	}
	v := s.storable(*p, maxBytes)
	if len(v) == len(*p) && v == *p {
		return p
	}
	return &v
}

// transient reports whether err says the database, or the way to it, is
// unavailable for now (a lost connection, a lock, a full disk, a read-only
// server), as opposed to refusing the data of this statement. A transient
// error is retried as it is; any other error from a batch is treated as a
// row the database will never accept, and the batch is split to find it
// (see CompleteJobs and InsertJobLogs). A global error misread here as a
// row's fault loses nothing: the placeholder written instead of that row
// is refused too, and the batch is retried whole.
func transient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysqldrv.ErrInvalidConn) ||
		errors.Is(err, sql.ErrConnDone) || errors.Is(err, sql.ErrTxDone) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	if code := pgCode(err); code != "" {
		// 22xxx (data: a NUL byte, a value too long) and 23xxx
		// (constraints) are the row's fault; see pgTransient for the rest.
		return pgTransient(code)
	}
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return true
	}
	var me *mysqldrv.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1021, // disk full
			1037, 1038, 1041, // out of memory
			1040, 1203, // too many connections
			1053,                   // server shutdown
			1114,                   // table full
			1152, 1158, 1159, 1160, // aborted connection, network read/write
			1161,       // network write timeout
			1180, 1181, // commit, rollback failed
			1205, 1213, // lock wait timeout, deadlock
			1290, 1792, 1836, // read-only server, transaction or mode
			1036, 1044, 1045, 1142, 1143, 1146, // read-only table, no access, no table
			1317, 1927, // query interrupted, connection killed
			4031: // disconnected for inactivity (MySQL 8)
			return true
		}
		return false
	}
	var se interface{ Code() int }
	if errors.As(err, &se) {
		switch se.Code() & 0xff { // the primary result code
		case 5, 6, 7, 8, 9, 10, 13, 14, 15: // BUSY LOCKED NOMEM READONLY INTERRUPT IOERR FULL CANTOPEN PROTOCOL
			return true
		}
		return false
	}
	return Retryable(err)
}
