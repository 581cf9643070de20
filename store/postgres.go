package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/sirupsen/logrus"
)

// PostgreSQL server errors (SQLSTATE) store tells apart.
const (
	pgSerialization       = "40001"
	pgDeadlock            = "40P01"
	pgLockNotAvailable    = "55P03"
	pgUnknownDB           = "3D000"
	pgFeatureNotSupported = "0A000"
)

// pgConfig parses a libpq DSN (URL or key=value) and adds what chime needs:
// UTC as the session time zone, so a timestamp literal without an offset
// means UTC on chime's connections and text forms of times are UTC; READ
// COMMITTED whatever the server's default, under which the claims and
// fires behave as on MySQL (see docs/architecture.md); and a connect
// timeout, so an unreachable server is an error, not a hang.
func pgConfig(dsn string, idleTx time.Duration) (*pgx.ConnConfig, error) {
	if strings.TrimSpace(dsn) == "" {
		return nil, errors.New("database.dsn: empty; a PostgreSQL DSN looks like postgres://chime@127.0.0.1:5432/chime?sslmode=disable")
	}
	c, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgx's message may repeat the DSN, and with it a password.
		return nil, errors.New("database.dsn: not a PostgreSQL DSN; write postgres://user:password@host:5432/dbname?sslmode=disable")
	}
	c.RuntimeParams["timezone"] = "UTC"
	c.RuntimeParams["default_transaction_isolation"] = "read committed"
	c.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.FormatInt(idleTx.Milliseconds(), 10)
	if c.RuntimeParams["application_name"] == "" {
		c.RuntimeParams["application_name"] = "chime"
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = 5 * time.Second
	}
	return c, nil
}

// openPostgres opens a pool on cfg whose connections take chime's '?'
// placeholders (see rebind) and return timestamptz values in UTC, as the
// other dialects do.
func openPostgres(cfg *pgx.ConnConfig) *sql.DB {
	inner := stdlib.GetConnector(*cfg, stdlib.OptionAfterConnect(func(_ context.Context, c *pgx.Conn) error {
		c.TypeMap().RegisterType(&pgtype.Type{Name: "timestamptz", OID: pgtype.TimestamptzOID,
			Codec: &pgtype.TimestamptzCodec{ScanLocation: time.UTC}})
		return nil
	}))
	return sql.OpenDB(pgConnector{inner})
}

// pgFirstRun creates the database a DSN names when the server says it does
// not exist (and the user may create it), as chime does on MySQL.
func pgFirstRun(ctx context.Context, cfg *pgx.ConnConfig, log logrus.FieldLogger, err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != pgUnknownDB || cfg.Database == "" {
		return err
	}
	admin := cfg.Copy()
	admin.Database = "postgres"
	conn, cerr := pgx.ConnectConfig(ctx, admin)
	if cerr == nil {
		_, cerr = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{cfg.Database}.Sanitize())
		_ = conn.Close(ctx)
	}
	if cerr != nil {
		return fmt.Errorf("database.dsn: database %q does not exist, and creating it failed (%v): as a PostgreSQL admin run "+
			"CREATE DATABASE %s OWNER %s; then start chime again", cfg.Database, cerr,
			pgx.Identifier{cfg.Database}.Sanitize(), pgx.Identifier{cfg.User}.Sanitize())
	}
	log.WithField("database", cfg.Database).Info("created the PostgreSQL database the DSN names: it did not exist")
	return nil
}

// pgConnector hands out connections that rebind '?' placeholders.
type pgConnector struct{ inner driver.Connector }

func (c pgConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &pgConn{conn.(*stdlib.Conn)}, nil
}

func (c pgConnector) Driver() driver.Driver { return c.inner.Driver() }

// pgConn is pgx's database/sql connection with store's SQL, written with
// '?' placeholders for all three dialects, rebound to PostgreSQL's $n.
// GORM's own statements arrive with $n already and pass unchanged.
type pgConn struct{ *stdlib.Conn }

func (c *pgConn) Prepare(query string) (driver.Stmt, error) {
	return c.Conn.Prepare(rebind(query))
}

func (c *pgConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.Conn.PrepareContext(ctx, rebind(query))
}

func (c *pgConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.ExecContext(ctx, rebind(query), args)
}

func (c *pgConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.QueryContext(ctx, rebind(query), args)
}

// pgBeginKey is the context key of withBeginSQL.
type pgBeginKey struct{}

