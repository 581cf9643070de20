package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/glebarez/sqlite"
	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/sirupsen/logrus"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
)

// Dialect names a supported database.
type Dialect string

const (
	MySQL    Dialect = "mysql"
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// Config says which database to open.
type Config struct {
	// Driver is "sqlite" (default), "mysql" or "postgres".
	Driver Dialect
	// DSN is a file path for SQLite (default "chime.db"), a go-sql-driver
	// DSN for MySQL, or a libpq DSN for PostgreSQL
	// (postgres://user@host:5432/db?sslmode=disable); UTC and READ
	// COMMITTED are added to the server ones. A DSN in another driver's
	// form is refused, naming the driver it looks like.
	DSN string
	// MaxOpenConns bounds the pool (default 32 on MySQL and PostgreSQL, 8 on SQLite).
	MaxOpenConns int
	// Logger receives GORM's lines (default: logrus's standard logger).
	Logger logrus.FieldLogger
	// SlowQuery is the threshold above which GORM logs a query as slow (default 500ms).
	SlowQuery time.Duration
	// Exclusive, on SQLite, refuses to open a file another process opened
	// with Exclusive (ErrSQLiteInUse) until Close. chime serve sets it: one
	// node per SQLite file. Holder names this process in the refusal the
	// other one gets.
	Exclusive bool
	Holder    string
	// IdleTxTimeout is how long the server lets a transaction of this
	// store sit between statements before it rolls it back and drops the
	// connection (default DefaultIdleTxTimeout; whole seconds on MariaDB;
	// MySQL and SQLite have no such bound).
	IdleTxTimeout time.Duration
	// OnTxRetry, when set, is called each time InTx runs a transaction again,
	// with the reason (RetryReason): a deadlock retried in silence hid a
	// lock-order bug once, so the count is exported as a metric.
	OnTxRetry func(reason string)
}

// Store is an open database.
type Store struct {
	db      *gorm.DB
	sqlDB   *sql.DB
	dialect Dialect
	log     logrus.FieldLogger
	unlock  func()
	// pgConfig is the PostgreSQL connection config, for the LISTEN
	// connection, which lives outside the pool.
	pgConfig *pgx.ConnConfig
	// noIdleTimeout: the server has no idle_transaction_timeout (MySQL,
	// not MariaDB); fenced transactions stop asking for it.
	noIdleTimeout atomic.Bool
	onTxRetry     func(reason string)
	// graphs caches workflows' graphs for the decisions of their runs.
	graphs graphCache
	// completions counts completion batches by how they were written.
	completions struct{ alone, inTx atomic.Int64 }
	// activeHint is the jobs active at the latest count of a limited
	// claim: it says whether the next may try the total alone (see
	// countLimits). Only a guess: a wrong one costs a statement, never a
	// limit.
	activeHint atomic.Int64
	// limitPaths counts the claims a limit bound by how it was checked:
	// locks first, late, and late checks that found a limit passed.
	limitPaths struct{ first, late, fellBack atomic.Int64 }
}

// Open connects to the database in cfg and checks that it answers.
func Open(ctx context.Context, cfg Config) (st *Store, err error) {
	var unlock func()
	if cfg.Driver == "" {
		cfg.Driver = SQLite
	}
	if cfg.Logger == nil {
		cfg.Logger = logrus.StandardLogger()
	}
	if cfg.SlowQuery == 0 {
		cfg.SlowQuery = 500 * time.Millisecond
	}
	gcfg := &gorm.Config{
		Logger:                 NewGormLogger(cfg.Logger, cfg.SlowQuery),
		NowFunc:                func() time.Time { return DBTime(time.Now()) },
		SkipDefaultTransaction: true,
		TranslateError:         true,
	}
	switch cfg.Driver {
	case SQLite, MySQL, Postgres:
		if err := checkDSNForm(cfg.Driver, cfg.DSN); err != nil {
			return nil, err
		}
	}
	var (
		dialector gorm.Dialector
		pgCfg     *pgx.ConnConfig
	)
	switch cfg.Driver {
	case Postgres:
		dialector, pgCfg, err = postgresDialector(ctx, &cfg)
	case MySQL:
		dialector, err = mysqlDialector(ctx, &cfg)
	case SQLite:
		dialector, unlock, err = sqliteDialector(&cfg)
	default:
		return nil, fmt.Errorf("database.driver: unknown driver %q (want sqlite, mysql or postgres)", cfg.Driver)
	}
	if err != nil {
		return nil, err
	}
	if unlock != nil {
		// Released again unless the store is handed out.
		defer func() {
			if st == nil {
				unlock()
			}
		}()
	}
	db, err := gorm.Open(dialector, gcfg)
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", cfg.Driver, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", cfg.Driver, err)
	}
	sqlDB.SetMaxOpenConns(cfg.MaxOpenConns)
	sqlDB.SetMaxIdleConns(cfg.MaxOpenConns)
	sqlDB.SetConnMaxLifetime(30 * time.Minute)
	if err := sqlDB.PingContext(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("connect to %s database: %w", cfg.Driver, err)
	}
	return &Store{db: db, sqlDB: sqlDB, dialect: cfg.Driver, log: cfg.Logger, unlock: unlock, pgConfig: pgCfg, onTxRetry: cfg.OnTxRetry}, nil
}

