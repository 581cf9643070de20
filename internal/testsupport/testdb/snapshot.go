package testdb

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sirupsen/logrus"

	chimesql "github.com/chimesched/chime/sql"
	"github.com/chimesched/chime/store"
)

// Running every migration for every test was most of the suite's time: the
// migrations rebuild tables (SQLite's ALTER limits, MariaDB's ALTERs copy
// them) and the suite opens about a thousand databases. So the migrations
// run once per test binary and dialect, and each test gets a copy of the
// result: a fresh, fully migrated database of its own, as before, at the
// price of a file copy (SQLite), a CREATE DATABASE … TEMPLATE (PostgreSQL)
// or replaying the migrated schema's own SHOW CREATE statements (MariaDB).
// TestSnapshotMatchesMigrations compares each copy with a migrated database.

var snapshots struct {
	sync.Mutex
	sqlite   *sqliteSnapshot
	mysql    *mysqlSnapshot
	postgres string // the template database's name
}

// migrateInto migrates a scratch database described by cfg.
func migrateInto(cfg store.Config) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	st, err := store.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	_, err = st.Migrate(ctx)
	return err
}

func quietLogger() *logrus.Logger {
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	return log
}

// --- SQLite: the migrated file's bytes.

type sqliteSnapshot struct {
	file []byte
	err  error
}

// restoreSQLite writes the migrated database to path.
func restoreSQLite(t testing.TB, path string) {
	t.Helper()
	snapshots.Lock()
	s := snapshots.sqlite
	if s == nil {
		s = &sqliteSnapshot{}
		s.file, s.err = buildSQLite()
		snapshots.sqlite = s
	}
	snapshots.Unlock()
	err := s.err
	if err == nil {
		err = os.WriteFile(path, s.file, 0o600)
	}
	if err != nil {
		t.Fatalf("testdb: migrated sqlite database: %v", err)
	}
}

func buildSQLite() ([]byte, error) {
	dir, err := os.MkdirTemp("", "chime-testdb-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "chime.db")
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{Driver: store.SQLite, DSN: path, Logger: quietLogger()})
	if err != nil {
		return nil, err
	}
	if _, err := st.Migrate(ctx); err != nil {
		_ = st.Close()
		return nil, err
	}
	// The file is journal_mode=WAL: fold the log into the main file so
	// that the main file alone is the whole database.
	if err := st.DB().Exec("PRAGMA wal_checkpoint(TRUNCATE)").Error; err != nil {
		_ = st.Close()
		return nil, err
	}
	if err := st.Close(); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		return nil, fmt.Errorf("sqlite snapshot: %d bytes left in the WAL after a checkpoint", fi.Size())
	}
	return os.ReadFile(path)
}

// --- MariaDB/MySQL: the migrated schema as statements.

type mysqlSnapshot struct {
	tables   []string // CREATE TABLE statements, as SHOW CREATE TABLE gives them
	rows     []mysqlTableRows
	routines []mysqlObject // functions and procedures, before the triggers that call them
	triggers []mysqlObject // in their firing order per table and event
	err      error
}

type mysqlTableRows struct {
	table   string
	columns []string
	values  [][]any
}

// mysqlObject is a stored program with the session settings it was
// created under, which it keeps.
type mysqlObject struct {
	create, sqlMode, charset, collation string
}

// restoreMySQL fills the empty database at dsn with the migrated schema.
func restoreMySQL(t testing.TB, dsn string) {
	t.Helper()
	if err := restoreMySQLErr(dsn); err != nil {
		t.Fatalf("testdb: migrated mysql database: %v", err)
	}
}

func restoreMySQLErr(dsn string) error {
	snapshots.Lock()
	s := snapshots.mysql
	if s == nil {
		s = buildMySQL()
		snapshots.mysql = s
	}
	snapshots.Unlock()
	if s.err != nil {
		return s.err
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// One connection: the session settings below are per session.
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	if _, err := conn.ExecContext(ctx, "SET SESSION foreign_key_checks = 0"); err != nil {
		return err
	}
	for _, q := range s.tables {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%w: %s", err, q)
		}
	}
	// The rows the migrations wrote, before any trigger exists, so that
	// copying them fires nothing the migrations did not.
	for _, r := range s.rows {
		q := "INSERT INTO `" + r.table + "` (`" + strings.Join(r.columns, "`, `") + "`) VALUES (" +
			strings.TrimSuffix(strings.Repeat("?, ", len(r.columns)), ", ") + ")"
		for _, v := range r.values {
			if _, err := conn.ExecContext(ctx, q, v...); err != nil {
				return fmt.Errorf("%w: %s", err, q)
			}
		}
	}
	for _, o := range append(append([]mysqlObject(nil), s.routines...), s.triggers...) {
		if _, err := conn.ExecContext(ctx, "SET SESSION sql_mode = ?, character_set_client = ?, collation_connection = ?",
			o.sqlMode, o.charset, o.collation); err != nil {
			return err
		}
		if _, err := conn.ExecContext(ctx, o.create); err != nil {
			return fmt.Errorf("%w: %s", err, o.create)
		}
	}
	return nil
}

