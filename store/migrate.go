package store

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"

	chimesql "github.com/chimesched/chime/sql"
)

// Migrate applies every embedded migration not yet applied and returns the
// schema version. Running it again is a no-op; goose records versions in
// goose_db_version.
func (s *Store) Migrate(ctx context.Context) (int64, error) {
	p, err := s.migrator()
	if err != nil {
		return 0, err
	}
	if _, err := p.Up(ctx); err != nil {
		return 0, fmt.Errorf("migrate %s: %w", s.dialect, err)
	}
	return p.GetDBVersion(ctx)
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