// postgresDialector opens a PostgreSQL pool, creating a missing database
// as on MySQL.
func postgresDialector(ctx context.Context, cfg *Config) (gorm.Dialector, *pgx.ConnConfig, error) {
	c, err := pgConfig(cfg.DSN, cfg.idleTxTimeout())
	if err != nil {
		return nil, nil, err
	}
	if cfg.MaxOpenConns == 0 {
		cfg.MaxOpenConns = 32
	}
	probe := openPostgres(c)
	err = probe.PingContext(ctx)
	_ = probe.Close()
	if err != nil {
		if err := pgFirstRun(ctx, c, cfg.Logger, err); err != nil {
			return nil, nil, fmt.Errorf("connect to postgres database: %w", err)
		}
	}
	return postgres.New(postgres.Config{Conn: openPostgres(c)}), c, nil
}

// mysqlDialector completes the DSN; a missing database is created, a
// malformed DSN explained.
func mysqlDialector(ctx context.Context, cfg *Config) (gorm.Dialector, error) {
	dsn, err := mysqlDSN(ctx, cfg.DSN, cfg.idleTxTimeout())
	if err != nil {
		complete := func(ctx context.Context, dsn string) (string, error) { return mysqlDSN(ctx, dsn, cfg.idleTxTimeout()) }
		if dsn, err = mysqlFirstRun(ctx, cfg.DSN, cfg.Logger, err, complete); err != nil {
			return nil, err
		}
	}
	if cfg.MaxOpenConns == 0 {
		cfg.MaxOpenConns = 32
	}
	return mysql.New(mysql.Config{DSN: dsn}), nil
}

// sqliteDialector checks and creates the file and, with cfg.Exclusive,
// takes its lock: unlock releases it (nil when none was taken).
func sqliteDialector(cfg *Config) (d gorm.Dialector, unlock func(), err error) {
	if file := sqliteFile(cfg.DSN); file != "" {
		if err := checkSQLiteDir(file); err != nil {
			// user@host:3306/db, a MySQL DSN without tcp(...), is
			// a path only when its directory exists.
			if missingNetwork(cfg.DSN) {
				return nil, nil, mismatch(SQLite, MySQL)
			}
			return nil, nil, err
		}
		if err := createSQLiteFile(cfg.DSN, file, cfg.Logger); err != nil {
			return nil, nil, err
		}
		if cfg.Exclusive {
			if unlock, err = lockSQLite(file, lockHolder(cfg.Holder)); err != nil {
				return nil, nil, err
			}
		}
	}
	if cfg.MaxOpenConns == 0 {
		cfg.MaxOpenConns = 8
	}
	return sqlite.Open(sqliteDSN(cfg.DSN)), unlock, nil
}

// rowLocks says whether the database locks rows (SELECT ... FOR UPDATE
// [SKIP LOCKED]): MySQL and PostgreSQL. SQLite's single writer makes every
// transaction exclusive instead.
func (s *Store) rowLocks() bool { return s.dialect != SQLite }

// DB returns the GORM handle, for plain CRUD outside the hot paths.
func (s *Store) DB() *gorm.DB { return s.db }

// SQL returns the underlying database/sql handle.
func (s *Store) SQL() *sql.DB { return s.sqlDB }

// Dialect says which database this is.
func (s *Store) Dialect() Dialect { return s.dialect }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.sqlDB.PingContext(ctx) }

