package report

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"unicode"

	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/chimesched/chime/tasks"
)

// Defaults and limits of the params.
const (
	DefaultFilename = "report.csv"
	DefaultMaxRows  = 10000
	// MaxMaxRows bounds max_rows: the CSV is held in memory and mailed,
	// and mail servers refuse messages of a few tens of MiB.
	MaxMaxRows = 1_000_000
	// MaxBytes bounds the CSV itself, for the same reason; a report that
	// reaches it is cut at a row boundary, as at max_rows.
	MaxBytes = 10 << 20
)

// Params are the task's params, bound strictly: an unknown field is an
// error.
type Params struct {
	// Driver is "sqlite", "mysql" or "postgres".
	Driver string `json:"driver"`
	// DSN is a SQLite file path (or file: URI), a go-sql-driver/mysql
	// DSN such as "report:secret@tcp(db:3306)/shop", or a libpq DSN such
	// as "postgres://report:secret@db:5432/shop". It is never logged.
	DSN string `json:"dsn"`
	// Query is one SELECT (or WITH … SELECT) statement.
	Query string `json:"query"`
	// Filename names the attachment (default DefaultFilename); a bare
	// name, no directories.
	Filename string `json:"filename"`
	// MaxRows caps the rows written (default DefaultMaxRows, at most
	// MaxMaxRows); a larger result is cut there and the result says so.
	MaxRows int `json:"max_rows"`
}

// parse decodes and checks params, filling defaults. It touches neither
// the network nor the disk, so Validate may call it on any node.
func parse(raw json.RawMessage) (Params, error) {
	var p Params
	if err := tasks.DecodeParams(raw, &p); err != nil {
		return p, err
	}
	switch p.Driver {
	case "sqlite", "mysql", "postgres":
	case "":
		return p, tasks.FieldError("driver", `required: "sqlite", "mysql" or "postgres"`)
	default:
		return p, tasks.FieldError("driver", `unknown driver %q, want "sqlite", "mysql" or "postgres"`, p.Driver)
	}
	if strings.TrimSpace(p.DSN) == "" {
		return p, tasks.FieldError("dsn", "required")
	}
	if p.Driver == "mysql" {
		if _, err := mysqldrv.ParseDSN(p.DSN); err != nil {
			return p, tasks.FieldError("dsn", "not a MySQL DSN: %v", err)
		}
	}
	if p.Driver == "postgres" {
		// pgx's message may repeat the DSN, password included.
		if _, err := pgx.ParseConfig(p.DSN); err != nil {
			return p, tasks.FieldError("dsn", "not a PostgreSQL DSN; write postgres://user:password@host:5432/dbname")
		}
	}
	// PostgreSQL reads a backslash as an escape in E'...' strings only, so
	// the query must pass under both lexical rules there.
	if err := checkQuery(p.Query, p.Driver == "mysql"); err != nil {
		return p, tasks.FieldError("query", "%v", err)
	}
	if p.Driver == "postgres" {
		if err := checkQuery(p.Query, true); err != nil {
			return p, tasks.FieldError("query", "%v", err)
		}
	}
	if p.Filename == "" {
		p.Filename = DefaultFilename
	}
	if p.Filename != filepath.Base(p.Filename) || strings.ContainsAny(p.Filename, `/\`) || p.Filename == "." || p.Filename == ".." {
		return p, tasks.FieldError("filename", "%q must be a bare file name, without directories", p.Filename)
	}
	switch {
	case p.MaxRows < 0:
		return p, tasks.FieldError("max_rows", "must not be negative, got %d", p.MaxRows)
	case p.MaxRows > MaxMaxRows:
		return p, tasks.FieldError("max_rows", "at most %d, got %d", MaxMaxRows, p.MaxRows)
	case p.MaxRows == 0:
		p.MaxRows = DefaultMaxRows
	}
	return p, nil
}

// checkQuery accepts one statement that starts with SELECT or WITH. It is
// the friendly first line, giving a clear error before anything connects;
// the database enforces read-only itself (see openDB), because a prefix
// cannot: SQLite and MySQL 8 accept WITH … DELETE.
//
// Multiple statements are refused because on a MySQL DSN with
// multiStatements a "SELECT 1; COMMIT; DELETE …" would leave the read-only
// transaction (openDB also turns multiStatements off, as a second guard).
// mysql selects MySQL's lexical rules: \' escapes a quote inside a string
// and # starts a comment; getting them wrong could hide a ';'.
func checkQuery(q string, mysql bool) error {
	if strings.TrimSpace(q) == "" {
		return fmt.Errorf("required: a SELECT statement")
	}
	kw, rest := firstKeyword(q)
	switch strings.ToUpper(kw) {
	case "SELECT", "WITH":
	case "":
		return fmt.Errorf("must start with SELECT or WITH")
	default:
		return fmt.Errorf("must be read-only: starts with %s, want SELECT or WITH", strings.ToUpper(kw))
	}
	if i := statementEnd(rest, mysql); i >= 0 && !blank(rest[i:], mysql) {
		return fmt.Errorf("must be a single statement (found more after ';')")
	}
	return nil
}

// firstKeyword skips blanks, comments and opening parentheses and returns
// the first word and what follows it.
func firstKeyword(q string) (string, string) {
	for {
		q = strings.TrimLeftFunc(q, func(r rune) bool { return unicode.IsSpace(r) || r == '(' })
		switch {
		case strings.HasPrefix(q, "--"):
			i := strings.IndexByte(q, '\n')
			if i < 0 {
				return "", ""
			}
			q = q[i+1:]
		case strings.HasPrefix(q, "/*"):
			i := strings.Index(q[2:], "*/")
			if i < 0 {
				return "", ""
			}
			q = q[i+4:]
		default:
			end := strings.IndexFunc(q, func(r rune) bool { return !unicode.IsLetter(r) })
			if end < 0 {
				end = len(q)
			}
			return q[:end], q[end:]
		}
	}
}

// statementEnd returns the index of the first ';' outside quotes and
// comments, or -1.
func statementEnd(q string, mysql bool) int {
	for i := 0; i < len(q); i++ {
		switch c := q[i]; {
		case c == '\'' || c == '"' || c == '`':
			for i++; i < len(q) && q[i] != c; i++ {
				if mysql && q[i] == '\\' {
					i++
				}
			}
		case c == '-' && strings.HasPrefix(q[i:], "--"), c == '#' && mysql:
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				return -1
			}
			i += j
		case c == '/' && strings.HasPrefix(q[i:], "/*"):
			j := strings.Index(q[i+2:], "*/")
			if j < 0 {
				return -1
			}
			i += j + 3
		case c == ';':
			return i
		}
	}
	return -1
}

// blank reports whether s holds nothing but blanks, ';' and comments, as
// may follow the one statement.
func blank(s string, mysql bool) bool {
	for {
		s = strings.TrimLeftFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == ';' })
		switch {
		case s == "":
			return true
		case strings.HasPrefix(s, "--"), mysql && strings.HasPrefix(s, "#"):
			i := strings.IndexByte(s, '\n')
			if i < 0 {
				return true
			}
			s = s[i+1:]
		case strings.HasPrefix(s, "/*"):
			i := strings.Index(s[2:], "*/")
			if i < 0 {
				return true // unterminated: the database reports it
			}
			s = s[i+4:]
		default:
			return false
		}
	}
}
