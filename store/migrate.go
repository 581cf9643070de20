package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/pressly/goose/v3"

	chimesql "github.com/chimesched/chime/sql"
)

// Migrate applies every embedded migration not yet applied and returns the
// schema version. Running it again is a no-op; goose records versions in
// goose_db_version. ApplyMigrations also says which it applied.
func (s *Store) Migrate(ctx context.Context) (int64, error) {
	res, err := s.ApplyMigrations(ctx)
	return res.Version, err
}

// Migration names one embedded migration: sql/<dialect>/00012_priorities.sql
// is version 12, name "priorities".
type Migration struct {
	Version int64
	Name    string
}

// String is the migration's file name without .sql: 00012_priorities.
func (m Migration) String() string { return fmt.Sprintf("%05d_%s", m.Version, m.Name) }

// MigrateResult is what ApplyMigrations did.
type MigrateResult struct {
	// Applied are the migrations applied, in order; empty when the schema
	// was up to date. On an error, those applied before the one that failed.
	Applied []Migration
	// Version is the schema version after them.
	Version int64
}

// ApplyMigrations applies every embedded migration not yet applied and
// says which, so that `chime migrate` and `chime serve` can tell a first
// start or an upgrade from a database that needed nothing.
func (s *Store) ApplyMigrations(ctx context.Context) (MigrateResult, error) {
	var res MigrateResult
	p, err := s.migrator()
	if err != nil {
		return res, err
	}
	results, err := p.Up(ctx)
	var partial *goose.PartialError
	if errors.As(err, &partial) {
		results = partial.Applied
	}
	for _, r := range results {
		if r != nil && r.Source != nil && r.Error == nil {
			res.Applied = append(res.Applied, migrationOf(r.Source))
		}
	}
	if err != nil {
		return res, fmt.Errorf("migrate %s: %w", s.dialect, err)
	}
	res.Version, err = p.GetDBVersion(ctx)
	return res, err
}

func migrationOf(src *goose.Source) Migration {
	base := strings.TrimSuffix(path.Base(src.Path), path.Ext(src.Path))
	_, name, _ := strings.Cut(base, "_")
	return Migration{Version: src.Version, Name: name}
}

// MigrateDown rolls back every migration; for tests of the down scripts.
func (s *Store) MigrateDown(ctx context.Context) error {
	p, err := s.migrator()
	if err != nil {
		return err
	}
	if _, err := p.DownTo(ctx, 0); err != nil {
		return fmt.Errorf("migrate down %s: %w", s.dialect, err)
	}
	return nil
}

// MigrateDownTo rolls back the migrations above version; for tests of a
// down script.
func (s *Store) MigrateDownTo(ctx context.Context, version int64) error {
	p, err := s.migrator()
	if err != nil {
		return err
	}
	if _, err := p.DownTo(ctx, version); err != nil {
		return fmt.Errorf("migrate %s down to %d: %w", s.dialect, version, err)
	}
	return nil
}

// SchemaVersion returns the applied schema version (0 when none).
func (s *Store) SchemaVersion(ctx context.Context) (int64, error) {
	p, err := s.migrator()
	if err != nil {
		return 0, err
	}
	return p.GetDBVersion(ctx)
}

func (s *Store) migrator() (*goose.Provider, error) {
	dir, err := fs.Sub(chimesql.Migrations, string(s.dialect))
	if err != nil {
		return nil, err
	}
	d := goose.DialectMySQL
	switch s.dialect {
	case SQLite:
		d = goose.DialectSQLite3
	case Postgres:
		d = goose.DialectPostgres
	}
	p, err := goose.NewProvider(d, s.sqlDB, dir)
	if err != nil {
		return nil, fmt.Errorf("load migrations for %s: %w", s.dialect, err)
	}
	return p, nil
}