// Close closes the connection pool, and then lets another process open an
// Exclusive SQLite file.
func (s *Store) Close() error {
	err := s.sqlDB.Close()
	if s.unlock != nil {
		s.unlock()
		s.unlock = nil
	}
	return err
}

// DBTime is chimedb.DBTime: the form in which store writes a time.
func DBTime(t time.Time) time.Time { return chimedb.DBTime(t) }

// sqliteDSN turns a file path into a DSN with the pragmas chime relies on:
// WAL so readers do not block the writer, a busy timeout instead of
// SQLITE_BUSY errors, and BEGIN IMMEDIATE so two writers queue up instead of
// deadlocking on a lock upgrade.
func sqliteDSN(path string) string {
	if path == "" {
		path = "chime.db"
	}
	if strings.Contains(path, "?") {
		return path
	}
	return path + "?_pragma=busy_timeout(15000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
}

// mysqlDSN adds what chime needs to a go-sql-driver DSN: parseTime, UTC on
// both sides of the wire, and READ COMMITTED, under which fire inserts and
// SKIP LOCKED claims do not deadlock (see docs/architecture.md). MariaDB before 11.1
// calls the isolation variable tx_isolation, MySQL 8 transaction_isolation,
// so we ask the server which one it knows.
func mysqlDSN(ctx context.Context, dsn string, idleTx time.Duration) (string, error) {
	if dsn == "" {
		return "", errors.New("database.dsn: empty; a MySQL DSN looks like root@tcp(127.0.0.1:3306)/chime")
	}
	c, err := mysqldrv.ParseDSN(dsn)
	if err != nil {
		return "", fmt.Errorf("database.dsn: %w", err)
	}
	c.ParseTime = true
	c.Loc = time.UTC
	// Client-side interpolation saves a server round trip (prepare, execute,
	// close) per statement with arguments: about a tenth of MariaDB's CPU on
	// the hot paths. Safe with the utf8mb4 connections chime opens.
	c.InterpolateParams = true
	if c.Params == nil {
		c.Params = map[string]string{}
	}
	// Exactly '+00:00': migration 00003's triggers leave a session at this
	// zone alone and convert what any other session writes.
	c.Params["time_zone"] = "'+00:00'"
	if c.Timeout == 0 {
		c.Timeout = 5 * time.Second
	}
	variable, idle, err := serverVariables(ctx, c)
	if err != nil {
		return "", err
	}
	c.Params[variable] = "'READ-COMMITTED'"
	if idle {
		c.Params["idle_transaction_timeout"] = strconv.Itoa(max(int(idleTx/time.Second), 1))
	}
	return c.FormatDSN(), nil
}

// DefaultIdleTxTimeout is how long the server lets one of chime's
// transactions sit between statements before it rolls it back and closes
// the connection (MariaDB's idle_transaction_timeout, PostgreSQL's
// idle_in_transaction_session_timeout; MySQL has no such variable). No
// transaction of chime's pauses for more than the fire-ahead window
// (at most 2 s); a node frozen (SIGSTOP, a VM paused) or cut off inside
// one would otherwise keep its row locks, and the fires of its schedules
// would wait on them after another node took the lead, until the TCP
// connection died.
const DefaultIdleTxTimeout = 30 * time.Second

func (c Config) idleTxTimeout() time.Duration {
	if c.IdleTxTimeout > 0 {
		return c.IdleTxTimeout
	}
	return DefaultIdleTxTimeout
}

// serverVariables asks the server which name its isolation variable has
// (MariaDB before 11.1 calls it tx_isolation, MySQL 8
// transaction_isolation) and whether it has idle_transaction_timeout
// (MariaDB 10.3 and later).
func serverVariables(ctx context.Context, c *mysqldrv.Config) (isolation string, idle bool, err error) {
	conn, err := mysqldrv.NewConnector(c)
	if err != nil {
		return "", false, fmt.Errorf("database.dsn: %w", err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	var v string
	isolation = "transaction_isolation"
	if err := db.QueryRowContext(ctx, "SELECT @@transaction_isolation").Scan(&v); err != nil {
		if err := db.QueryRowContext(ctx, "SELECT @@tx_isolation").Scan(&v); err != nil {
			return "", false, fmt.Errorf("connect to mysql database: %w", err)
		}
		isolation = "tx_isolation"
	}
	idle = db.QueryRowContext(ctx, "SELECT @@idle_transaction_timeout").Scan(&v) == nil
	return isolation, idle, nil
}
