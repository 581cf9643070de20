package report_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/chimesched/chime/examples/report/report"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/notify"
	"github.com/chimesched/chime/notify/smtptest"
	"github.com/chimesched/chime/tasks"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// shopDB creates a SQLite file with an orders table whose values exercise
// the CSV encoding: a comma, a quote, a newline, a NULL, a real, a BLOB.
func shopDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shop.db")
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(`
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, total REAL, note TEXT, raw BLOB);
INSERT INTO orders VALUES
  (1, 'Ada Lovelace', 12.5, 'gift, wrapped', NULL),
  (2, 'Grace "Amazing" Hopper', 7, NULL, NULL),
  (3, 'Alan Turing', 100.25, 'two
lines', x'00ff');`)
	require.NoError(t, err)
	return path
}

const shopCSV = `id,customer,total,note,raw
1,Ada Lovelace,12.5,"gift, wrapped",
2,"Grace ""Amazing"" Hopper",7,,
3,Alan Turing,100.25,"two
lines",0x00ff
`

func params(t *testing.T, p map[string]any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(p)
	require.NoError(t, err)
	return b
}

type bundle struct {
	task *report.Task
	job  *tasks.Job
	ctx  context.Context
	logs *logtest.Hook
}

func setup(t *testing.T, raw json.RawMessage) *bundle {
	t.Helper()
	logger, hook := logtest.NewNullLogger()
	task := report.New().(*report.Task)
	job := &tasks.Job{
		ID: 9, DefinitionName: "orders-report", TaskType: report.Kind,
		Attempt: 1, MaxAttempts: 1, Params: raw, Logger: logrus.NewEntry(logger),
	}
	ctx, cancel := tasks.Prepare(context.Background(), task, job)
	t.Cleanup(cancel)
	return &bundle{task: task, job: job, ctx: ctx, logs: hook}
}

func (b *bundle) messages() []string {
	var out []string
	for _, e := range b.logs.AllEntries() {
		out = append(out, e.Message)
	}
	return out
}

