package store

import (
	"context"
	"fmt"
	"slices"
)

// MigrationStatus is one embedded migration and whether the database has
// it.
type MigrationStatus struct {
	Migration
	Applied bool
}

// SchemaStatus compares the database's schema with the migrations
// embedded in this binary, without writing anything: `chime migrate
// --status` and `--dry-run` print it, and a node checks it before it
// migrates or starts.
type SchemaStatus struct {
	// Version is the database's schema version: the highest applied (0 on
	// a database chime never migrated).
	Version int64
	// Known is the newest migration embedded in this binary.
	Known int64
	// Migrations are the embedded ones, in order.
	Migrations []MigrationStatus
	// Unknown are versions applied to the database that this binary does
	// not embed: a newer chime migrated it.
	Unknown []int64
}

// Pending are the embedded migrations the database has not had, in the
// order `chime migrate` applies them.
func (s SchemaStatus) Pending() []Migration {
	var out []Migration
	for _, m := range s.Migrations {
		if !m.Applied {
			out = append(out, m.Migration)
		}
	}
	return out
}

// Newer says whether a newer chime than this one migrated the database.
func (s SchemaStatus) Newer() bool { return s.Version > s.Known }

// SchemaStatus reads goose_db_version (absent: nothing applied) and the
// embedded migrations. It reads only: a status or a dry run on a fresh
// database leaves it without even goose's table.
func (s *Store) SchemaStatus(ctx context.Context) (SchemaStatus, error) {
	var st SchemaStatus
	p, err := s.migrator()
	if err != nil {
		return st, err
	}
	applied := map[int64]bool{}
	if s.db.WithContext(ctx).Migrator().HasTable("goose_db_version") {
		rows, err := s.sqlDB.QueryContext(ctx, "SELECT version_id, is_applied FROM goose_db_version ORDER BY id")
		if err != nil {
			return st, fmt.Errorf("read goose_db_version: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var v int64
			var ok bool
			if err := rows.Scan(&v, &ok); err != nil {
				return st, fmt.Errorf("read goose_db_version: %w", err)
			}
			// goose's legacy rows record a down as is_applied = false
			// after the up; the later row decides.
			applied[v] = ok
		}
		if err := rows.Err(); err != nil {
			return st, fmt.Errorf("read goose_db_version: %w", err)
		}
	}
	known := map[int64]bool{}
	for _, src := range p.ListSources() {
		m := migrationOf(src)
		known[m.Version] = true
		st.Known = max(st.Known, m.Version)
		st.Migrations = append(st.Migrations, MigrationStatus{Migration: m, Applied: applied[m.Version]})
	}
	for v, ok := range applied {
		if !ok || v == 0 {
			continue
		}
		st.Version = max(st.Version, v)
		if !known[v] {
			st.Unknown = append(st.Unknown, v)
		}
	}
	slices.Sort(st.Unknown)
	return st, nil
}
