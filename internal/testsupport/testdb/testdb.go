// Package testdb gives tests real, migrated databases: a fresh SQLite file in
// t.TempDir(), a fresh MariaDB/MySQL database created on the server named
// by CHIME_TEST_MYSQL_DSN, and a fresh PostgreSQL database created on the
// server named by CHIME_TEST_POSTGRES_DSN, each dropped when the test ends.
// The migrations run once per test binary and dialect; each test gets a
// copy (snapshot.go). On PostgreSQL the migrated template, named
// chime_t_tmpl_<hash of the migrations>, stays on the server for the next
// run.
//
// Without CHIME_TEST_MYSQL_DSN (CHIME_TEST_POSTGRES_DSN) the MySQL
// (PostgreSQL) part of a test is skipped, unless CI=true, where a missing
// database is a failure: CI must never pass by skipping. testdb imports
// store, sql (the migrations, to name a migrated template by them) and
// test-only libraries; production code never imports it.
package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/store"
)

// EnvDSN names the variable that points tests at a MySQL server.
const EnvDSN = "CHIME_TEST_MYSQL_DSN"

// EnvPostgresDSN names the variable that points tests at a PostgreSQL
// server, as a libpq URL such as
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable. Its user must
// be allowed to create databases.
const EnvPostgresDSN = "CHIME_TEST_POSTGRES_DSN"

// Dialects lists the databases every storage test runs against.
var Dialects = []store.Dialect{store.SQLite, store.MySQL, store.Postgres}

// ForEach runs fn as a subtest once per dialect, each with its own fresh database.
func ForEach(t *testing.T, fn func(t *testing.T, st *store.Store)) {
	t.Helper()
	for _, d := range Dialects {
		t.Run(string(d), func(t *testing.T) {
			fn(t, Open(t, d))
		})
	}
}

// ServerDialects are the databases with row locks and sessions of their
// own: what SQLite's single writer cannot show is tested on these.
var ServerDialects = []store.Dialect{store.MySQL, store.Postgres}

// ForEachServer runs fn as a parallel subtest once per server dialect,
// each with its own fresh database.
func ForEachServer(t *testing.T, fn func(t *testing.T, st *store.Store)) {
	t.Helper()
	for _, d := range ServerDialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			fn(t, Open(t, d))
		})
	}
}

// Open returns a fresh migrated database of dialect d, closed at cleanup.
func Open(t testing.TB, d store.Dialect) *store.Store {
	t.Helper()
	st, _ := open(t, d, nil)
	return st
}

// OpenLogged is Open with the store logging to log (nil: as Open's), for
// tests that read what the store logs.
func OpenLogged(t testing.TB, d store.Dialect, log *logrus.Logger) *store.Store {
	t.Helper()
	st, _ := open(t, d, log)
	return st
}

// OpenConfig is Open that also returns the store config that reaches the
// database, for tests that start processes of their own on it.
func OpenConfig(t testing.TB, d store.Dialect) (*store.Store, store.Config) {
	t.Helper()
	return open(t, d, nil)
}

func open(t testing.TB, d store.Dialect, log *logrus.Logger) (*store.Store, store.Config) {
	t.Helper()
	cfg := config(t, d, true)
	if log != nil {
		cfg.Logger = log
	}
	ctx := context.Background()
	st, err := store.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("testdb: open %s: %v", d, err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatalf("testdb: migrate %s: %v", d, err)
	}
	return st, cfg
}

// Config creates a fresh, empty database of dialect d and returns the store
// config that reaches it, for tests that start their own processes.
func Config(t testing.TB, d store.Dialect) store.Config {
	t.Helper()
	return config(t, d, false)
}

// MigratedConfig is Config for a database that holds the fully migrated
// schema (as Open's do), for tests that open their own stores on it: a
// copy of the migrations' result, far cheaper than running them again.
func MigratedConfig(t testing.TB, d store.Dialect) store.Config {
	t.Helper()
	return config(t, d, true)
}

