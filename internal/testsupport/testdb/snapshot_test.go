package testdb

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/chimesched/chime/store"
)

// TestSnapshotMatchesMigrations: what Open hands a test (a copy of a
// database migrated once) is what running the migrations gives: the same
// tables, columns, indexes, constraints, triggers, functions and rows.
func TestSnapshotMatchesMigrations(t *testing.T) {
	for _, d := range Dialects {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			migrated, err := store.Open(ctx, Config(t, d))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = migrated.Close() })
			if _, err := migrated.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			want := describe(t, d, migrated)
			got := describe(t, d, Open(t, d))
			if len(want) < 50 {
				t.Fatalf("describing the migrated %s schema gave only %d lines: the query is broken", d, len(want))
			}
			w := map[string]bool{}
			for _, l := range want {
				w[l] = true
			}
			g := map[string]bool{}
			for _, l := range got {
				g[l] = true
				if !w[l] {
					t.Errorf("only in the copy: %s", l)
				}
			}
			for _, l := range want {
				if !g[l] {
					t.Errorf("only in the migrated database: %s", l)
				}
			}
		})
	}
}

// describe lists a database's schema and rows, one fact a line.
func describe(t *testing.T, d store.Dialect, st *store.Store) []string {
	t.Helper()
	db, err := st.DB().DB()
	if err != nil {
		t.Fatal(err)
	}
	var queries []string
	switch d {
	case store.SQLite:
		queries = []string{`SELECT type, name, tbl_name, COALESCE(sql, '') FROM sqlite_master`}
	case store.MySQL:
		queries = []string{
			`SELECT table_name, column_name, ordinal_position, column_type, is_nullable, COALESCE(column_default, 'NULL'),
				extra, COALESCE(generation_expression, ''), COALESCE(character_set_name, ''), COALESCE(collation_name, '')
			 FROM information_schema.columns WHERE table_schema = DATABASE()`,
			`SELECT table_name, engine, COALESCE(table_collation, ''), COALESCE(create_options, ''), table_comment
			 FROM information_schema.tables WHERE table_schema = DATABASE()`,
			`SELECT table_name, index_name, non_unique, seq_in_index, column_name, COALESCE(sub_part, 0), index_type
			 FROM information_schema.statistics WHERE table_schema = DATABASE()`,
			`SELECT k.table_name, k.constraint_name, k.column_name, COALESCE(k.referenced_table_name, ''),
				COALESCE(k.referenced_column_name, ''), COALESCE(r.update_rule, ''), COALESCE(r.delete_rule, '')
			 FROM information_schema.key_column_usage k LEFT JOIN information_schema.referential_constraints r
			   ON r.constraint_schema = k.constraint_schema AND r.constraint_name = k.constraint_name AND r.table_name = k.table_name
			 WHERE k.table_schema = DATABASE()`,
			`SELECT table_name, constraint_name, check_clause FROM information_schema.check_constraints
			 WHERE constraint_schema = DATABASE()`,
			`SELECT trigger_name, event_object_table, action_timing, event_manipulation, action_order,
				action_statement, sql_mode, definer
			 FROM information_schema.triggers WHERE trigger_schema = DATABASE()`,
			`SELECT routine_type, routine_name, routine_definition, sql_mode
			 FROM information_schema.routines WHERE routine_schema = DATABASE()`,
		}
	case store.Postgres:
		queries = []string{
			`SELECT table_name, column_name, ordinal_position, data_type, is_nullable, COALESCE(column_default, 'NULL')
			 FROM information_schema.columns WHERE table_schema = 'public'`,
			`SELECT tablename, indexdef FROM pg_indexes WHERE schemaname = 'public'`,
			`SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint
			 WHERE connamespace = 'public'::regnamespace`,
			`SELECT tgrelid::regclass::text, tgname, pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal`,
			`SELECT proname, pg_get_functiondef(oid) FROM pg_proc WHERE pronamespace = 'public'::regnamespace`,
			`SELECT sequencename, COALESCE(last_value, 0) FROM pg_sequences WHERE schemaname = 'public'`,
		}
	}
	var out []string
	for _, q := range queries {
		out = append(out, rowsOf(t, db, q)...)
	}
	// Every table's rows, but goose's timestamp of when a migration ran.
	for _, tbl := range rowsOf(t, db, map[store.Dialect]string{
		store.SQLite:   `SELECT name FROM sqlite_master WHERE type = 'table'`,
		store.MySQL:    `SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()`,
		store.Postgres: `SELECT tablename FROM pg_tables WHERE schemaname = 'public'`,
	}[d]) {
		q := "SELECT * FROM " + tbl
		if tbl == "goose_db_version" {
			q = "SELECT id, version_id, is_applied FROM goose_db_version"
		}
		for _, r := range rowsOf(t, db, q) {
			out = append(out, tbl+": "+r)
		}
	}
	return out
}

func rowsOf(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		v := make([]any, len(cols))
		p := make([]any, len(cols))
		for i := range v {
			p[i] = &v[i]
		}
		if err := rows.Scan(p...); err != nil {
			t.Fatal(err)
		}
		s := make([]string, len(v))
		for i, x := range v {
			if b, ok := x.([]byte); ok {
				x = string(b)
			}
			s[i] = fmt.Sprint(x)
		}
		out = append(out, strings.Join(s, " | "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
