package store

import (
	"context"
	"fmt"
	"strings"

	"gorm.io/gorm"
)

// explain returns the database's plan for a statement written with gorm's
// placeholders (slices expand for IN ?): MySQL's EXPLAIN FORMAT=JSON, which
// names the key parts a range uses, SQLite's EXPLAIN QUERY PLAN and
// PostgreSQL's EXPLAIN, one "column=value" line per row of the answer.
func (s *Store) explain(ctx context.Context, sql string, args ...any) (string, error) {
	return explainIn(s.db.WithContext(ctx), s.dialect, sql, args...)
}

// explainIn is explain on db, which may be a transaction.
func explainIn(db *gorm.DB, dialect Dialect, sql string, args ...any) (string, error) {
	prefix := "EXPLAIN "
	switch dialect {
	case MySQL:
		prefix = "EXPLAIN FORMAT=JSON "
	case SQLite:
		prefix = "EXPLAIN QUERY PLAN "
	}
	rows, err := db.Raw(prefix+sql, args...).Rows()
	if err != nil {
		return "", fmt.Errorf("explain: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return "", err
	}
	var out strings.Builder
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return "", err
		}
		for i, c := range cols {
			v := vals[i]
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			fmt.Fprintf(&out, "%s=%v ", c, v)
		}
		out.WriteString("\n")
	}
	return out.String(), rows.Err()
}
