// Package client is for application code that hands chime work inside its
// own database transaction: InsertTx writes a job and StartRunTx a
// workflow run on the caller's *sql.Tx, so they commit or roll back with
// the caller's business data (River's InsertTx is the model). A rolled-back
// transaction leaves no job and no run; a committed one is picked up by
// the chime nodes on the same database, as any row written by plain SQL
// is (README, "SQL contract").
//
// The package writes the SQL contract's rows and nothing else: it holds no
// connection, starts nothing, and imports none of chime's packages, so an
// application depends on database/sql and its own driver only.
package client

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Dialect is the database chime uses: it decides placeholders and how an
// inserted id is read back.
type Dialect string

const (
	SQLite   Dialect = "sqlite"
	MySQL    Dialect = "mysql"
	Postgres Dialect = "postgres"
)

// Client writes chime's rows in a dialect.
type Client struct{ d Dialect }

// New returns a client for d.
func New(d Dialect) (*Client, error) {
	switch d {
	case SQLite, MySQL, Postgres:
		return &Client{d: d}, nil
	}
	return nil, fmt.Errorf("chime client: unknown dialect %q (sqlite, mysql or postgres)", d)
}

// ErrNotFound: no job definition or workflow has the name given.
var ErrNotFound = errors.New("chime client: not found")

// Job is what InsertTx writes: a job of the definition named Definition,
// due now. Params, when set, must be a JSON object; they are laid over the
// definition's default_params key by key when the job runs (nil: the
// definition's). MaxAttempts 0 keeps the definition's.
type Job struct {
	Definition  string
	Params      json.RawMessage
	MaxAttempts int
}

// InsertTx writes job on tx and returns its id. The job is pending: a node
// claims it once tx has committed.
func (c *Client) InsertTx(ctx context.Context, tx *sql.Tx, job Job) (int64, error) {
	params, err := object(job.Params)
	if err != nil {
		return 0, err
	}
	if job.MaxAttempts < 0 {
		return 0, fmt.Errorf("chime client: max_attempts %d is negative", job.MaxAttempts)
	}
	q := `INSERT INTO jobs (job_definition_id, params, max_attempts) SELECT id, ?, ? FROM job_definitions WHERE name = ?`
	id, err := c.insert(ctx, tx, q, "jobs", params, job.MaxAttempts, job.Definition)
	if errors.Is(err, ErrNotFound) {
		return 0, fmt.Errorf("job definition %q: %w", job.Definition, err)
	}
	return id, err
}

// Run is what StartRunTx writes: a run of the workflow named Workflow.
// Params, when set, must be a JSON object: every step's task reads them.
// StartedBy says who asked (free text, up to 191 bytes).
type Run struct {
	Workflow  string
	Params    json.RawMessage
	StartedBy string
}

// StartRunTx writes a pending run on tx and returns its id. Once tx has
// committed, the node that holds the maintenance lease starts the run
// within a heartbeat (cluster.heartbeat, 5s by default) and writes its
// first steps' jobs.
func (c *Client) StartRunTx(ctx context.Context, tx *sql.Tx, run Run) (int64, error) {
	params, err := object(run.Params)
	if err != nil {
		return 0, err
	}
	if len(run.StartedBy) > 191 {
		return 0, errors.New("chime client: started_by is longer than 191 bytes")
	}
	q := `INSERT INTO workflow_runs (workflow_id, params, started_by) SELECT id, ?, ? FROM workflows WHERE name = ?`
	id, err := c.insert(ctx, tx, q, "workflow_runs", params, run.StartedBy, run.Workflow)
	if errors.Is(err, ErrNotFound) {
		return 0, fmt.Errorf("workflow %q: %w", run.Workflow, err)
	}
	return id, err
}

// insert runs an INSERT … SELECT of one row and returns its id;
// ErrNotFound when the SELECT found nothing.
func (c *Client) insert(ctx context.Context, tx *sql.Tx, q, table string, args ...any) (int64, error) {
	if c.d == Postgres {
		n := 0
		q = placeholders(q, func() string { n++; return fmt.Sprintf("$%d", n) })
		var id int64
		err := tx.QueryRowContext(ctx, q+" RETURNING id", args...).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, ErrNotFound
		}
		if err != nil {
			return 0, fmt.Errorf("chime client: insert into %s: %w", table, err)
		}
		return id, nil
	}
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("chime client: insert into %s: %w", table, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return 0, ErrNotFound
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("chime client: id of the row inserted into %s: %w", table, err)
	}
	return id, nil
}

// placeholders replaces each ? of q (none is quoted in this package's
// statements) with next().
func placeholders(q string, next func() string) string {
	var b strings.Builder
	for _, r := range q {
		if r == '?' {
			b.WriteString(next())
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// object checks that p is empty or a JSON object and returns what to bind:
// nil (NULL) or its text.
func object(p json.RawMessage) (any, error) {
	t := strings.TrimSpace(string(p))
	if t == "" || t == "null" {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(t), &m); err != nil {
		return nil, errors.New("chime client: params must be a JSON object")
	}
	return t, nil
}