// buildMySQL migrates a scratch database, reads back its schema and rows,
// and drops it: nothing stays on the server.
func buildMySQL() *mysqlSnapshot {
	s := &mysqlSnapshot{}
	s.err = func() error {
		dsn, drop, err := scratchMySQL()
		if err != nil {
			return err
		}
		defer drop()
		if err := migrateInto(store.Config{Driver: store.MySQL, DSN: dsn, Logger: quietLogger()}); err != nil {
			return err
		}
		return s.read(dsn)
	}()
	return s
}

func scratchMySQL() (dsn string, drop func(), err error) {
	cfg, err := mysqldrv.ParseDSN(os.Getenv(EnvDSN))
	if err != nil {
		return "", nil, err
	}
	admin := cfg.Clone()
	admin.DBName = ""
	db, err := sql.Open("mysql", admin.FormatDSN())
	if err != nil {
		return "", nil, err
	}
	name := randomName()
	if _, err := db.Exec("CREATE DATABASE `" + name + "` CHARACTER SET utf8mb4"); err != nil {
		_ = db.Close()
		return "", nil, err
	}
	cfg.DBName = name
	return cfg.FormatDSN(), func() {
		_, _ = db.Exec("DROP DATABASE IF EXISTS `" + name + "`")
		_ = db.Close()
	}, nil
}

func (s *mysqlSnapshot) read(dsn string) error {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var views int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.tables
		WHERE table_schema = DATABASE() AND table_type <> 'BASE TABLE'`).Scan(&views); err != nil {
		return err
	}
	if views > 0 {
		// A view would need its own CREATE VIEW replay, in dependency order.
		return errors.New("mysql snapshot: the migrated schema has views, which testdb does not copy yet")
	}
	tables, err := queryStrings(ctx, db, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = DATABASE() ORDER BY table_name`)
	if err != nil {
		return err
	}
	for _, tbl := range tables {
		var name, create string
		if err := db.QueryRowContext(ctx, "SHOW CREATE TABLE `"+tbl+"`").Scan(&name, &create); err != nil {
			return err
		}
		s.tables = append(s.tables, create)
		r, err := readRows(ctx, db, tbl)
		if err != nil {
			return err
		}
		if len(r.values) > 0 {
			s.rows = append(s.rows, r)
		}
	}
	routines, err := db.QueryContext(ctx, `SELECT routine_type, routine_name FROM information_schema.routines
		WHERE routine_schema = DATABASE() ORDER BY routine_type, routine_name`)
	if err != nil {
		return err
	}
	var kinds, names []string
	for routines.Next() {
		var k, n string
		if err := routines.Scan(&k, &n); err != nil {
			_ = routines.Close()
			return err
		}
		kinds, names = append(kinds, k), append(names, n)
	}
	if err := routines.Close(); err != nil {
		return err
	}
	for i := range names {
		// SHOW CREATE FUNCTION/PROCEDURE: name, sql_mode, create, charset, collation, db collation.
		o, err := showCreate(ctx, db, "SHOW CREATE "+kinds[i]+" `"+names[i]+"`", 1, 2, 3, 4)
		if err != nil {
			return err
		}
		s.routines = append(s.routines, o)
	}
	// Recreated in this order, each trigger lands last among its table's
	// triggers for the same timing and event: the order they fire in stays.
	triggers, err := queryStrings(ctx, db, `SELECT trigger_name FROM information_schema.triggers
		WHERE trigger_schema = DATABASE()
		ORDER BY event_object_table, action_timing, event_manipulation, action_order`)
	if err != nil {
		return err
	}
	for _, name := range triggers {
		// SHOW CREATE TRIGGER: name, sql_mode, create, charset, collation, db collation, created.
		o, err := showCreate(ctx, db, "SHOW CREATE TRIGGER `"+name+"`", 1, 2, 3, 4)
		if err != nil {
			return err
		}
		s.triggers = append(s.triggers, o)
	}
	return nil
}