func TestValidate(t *testing.T) {
	t.Parallel()
	task := report.New().(tasks.Validator)
	ok := map[string]any{"driver": "sqlite", "dsn": "shop.db", "query": "SELECT 1"}
	with := func(k string, v any) map[string]any {
		p := map[string]any{}
		for k, v := range ok {
			p[k] = v
		}
		if v == nil {
			delete(p, k)
		} else {
			p[k] = v
		}
		return p
	}
	for _, tt := range []struct {
		name    string
		params  map[string]any
		wantErr string // "" for valid
	}{
		{"Valid", ok, ""},
		{"With", with("query", "WITH t AS (SELECT 1 AS n) SELECT n FROM t"), ""},
		{"CommentFirst", with("query", "-- daily\n/* numbers */ (SELECT 1) UNION SELECT 2"), ""},
		{"TrailingSemicolon", with("query", "SELECT 1;\n"), ""},
		{"TrailingComment", with("query", "SELECT 1; -- done\n;/* really */"), ""},
		{"AfterComment", with("query", "SELECT 1; -- done\nDELETE FROM orders"), `must be a single statement`},
		{"SemicolonInString", with("query", "SELECT 'a;b' AS s, \"c;d\" -- ; not a statement"), ""},
		{"MySQL", with("driver", "mysql"), `field "dsn": not a MySQL DSN`},
		{"MySQLDSN", map[string]any{"driver": "mysql", "dsn": "u:p@tcp(db:3306)/shop", "query": "SELECT 1"}, ""},
		{"NoDriver", with("driver", nil), `field "driver": required`},
		{"UnknownDriver", with("driver", "oracle"), `field "driver": unknown driver "oracle"`},
		{"NoDSN", with("dsn", " "), `field "dsn": required`},
		{"NoQuery", with("query", nil), `field "query": required`},
		{"Delete", with("query", "DELETE FROM orders"), `field "query": must be read-only: starts with DELETE`},
		{"CommentedInsert", with("query", "/* SELECT */ insert INTO orders VALUES (9)"), `field "query": must be read-only: starts with INSERT`},
		{"NoKeyword", with("query", "-- only a comment"), `field "query": must start with SELECT or WITH`},
		{"TwoStatements", with("query", "SELECT 1; DROP TABLE orders"), `field "query": must be a single statement`},
		{"HiddenByMySQLEscape", map[string]any{"driver": "mysql", "dsn": "u@tcp(db)/x", "query": `SELECT '\''; DELETE FROM orders; -- '`}, `must be a single statement`},
		{"PostgresDSN", map[string]any{"driver": "postgres", "dsn": "postgres://u:s3cret@[bad", "query": "SELECT 1"}, `field "dsn": not a PostgreSQL DSN`},
		{"HiddenByPostgresEscapeString", map[string]any{"driver": "postgres", "dsn": "postgres://u@db/x", "query": `SELECT E'\''; DELETE FROM orders; -- '`}, `must be a single statement`},
		{"HiddenByMySQLComment", map[string]any{"driver": "mysql", "dsn": "u@tcp(db)/x", "query": "SELECT 1 # it's\n; DELETE FROM orders"}, `must be a single statement`},
		{"FilenameWithDir", with("filename", "../etc/x.csv"), `field "filename": "../etc/x.csv" must be a bare file name`},
		{"NegativeMaxRows", with("max_rows", -1), `field "max_rows": must not be negative`},
		{"HugeMaxRows", with("max_rows", report.MaxMaxRows+1), `field "max_rows": at most`},
		{"WrongType", with("max_rows", "10"), `field "max_rows": expected an integer`},
		{"UnknownField", with("querry", "SELECT 1"), `unknown field "querry"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := task.Validate(params(t, tt.params))
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
			require.True(t, strings.HasPrefix(err.Error(), "csv_report: params: "), err.Error())
		})
	}
	// The registry finds the Validator too, which is what an API calls.
	reg := tasks.NewRegistry()
	reg.MustRegister(report.Kind, report.New)
	require.ErrorContains(t, reg.Validate(report.Kind, params(t, with("query", "UPDATE orders SET total = 0"))), `field "query"`)
}

func TestExecute(t *testing.T) {
	t.Parallel()

	t.Run("WritesCSV", func(t *testing.T) {
		t.Parallel()
		b := setup(t, params(t, map[string]any{
			"driver": "sqlite", "dsn": shopDB(t), "filename": "orders.csv",
			"query": "SELECT id, customer, total, note, raw FROM orders ORDER BY id",
		}))
		require.NoError(t, b.task.Execute(b.ctx, b.job))
		require.Equal(t, "3 rows → orders.csv", b.job.Result())
		msgs := b.messages()
		require.Equal(t, "csv_report: querying the sqlite database for orders.csv", msgs[0])
		require.Contains(t, msgs[len(msgs)-1], "csv_report: wrote 3 rows (")
		for _, m := range msgs {
			require.NotContains(t, m, "shop.db", "the DSN may hold a password: never log it")
		}

		// OnComplete attaches the file even when no email goes out, so a
		// Notifier set later in the chain would still see it.
		require.NoError(t, b.task.OnComplete(b.ctx, b.job, tasks.Result{Status: tasks.StatusSucceeded}))
		att := b.job.Attachments()
		require.Len(t, att, 1)
		require.Equal(t, "orders.csv", att[0].Name)
		require.Equal(t, "text/csv", att[0].ContentType)
		require.Equal(t, shopCSV, string(att[0].Data))
	})

	t.Run("EmptyResultHasHeader", func(t *testing.T) {
		t.Parallel()
		b := setup(t, params(t, map[string]any{"driver": "sqlite", "dsn": shopDB(t), "query": "SELECT id, customer FROM orders WHERE id < 0"}))
		require.NoError(t, b.task.Execute(b.ctx, b.job))
		require.Equal(t, "0 rows → report.csv", b.job.Result())
		require.NoError(t, b.task.OnComplete(b.ctx, b.job, tasks.Result{Status: tasks.StatusSucceeded}))
		require.Equal(t, "id,customer\n", string(b.job.Attachments()[0].Data))
	})

	t.Run("MaxRows", func(t *testing.T) {
		t.Parallel()
		b := setup(t, params(t, map[string]any{"driver": "sqlite", "dsn": shopDB(t), "query": "SELECT id FROM orders ORDER BY id", "max_rows": 2}))
		require.NoError(t, b.task.Execute(b.ctx, b.job))
		require.Equal(t, "2 rows → report.csv (truncated: max_rows 2 reached)", b.job.Result())
		require.Equal(t, logrus.WarnLevel, b.logs.AllEntries()[1].Level)
		require.NoError(t, b.task.OnComplete(b.ctx, b.job, tasks.Result{Status: tasks.StatusSucceeded}))
		require.Equal(t, "id\n1\n2\n", string(b.job.Attachments()[0].Data))
	})

	t.Run("DatabaseRefusesWrites", func(t *testing.T) {
		t.Parallel()
		// A WITH prefix passes the keyword check, and SQLite accepts
		// WITH … DELETE: query_only is what stops it.
		dsn := shopDB(t)
		b := setup(t, params(t, map[string]any{"driver": "sqlite", "dsn": dsn, "query": "WITH doomed AS (SELECT 1) DELETE FROM orders"}))
		require.ErrorContains(t, b.task.Execute(b.ctx, b.job), "readonly database")
		db, err := sql.Open("sqlite", dsn)
		require.NoError(t, err)
		defer db.Close()
		var n int
		require.NoError(t, db.QueryRow("SELECT count(*) FROM orders").Scan(&n))
		require.Equal(t, 3, n)
	})

	t.Run("MissingDatabaseFile", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "nope.db")
		b := setup(t, params(t, map[string]any{"driver": "sqlite", "dsn": path, "query": "SELECT 1"}))
		require.ErrorContains(t, b.task.Execute(b.ctx, b.job), `csv_report: params: field "dsn": no SQLite database at`)
		_, err := os.Stat(path)
		require.ErrorIs(t, err, os.ErrNotExist, "a report must not create the database it reads")
	})

	t.Run("BadQuery", func(t *testing.T) {
		t.Parallel()
		b := setup(t, params(t, map[string]any{"driver": "sqlite", "dsn": shopDB(t), "query": "SELECT nope FROM orders"}))
		require.ErrorContains(t, b.task.Execute(b.ctx, b.job), "csv_report: run query:")
		require.NoError(t, b.task.OnComplete(b.ctx, b.job, tasks.Result{Status: tasks.StatusFailed}))
		require.Empty(t, b.job.Attachments())
	})
}

// pauseAt pauses the task from inside its own log call when a progress
// line arrives: a deterministic point between two rows.
type pauseAt struct {
	msg    string
	task   *report.Task
	paused chan struct{}
}

func (h *pauseAt) Levels() []logrus.Level { return logrus.AllLevels }

func (h *pauseAt) Fire(e *logrus.Entry) error {
	if e.Message == h.msg && h.task.Pause() {
		close(h.paused)
	}
	return nil
}

func TestPauseAndStop(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "big.db")
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	_, err = db.Exec(`CREATE TABLE n (i INTEGER);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 2500) INSERT INTO n SELECT i FROM c`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	raw := params(t, map[string]any{"driver": "sqlite", "dsn": path, "query": "SELECT i FROM n ORDER BY i"})

	start := func(t *testing.T) (*bundle, *pauseAt, chan error) {
		b := setup(t, raw)
		h := &pauseAt{msg: "csv_report: 1000 rows so far", task: b.task, paused: make(chan struct{})}
		b.job.Logger.Logger.AddHook(h)
		done := make(chan error, 1)
		go func() { done <- b.task.Execute(b.ctx, b.job) }()
		select {
		case <-h.paused:
		case <-time.After(10 * time.Second):
			t.Fatal("the report never reached 1000 rows")
		}
		return b, h, done
	}

	t.Run("StopWhilePaused", func(t *testing.T) {
		t.Parallel()
		b, _, done := start(t)
		require.True(t, b.job.Paused())
		select {
		case err := <-done:
			t.Fatalf("Execute returned while paused: %v", err)
		default:
		}
		require.True(t, b.task.Stop())
		err := <-done
		require.ErrorIs(t, err, tasks.ErrStopped)
		require.ErrorContains(t, err, "csv_report: after 1000 rows: tasks: job stopped")
		require.Empty(t, b.job.Result())
	})

	t.Run("Resume", func(t *testing.T) {
		t.Parallel()
		b, _, done := start(t)
		require.True(t, b.task.Resume())
		require.NoError(t, <-done)
		require.Equal(t, "2500 rows → report.csv", b.job.Result())
		require.Contains(t, b.messages(), "csv_report: 2000 rows so far")
	})
}

// TestCompletionEmail runs the report as the engine would and delivers the
// notice through a real Mailer to a real SMTP server on loopback.
func TestCompletionEmail(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name       string
		notifyOn   string
		status     string
		wantMail   bool
		wantAttach bool
	}{
		{"SucceededAlways", tasks.NotifyAlways, tasks.StatusSucceeded, true, true},
		{"SucceededSuccess", tasks.NotifySuccess, tasks.StatusSucceeded, true, true},
		{"SucceededFailure", tasks.NotifyFailure, tasks.StatusSucceeded, false, false},
		{"FailedAlways", tasks.NotifyAlways, tasks.StatusFailed, true, false},
		{"StoppedFailure", tasks.NotifyFailure, tasks.StatusStopped, true, false},
		{"SucceededNever", tasks.NotifyNever, tasks.StatusSucceeded, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := smtptest.New(t)
			mailer, err := notify.New(nil, &notify.Config{Host: srv.Host, Port: srv.Port, TLS: notify.TLSNone, From: "chime <chime@example.com>",
				SendTimeout: 5 * time.Second, Logger: logrus.New()})
			require.NoError(t, err)

			query := "SELECT id, customer, total, note, raw FROM orders ORDER BY id"
			if tt.status == tasks.StatusFailed {
				query = "SELECT missing_column FROM orders"
			}
			b := setup(t, params(t, map[string]any{"driver": "sqlite", "dsn": shopDB(t), "query": query, "filename": "orders.csv"}))
			b.job.Notify = tasks.NotifySpec{On: tt.notifyOn, Emails: []string{"ops@example.com", "cfo@example.com"}}
			b.job.Notifier = mailer

			if tt.status == tasks.StatusStopped {
				require.True(t, b.task.Stop()) // before Execute: it stops at the first checkpoint
			}
			r := tasks.Result{StartedAt: time.Now()}
			r.Err = b.task.Execute(b.ctx, b.job)
			r.FinishedAt, r.Output = time.Now(), b.job.Result()
			r.Status = tasks.StatusSucceeded
			if r.Err != nil {
				r.Status = tasks.StatusFailed
				if errors.Is(context.Cause(b.ctx), tasks.ErrStopped) {
					r.Status = tasks.StatusStopped
				}
			}
			require.Equal(t, tt.status, r.Status, "%v", r.Err)
			require.NoError(t, b.task.OnComplete(b.ctx, b.job, r))

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, mailer.Close(ctx)) // drains the queue
			msgs := srv.Messages()
			if !tt.wantMail {
				require.Empty(t, msgs)
				return
			}
			require.Len(t, msgs, 1)
			m := msgs[0]
			require.ElementsMatch(t, []string{"ops@example.com", "cfo@example.com"}, m.To)
			require.Equal(t, fmt.Sprintf("[chime] orders-report %s (ad hoc, job 9)", tt.status), m.Subject())
			parts, err := m.Parts()
			require.NoError(t, err)
			var csvParts []smtptest.Part
			for _, p := range parts {
				if p.Filename != "" {
					csvParts = append(csvParts, p)
				}
			}
			if !tt.wantAttach {
				require.Empty(t, csvParts)
				require.NotContains(t, m.Text(), "Attached:")
				return
			}
			require.Len(t, csvParts, 1)
			require.Equal(t, "orders.csv", csvParts[0].Filename)
			require.Equal(t, "text/csv", csvParts[0].ContentType)
			require.Equal(t, shopCSV, string(csvParts[0].Data))
			require.Contains(t, m.Text(), "Result:\n  3 rows → orders.csv")
			require.Contains(t, m.Text(), "Attached: orders.csv")
		})
	}
}

// TestMySQL runs a report against MySQL/MariaDB from CHIME_TEST_MYSQL_DSN
// (skipped without it, a failure with CI=true).
func TestMySQL(t *testing.T) {
	t.Parallel()
	dsn := testdb.CreateMySQLDatabase(t)
	db, err := sql.Open("mysql", dsn)
	require.NoError(t, err)
	defer db.Close()
	for _, stmt := range []string{
		"CREATE TABLE orders (id INT PRIMARY KEY, customer VARCHAR(100), total DECIMAL(10,2), placed_at DATETIME(3), note TEXT)",
		`INSERT INTO orders VALUES (1, 'Ada Lovelace', 12.50, '2026-03-01 09:30:00.250', 'gift, wrapped'),
		  (2, 'Grace "Amazing" Hopper', 7, '2026-03-02 10:00:00', NULL)`,
	} {
		_, err := db.Exec(stmt)
		require.NoError(t, err)
	}

	b := setup(t, params(t, map[string]any{
		"driver": "mysql", "dsn": dsn, "filename": "orders.csv",
		"query": "SELECT id, customer, total, placed_at, note FROM orders ORDER BY id",
	}))
	require.NoError(t, b.task.Execute(b.ctx, b.job))
	require.Equal(t, "2 rows → orders.csv", b.job.Result())
	require.NoError(t, b.task.OnComplete(b.ctx, b.job, tasks.Result{Status: tasks.StatusSucceeded}))
	require.Equal(t, `id,customer,total,placed_at,note
1,Ada Lovelace,12.50,2026-03-01 09:30:00.250,"gift, wrapped"
2,"Grace ""Amazing"" Hopper",7.00,2026-03-02 10:00:00.000,
`, string(b.job.Attachments()[0].Data))

	// A SELECT can still write through a stored function; START
	// TRANSACTION READ ONLY is what makes the server refuse it.
	_, err = db.Exec("CREATE FUNCTION wipe() RETURNS INT MODIFIES SQL DATA BEGIN DELETE FROM orders; RETURN 1; END")
	require.NoError(t, err)
	b = setup(t, params(t, map[string]any{"driver": "mysql", "dsn": dsn, "query": "SELECT wipe()"}))
	require.ErrorContains(t, b.task.Execute(b.ctx, b.job), "READ ONLY")
	var n int
	require.NoError(t, db.QueryRow("SELECT count(*) FROM orders").Scan(&n))
	require.Equal(t, 2, n)
}

// TestPostgres runs a report against PostgreSQL from CHIME_TEST_POSTGRES_DSN
// (skipped without it, a failure with CI=true).
func TestPostgres(t *testing.T) {
	t.Parallel()
	dsn := testdb.CreatePostgresDatabase(t)
	db, err := sql.Open("pgx", dsn)
	require.NoError(t, err)
	defer db.Close()
	for _, stmt := range []string{
		"CREATE TABLE orders (id INT PRIMARY KEY, customer VARCHAR(100), total NUMERIC(10,2), placed_at TIMESTAMP(3), note TEXT)",
		`INSERT INTO orders VALUES (1, 'Ada Lovelace', 12.50, '2026-03-01 09:30:00.250', 'gift, wrapped'),
		  (2, 'Grace "Amazing" Hopper', 7, '2026-03-02 10:00:00', NULL)`,
		`CREATE FUNCTION wipe() RETURNS INT LANGUAGE sql AS $$ DELETE FROM orders; SELECT 1 $$`,
	} {
		_, err := db.Exec(stmt)
		require.NoError(t, err)
	}

	b := setup(t, params(t, map[string]any{
		"driver": "postgres", "dsn": dsn, "filename": "orders.csv",
		"query": "SELECT id, customer, total, placed_at, note FROM orders ORDER BY id",
	}))
	require.NoError(t, b.task.Execute(b.ctx, b.job))
	require.Equal(t, "2 rows → orders.csv", b.job.Result())
	require.NoError(t, b.task.OnComplete(b.ctx, b.job, tasks.Result{Status: tasks.StatusSucceeded}))
	require.Equal(t, `id,customer,total,placed_at,note
1,Ada Lovelace,12.50,2026-03-01T09:30:00.25Z,"gift, wrapped"
2,"Grace ""Amazing"" Hopper",7.00,2026-03-02T10:00:00Z,
`, string(b.job.Attachments()[0].Data), "pgx returns times, written as RFC 3339 as on SQLite")

	// A SELECT can still write through a function; the read-only
	// transaction is what makes the server refuse it.
	b = setup(t, params(t, map[string]any{"driver": "postgres", "dsn": dsn, "query": "SELECT wipe()"}))
	require.ErrorContains(t, b.task.Execute(b.ctx, b.job), "read-only transaction")
	var n int
	require.NoError(t, db.QueryRow("SELECT count(*) FROM orders").Scan(&n))
	require.Equal(t, 2, n)
}
