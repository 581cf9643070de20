// Package report is an example chime task plugin: csv_report runs one
// read-only query against a SQLite or MySQL database, writes the rows as
// CSV, and mails the file as an attachment of the job's completion email.
//
// It shows every part of the plugin contract a real task needs: params
// bound strictly and checked by a Validator, progress in job_logs through
// job.Log(), job.Checkpoint between rows so Pause holds it and Stop ends
// it, a short result for jobs.result, and an OnComplete that extends
// tasks.Base.OnComplete. docs/plugins.md walks through it.
//
// Params:
//
//	{"driver": "sqlite", "dsn": "shop.db", "query": "SELECT id, total FROM orders",
//	 "filename": "orders.csv", "max_rows": 10000}
//
// Register it before running the chime command line, as ../main.go does:
//
//	tasks.MustRegister(report.Kind, report.New)
package report

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	_ "github.com/glebarez/go-sqlite" // registers the "sqlite" driver
	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/chimesched/chime/tasks"
)

// Kind is the task_type of this task.
const Kind = "csv_report"

// progressEvery is how many rows pass between two progress lines: often
// enough to follow a long report, rarely enough not to flood job_logs.
const progressEvery = 1000

// Task is one csv_report run. The registry makes a fresh Task per run, so
// the CSV Execute produced can wait in a field for OnComplete.
type Task struct {
	tasks.Base

	// Set by Execute on success, read by OnComplete; the engine calls
	// OnComplete only after Execute has returned.
	csv      []byte
	filename string
}

// New returns a csv_report task; it is the tasks.Factory to register.
func New() tasks.Task { return &Task{} }

var (
	_ tasks.Task      = (*Task)(nil)
	_ tasks.Validator = (*Task)(nil)
)

// Validate implements tasks.Validator: it checks params without
// connecting, so an API can refuse a bad definition at the door.
func (*Task) Validate(params json.RawMessage) error {
	if _, err := parse(params); err != nil {
		return fmt.Errorf("%s: %w", Kind, err)
	}
	return nil
}

// Execute runs the query and keeps the CSV for OnComplete.
func (t *Task) Execute(ctx context.Context, job *tasks.Job) error {
	p, err := parse(job.Params)
	if err != nil {
		return fmt.Errorf("%s: %w", Kind, err)
	}
	log := job.Log()
	log.Infof("%s: querying the %s database for %s", Kind, p.Driver, p.Filename)

	db, err := openDB(p)
	if err != nil {
		return fmt.Errorf("%s: %w", Kind, err)
	}
	defer db.Close()

	// A read-only transaction makes the database refuse writes whatever
	// the query says: MySQL runs START TRANSACTION READ ONLY, PostgreSQL
	// BEGIN READ ONLY (and its sessions default to read-only); on SQLite
	// openDB has already set query_only on the connection.
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("%s: connect to the %s database: %w", Kind, p.Driver, err)
	}
	defer func() { _ = tx.Rollback() }() // nothing to commit: it only reads

	start := time.Now()
	rows, err := tx.QueryContext(ctx, p.Query)
	if err != nil {
		return fmt.Errorf("%s: run query: %w", Kind, err)
	}
	defer rows.Close()

	out, err := writeCSV(ctx, job, rows, p)
	if err != nil {
		return fmt.Errorf("%s: %w", Kind, err)
	}

	result := fmt.Sprintf("%d rows → %s", out.rows, p.Filename)
	if out.cut != "" {
		result += " (truncated: " + out.cut + ")"
		log.Warnf("%s: stopped at %d rows: %s", Kind, out.rows, out.cut)
	}
	log.Infof("%s: wrote %d rows (%d bytes) to %s in %v", Kind, out.rows, len(out.data), p.Filename,
		time.Since(start).Round(time.Millisecond))
	t.csv, t.filename = out.data, p.Filename
	job.SetResult(result)
	return nil
}

// OnComplete attaches the CSV to the completion email, then lets Base send
// it (when the definition's notify_on wants it). Attaching here rather than
// in Execute keeps the file out of a failed or stopped run's email, whose
// status is only final now, and shows the way to extend Base.OnComplete:
// do your part first, then delegate.
func (t *Task) OnComplete(ctx context.Context, job *tasks.Job, r tasks.Result) error {
	if r.Status == tasks.StatusSucceeded && t.csv != nil {
		job.Attach(tasks.Attachment{Name: t.filename, ContentType: "text/csv", Data: t.csv})
	}
	return t.Base.OnComplete(ctx, job, r)
}