// config is Config; with migrated, the database holds the fully migrated
// schema (see snapshot.go).
func config(t testing.TB, d store.Dialect, migrated bool) store.Config {
	t.Helper()
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	if testing.Verbose() {
		log.SetLevel(logrus.InfoLevel)
	}
	switch d {
	case store.SQLite:
		cfg := store.Config{Driver: store.SQLite, DSN: filepath.Join(t.TempDir(), "chime.db"), Logger: log}
		if migrated {
			restoreSQLite(t, cfg.DSN)
		}
		return cfg
	case store.MySQL:
		cfg := store.Config{Driver: store.MySQL, DSN: CreateMySQLDatabase(t), Logger: log}
		if migrated {
			restoreMySQL(t, cfg.DSN)
		}
		return cfg
	case store.Postgres:
		template := ""
		if migrated {
			template = postgresTemplate(t)
		}
		return store.Config{Driver: store.Postgres, DSN: createPostgresDatabase(t, template), Logger: log}
	}
	t.Fatalf("testdb: unknown dialect %q", d)
	return store.Config{}
}

// MySQLServerDSN returns CHIME_TEST_MYSQL_DSN, skipping the test when it is
// unset, or failing it when CI=true.
func MySQLServerDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("testdb: %s is not set; in CI a missing MySQL database is a failure", EnvDSN)
		}
		t.Skipf("testdb: %s not set; skipping the MySQL half", EnvDSN)
	}
	return dsn
}

// CreateMySQLDatabase creates an empty database with a random name on the
// test server, drops it at cleanup, and returns a DSN for it.
func CreateMySQLDatabase(t testing.TB) string {
	t.Helper()
	cfg, err := mysqldrv.ParseDSN(MySQLServerDSN(t))
	if err != nil {
		t.Fatalf("testdb: parse %s: %v", EnvDSN, err)
	}
	admin := cfg.Clone()
	admin.DBName = ""
	db, err := sql.Open("mysql", admin.FormatDSN())
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	defer db.Close()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "chime_t_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4"); err != nil {
		if os.Getenv("CI") != "true" {
			t.Skipf("testdb: MySQL at %s unusable: %v", EnvDSN, err)
		}
		t.Fatalf("testdb: create database: %v", err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("mysql", admin.FormatDSN())
		if err != nil {
			return
		}
		defer db.Close()
		_, _ = db.Exec("DROP DATABASE IF EXISTS `" + name + "`")
	})
	cfg.DBName = name
	return cfg.FormatDSN()
}

// PostgresServerDSN returns CHIME_TEST_POSTGRES_DSN, skipping the test when
// it is unset, or failing it when CI=true.
func PostgresServerDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvPostgresDSN)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("testdb: %s is not set; in CI a missing PostgreSQL database is a failure", EnvPostgresDSN)
		}
		t.Skipf("testdb: %s not set; skipping the PostgreSQL part", EnvPostgresDSN)
	}
	return dsn
}

// CreatePostgresDatabase creates an empty database with a random name on
// the test server, drops it at cleanup, and returns a DSN for it. A
// database each (about a tenth of a second to create) rather than a
// schema each keeps NOTIFY, which is per database, private to the test.
func CreatePostgresDatabase(t testing.TB) string {
	t.Helper()
	return createPostgresDatabase(t, "")
}

// createPostgresDatabase is CreatePostgresDatabase cloning template, or
// template1 (the server's default) when template is empty.
func createPostgresDatabase(t testing.TB, template string) string {
	t.Helper()
	server := PostgresServerDSN(t)
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("testdb: %s must be a URL such as postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", EnvPostgresDSN)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "chime_t_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, server)
	if err == nil {
		create := "CREATE DATABASE " + name
		if template != "" {
			create += " TEMPLATE " + template
		}
		err = execRetryInUse(ctx, admin, create)
		_ = admin.Close(ctx)
	}
	if err != nil {
		if os.Getenv("CI") != "true" {
			t.Skipf("testdb: PostgreSQL at %s unusable: %v", EnvPostgresDSN, err)
		}
		t.Fatalf("testdb: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin, err := pgx.Connect(ctx, server)
		if err != nil {
			return
		}
		defer func() { _ = admin.Close(ctx) }()
		// FORCE: a test's LISTEN connection or pool may still be closing.
		_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	u.Path = "/" + name
	return u.String()
}