// withBeginSQL marks ctx so that a PostgreSQL transaction begun with it
// runs set (SET LOCAL statements) right after BEGIN, in the same round
// trip: its settings hold for the whole transaction and cost it nothing.
// The other dialects' connections ignore the mark.
func withBeginSQL(ctx context.Context, set string) context.Context {
	return context.WithValue(ctx, pgBeginKey{}, set)
}

// BeginTx begins as pgx's database/sql connection does, or, for a context
// marked by withBeginSQL, with BEGIN and the mark's statements sent as one
// simple query (pgx sends a query without arguments by the simple
// protocol, which takes several statements).
func (c *pgConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	set, _ := ctx.Value(pgBeginKey{}).(string)
	if set == "" || sql.IsolationLevel(opts.Isolation) != sql.LevelDefault || opts.ReadOnly {
		return c.Conn.BeginTx(ctx, opts)
	}
	conn := c.Conn.Conn()
	if conn.IsClosed() {
		return nil, driver.ErrBadConn
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{BeginQuery: "BEGIN; " + set})
	if err != nil {
		return nil, err
	}
	return pgTx{ctx: ctx, tx: tx}, nil
}

// pgTx is a transaction begun by pgConn.BeginTx, as pgx's database/sql
// wrapper has it.
type pgTx struct {
	ctx context.Context
	tx  pgx.Tx
}

func (t pgTx) Commit() error { return t.tx.Commit(t.ctx) }

func (t pgTx) Rollback() error { return t.tx.Rollback(t.ctx) }

// rebind turns each '?' placeholder of q into $1, $2, ... It leaves alone
// what is inside string literals, quoted identifiers, dollar-quoted bodies
// and comments, where a '?' is text.
func rebind(q string) string {
	if strings.IndexByte(q, '?') < 0 {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	for i := 0; i < len(q); i++ {
		ch := q[i]
		switch {
		case ch == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		case ch == '\'' || ch == '"':
			end := i + 1
			for end < len(q) {
				if q[end] == ch {
					if end+1 < len(q) && q[end+1] == ch { // doubled: an escaped quote
						end += 2
						continue
					}
					break
				}
				end++
			}
			b.WriteString(q[i:min(end+1, len(q))])
			i = end
			continue
		case ch == '-' && i+1 < len(q) && q[i+1] == '-':
			end := strings.IndexByte(q[i:], '\n')
			if end < 0 {
				end = len(q) - i - 1
			}
			b.WriteString(q[i : i+end+1])
			i += end
			continue
		case ch == '/' && i+1 < len(q) && q[i+1] == '*':
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				b.WriteString(q[i:])
				return b.String()
			}
			b.WriteString(q[i : i+2+end+2])
			i += 2 + end + 1
			continue
		case ch == '$':
			if tag, ok := dollarTag(q[i:]); ok {
				end := strings.Index(q[i+len(tag):], tag)
				if end < 0 {
					b.WriteString(q[i:])
					return b.String()
				}
				b.WriteString(q[i : i+len(tag)+end+len(tag)])
				i += len(tag) + end + len(tag) - 1
				continue
			}
		}
		b.WriteByte(ch)
	}
	return b.String()
}

// dollarTag returns the opening $tag$ at the start of s, if there is one.
func dollarTag(s string) (string, bool) {
	for j := 1; j < len(s); j++ {
		c := s[j]
		switch {
		case c == '$':
			return s[:j+1], true
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || (j > 1 && c >= '0' && c <= '9'):
		default:
			return "", false
		}
	}
	return "", false
}

// pgCode returns the SQLSTATE of a PostgreSQL error in err's chain, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// pgTransient reports whether a PostgreSQL error says the server, or the
// way to it, is unavailable for now rather than refusing this statement's
// data: its SQLSTATE class (08 connection, 53 resources, 57 operator
// intervention such as a shutdown or a cancel, 58 system I/O, 40
// transaction rollback such as a deadlock, 25006 a read-only transaction,
// 55P03 a lock not available, 42501 no privilege, 25P02 a statement in a
// transaction an earlier error aborted, which only running the whole
// transaction again mends).
func pgTransient(code string) bool {
	if len(code) != 5 {
		return false
	}
	switch code[:2] {
	case "08", "53", "57", "58", "40":
		return true
	}
	switch code {
	case "25006", "25P02", pgLockNotAvailable, "42501", "42P01":
		return true
	}
	return false
}