// openDB opens p's database so that it cannot be written through: SQLite
// connections get PRAGMA query_only, MySQL connections lose
// multiStatements. It does not connect yet.
func openDB(p Params) (*sql.DB, error) {
	switch p.Driver {
	case "postgres":
		cfg, err := pgx.ParseConfig(p.DSN)
		if err != nil {
			return nil, tasks.FieldError("dsn", "not a PostgreSQL DSN")
		}
		// Belt and braces with the read-only transaction: a session whose
		// every transaction is read-only. pgx's extended protocol also
		// runs one statement per query.
		cfg.RuntimeParams["default_transaction_read_only"] = "on"
		db := stdlib.OpenDB(*cfg)
		db.SetMaxOpenConns(1)
		return db, nil
	case "mysql":
		cfg, err := mysqldrv.ParseDSN(p.DSN)
		if err != nil {
			return nil, tasks.FieldError("dsn", "not a MySQL DSN: %v", err)
		}
		cfg.MultiStatements = false
		conn, err := mysqldrv.NewConnector(cfg)
		if err != nil {
			return nil, tasks.FieldError("dsn", "%v", err)
		}
		db := sql.OpenDB(conn)
		db.SetMaxOpenConns(1)
		return db, nil
	default:
		dsn, err := sqliteDSN(p.DSN)
		if err != nil {
			return nil, err
		}
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			return nil, fmt.Errorf("open the sqlite database: %w", err)
		}
		db.SetMaxOpenConns(1)
		return db, nil
	}
}

// sqliteDSN adds query_only to dsn. It also insists that a plain path
// exists: SQLite would otherwise create an empty database, and the report
// would succeed with "no such table" as its only clue.
func sqliteDSN(dsn string) (string, error) {
	path, _, hasQuery := strings.Cut(dsn, "?")
	if !strings.HasPrefix(path, "file:") && path != ":memory:" {
		if _, err := os.Stat(path); err != nil {
			return "", tasks.FieldError("dsn", "no SQLite database at %q: %v", path, errors.Unwrap(err))
		}
	}
	sep := "?"
	if hasQuery {
		sep = "&"
	}
	return dsn + sep + "_pragma=query_only(1)", nil
}

type csvOut struct {
	data []byte
	rows int
	cut  string // why the output stopped early; "" when complete
}

// writeCSV writes a header and the rows, stopping at p.MaxRows or
// MaxBytes. It calls job.Checkpoint before each row: that is where Pause
// holds the report and where Stop or the timeout ends it.
func writeCSV(ctx context.Context, job *tasks.Job, rows *sql.Rows, p Params) (csvOut, error) {
	var out csvOut
	cols, err := rows.Columns()
	if err != nil {
		return out, fmt.Errorf("read columns: %w", err)
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	if err := w.Write(cols); err != nil {
		return out, fmt.Errorf("write CSV: %w", err)
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	record := make([]string, len(cols))
	for {
		if err := job.Checkpoint(ctx); err != nil {
			return out, fmt.Errorf("after %d rows: %w", out.rows, tasks.ContextError(ctx))
		}
		if !rows.Next() {
			break
		}
		if out.rows == p.MaxRows {
			out.cut = fmt.Sprintf("max_rows %d reached", p.MaxRows)
			break
		}
		if buf.Len() >= MaxBytes {
			out.cut = fmt.Sprintf("%d MiB size limit reached", MaxBytes>>20)
			break
		}
		if err := rows.Scan(ptrs...); err != nil {
			return out, fmt.Errorf("read row %d: %w", out.rows+1, err)
		}
		for i, v := range vals {
			record[i] = format(v)
		}
		if err := w.Write(record); err != nil {
			return out, fmt.Errorf("write CSV: %w", err)
		}
		w.Flush() // so buf.Len() above measures what was written
		out.rows++
		if out.rows%progressEvery == 0 {
			job.Log().Infof("%s: %d rows so far", Kind, out.rows)
		}
	}
	if err := rows.Err(); err != nil {
		if ctx.Err() != nil {
			return out, fmt.Errorf("after %d rows: %w", out.rows, tasks.ContextError(ctx))
		}
		return out, fmt.Errorf("read rows: %w", err)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return out, fmt.Errorf("write CSV: %w", err)
	}
	out.data = buf.Bytes()
	return out, nil
}

// format renders one value as drivers return it into an any: SQLite gives
// int64, float64, string, []byte, time.Time or nil; MySQL without
// parseTime gives []byte for nearly everything.
func format(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case []byte:
		if utf8.Valid(v) {
			return string(v)
		}
		return "0x" + hex.EncodeToString(v) // a BLOB: keep the CSV valid text
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	case time.Time:
		return v.Format(time.RFC3339Nano)
	default:
		return fmt.Sprint(v)
	}
}