func showCreate(ctx context.Context, db *sql.DB, q string, mode, create, charset, collation int) (mysqlObject, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return mysqlObject{}, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return mysqlObject{}, err
	}
	if !rows.Next() {
		return mysqlObject{}, fmt.Errorf("%s: no row", q)
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return mysqlObject{}, err
	}
	o := mysqlObject{create: vals[create].String, sqlMode: vals[mode].String,
		charset: vals[charset].String, collation: vals[collation].String}
	if o.create == "" {
		return o, fmt.Errorf("%s: no statement (missing rights?)", q)
	}
	return o, rows.Err()
}

func readRows(ctx context.Context, db *sql.DB, table string) (mysqlTableRows, error) {
	r := mysqlTableRows{table: table}
	rows, err := db.QueryContext(ctx, "SELECT * FROM `"+table+"`")
	if err != nil {
		return r, err
	}
	defer rows.Close()
	if r.columns, err = rows.Columns(); err != nil {
		return r, err
	}
	for rows.Next() {
		v := make([]any, len(r.columns))
		ptrs := make([]any, len(v))
		for i := range v {
			ptrs[i] = &v[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return r, err
		}
		r.values = append(r.values, v)
	}
	return r, rows.Err()
}

func queryStrings(ctx context.Context, db *sql.DB, q string) ([]string, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// --- PostgreSQL: a migrated template database on the server.

// postgresTemplate returns the name of a database holding the migrated
// schema, for CREATE DATABASE … TEMPLATE.
//
// The template is named after a hash of the migrations, so every test
// binary, run after run, shares it until the migrations change; it is
// built under a scratch name and renamed when complete, so a half-built
// one is never cloned, and two binaries building it at once both succeed.
// Clones of one template may run at once: the server refuses a clone only
// while a session is connected to the template, and none is once it is
// built.
func postgresTemplate(t testing.TB) string {
	t.Helper()
	snapshots.Lock()
	defer snapshots.Unlock()
	if snapshots.postgres == "" {
		name, err := buildPostgresTemplate()
		if err != nil {
			t.Fatalf("testdb: migrated postgres template: %v", err)
		}
		snapshots.postgres = name
	}
	return snapshots.postgres
}

func buildPostgresTemplate() (string, error) {
	sum, err := migrationsHash(store.Postgres)
	if err != nil {
		return "", err
	}
	final := "chime_t_tmpl_" + sum
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	server := os.Getenv(EnvPostgresDSN)
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		return "", err
	}
	defer func() { _ = admin.Close(ctx) }()
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", final).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return final, nil
	}
	build := randomName()
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+build); err != nil {
		return "", err
	}
	u, err := url.Parse(server)
	if err != nil {
		return "", err
	}
	u.Path = "/" + build
	if err := migrateInto(store.Config{Driver: store.Postgres, DSN: u.String(), Logger: quietLogger()}); err != nil {
		_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+build+" WITH (FORCE)")
		return "", err
	}
	err = execRetryInUse(ctx, admin, "ALTER DATABASE "+build+" RENAME TO "+final)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // duplicate_database: another binary won
		_, err = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+build+" WITH (FORCE)")
	}
	if err != nil {
		return "", err
	}
	return final, nil
}

// migrationsHash names the embedded migrations of dialect d, in content.
func migrationsHash(d store.Dialect) (string, error) {
	dir, err := fs.Sub(chimesql.Migrations, string(d))
	if err != nil {
		return "", err
	}
	var names []string
	if err := fs.WalkDir(dir, ".", func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			names = append(names, p)
		}
		return err
	}); err != nil {
		return "", err
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		b, err := fs.ReadFile(dir, n)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", n, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// execRetryInUse runs a statement that needs a database nobody is
// connected to: a store's sessions end a moment after it is closed.
func execRetryInUse(ctx context.Context, admin *pgx.Conn, q string) error {
	for i := 0; ; i++ {
		_, err := admin.Exec(ctx, q)
		var pgErr *pgconn.PgError
		if i == 100 || !errors.As(err, &pgErr) || pgErr.Code != "55006" { // object_in_use
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func randomName() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "chime_t_" + hex.EncodeToString(b[:])
}
