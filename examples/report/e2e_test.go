package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/glebarez/go-sqlite"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/chimesched/chime/internal/syncbuf"
	"github.com/chimesched/chime/notify/smtptest"
)

// IgnoreCurrent: package main links the whole server, and ants starts the
// goroutines of its default pool in an init function.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.IgnoreCurrent()) }

// TestEndToEnd builds this example into a binary, runs `serve` as a real
// process against a fresh SQLite file and an SMTP server on loopback,
// schedules a csv_report job with plain SQL as an admin would, and checks
// the job's row, its log and the email with the CSV attached; then it
// stops the server with SIGTERM and expects a clean exit.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a server process")
	}
	t.Parallel()
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	smtp := smtptest.New(t)
	dbPath := filepath.Join(dir, "chime.db")
	shop := shopDB(t, filepath.Join(dir, "shop.db"))

	srv := startServer(t, bin, dir, []string{
		"CHIME_DATABASE_DRIVER=sqlite",
		"CHIME_DATABASE_DSN=" + dbPath,
		"CHIME_NODE_ID=e2e-report",
		// Its own token file, not the one in the user's configuration directory.
		"CHIME_API_TOKEN_FILE=" + filepath.Join(filepath.Dir(dbPath), "api.token"),
		"CHIME_TASKENGINE_POLL_INTERVAL=200ms",
		"CHIME_API_ADDR=127.0.0.1:0",
		"CHIME_SHUTDOWN_GRACE=5s",
		"CHIME_LOG_LEVEL=debug",
		"CHIME_SMTP_HOST=" + smtp.Host,
		"CHIME_SMTP_PORT=" + strconv.Itoa(smtp.Port),
		"CHIME_SMTP_FROM=chime <chime@example.com>",
		"CHIME_SMTP_TLS=none",
	})

	// The server creates the file and migrates it; only then may we write.
	srv.waitFor(t, 30*time.Second, "the database file", func() (bool, error) {
		_, err := os.Stat(dbPath)
		return err == nil, nil
	})
	db, err := sql.Open("sqlite", dbPath+"?_pragma=busy_timeout(10000)")
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	srv.waitFor(t, 30*time.Second, "the schema", func() (bool, error) {
		var n int
		err := db.QueryRow("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'jobs'").Scan(&n)
		return n == 1, err
	})

	// What docs/plugins.md tells an admin to run.
	p, err := json.Marshal(map[string]any{
		"driver": "sqlite", "dsn": shop, "filename": "orders.csv",
		"query": "SELECT id, customer, total FROM orders ORDER BY id",
	})
	require.NoError(t, err)
	res, err := db.Exec(`INSERT INTO job_definitions (name, task_type, default_params, timeout_seconds, notify_on, notify_emails)
VALUES ('orders-report', 'csv_report', ?, 60, 'always', 'ops@example.com,cfo@example.com')`, string(p))
	require.NoError(t, err)
	defID, err := res.LastInsertId()
	require.NoError(t, err)
	res, err = db.Exec("INSERT INTO jobs (job_definition_id) VALUES (?)", defID)
	require.NoError(t, err)
	jobID, err := res.LastInsertId()
	require.NoError(t, err)

	var status, result, jobErr string
	srv.waitFor(t, 30*time.Second, "the job to finish", func() (bool, error) {
		err := db.QueryRow("SELECT status, COALESCE(result, ''), COALESCE(error, '') FROM jobs WHERE id = ?", jobID).
			Scan(&status, &result, &jobErr)
		switch status {
		case "succeeded", "failed", "stopped", "canceled":
			return true, err
		}
		return false, err
	})
	require.Equal(t, "succeeded", status, "error: %s", jobErr)
	require.Equal(t, "3 rows → orders.csv", result)

	// The task's own lines land in job_logs (written in batches, so wait).
	srv.waitFor(t, 10*time.Second, "the task's log line in job_logs", func() (bool, error) {
		var n int
		err := db.QueryRow("SELECT count(*) FROM job_logs WHERE job_id = ? AND message LIKE 'csv_report: wrote 3 rows%'", jobID).Scan(&n)
		return n > 0, err
	})

	require.True(t, smtp.WaitAttempts(1, 15*time.Second), "no completion email arrived\n%s", srv.output())
	msgs := smtp.Messages()
	require.Len(t, msgs, 1)
	m := msgs[0]
	require.ElementsMatch(t, []string{"ops@example.com", "cfo@example.com"}, m.To)
	require.Equal(t, "[chime] orders-report succeeded (ad hoc, job "+strconv.FormatInt(jobID, 10)+")", m.Subject())
	require.Contains(t, m.Text(), "Attached: orders.csv")
	parts, err := m.Parts()
	require.NoError(t, err)
	var attached []string
	for _, part := range parts {
		if part.Filename == "orders.csv" {
			require.Equal(t, "text/csv", part.ContentType)
			attached = append(attached, string(part.Data))
		}
	}
	require.Equal(t, []string{"id,customer,total\n1,Ada Lovelace,12.5\n2,\"Grace \"\"Amazing\"\" Hopper\",7\n3,Alan Turing,100.25\n"}, attached)

	// A schedule, as the guide shows: the schedule engine fires it and the
	// second email names the schedule.
	_, err = db.Exec(`INSERT INTO schedules (name, job_definition_id, schedule_type, interval_seconds, max_runs)
VALUES ('orders-every-second', ?, 'interval', 1, 1)`, defID)
	require.NoError(t, err)
	srv.waitFor(t, 30*time.Second, "the scheduled job to succeed", func() (bool, error) {
		var n int
		err := db.QueryRow(`SELECT count(*) FROM jobs j JOIN schedules s ON s.id = j.schedule_id
WHERE s.name = 'orders-every-second' AND j.status = 'succeeded' AND j.result = '3 rows → orders.csv'`).Scan(&n)
		return n == 1, err
	})
	require.True(t, smtp.WaitAttempts(2, 15*time.Second), "no email for the scheduled job\n%s", srv.output())
	require.Equal(t, "[chime] orders-report succeeded (schedule orders-every-second)", smtp.Messages()[1].Subject())

	srv.stop(t)
}

// buildBinary compiles this package, the way a plugin author ships it.
func buildBinary(t *testing.T, dir string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build the example with: %v", err)
	}
	bin := filepath.Join(dir, "chime-report")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, goTool, "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build:\n%s", out)
	return bin
}

func shopDB(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, total REAL);
INSERT INTO orders VALUES (1, 'Ada Lovelace', 12.5), (2, 'Grace "Amazing" Hopper', 7), (3, 'Alan Turing', 100.25);`)
	require.NoError(t, err)
	return path
}

type server struct {
	cmd  *exec.Cmd
	out  *syncbuf.Buffer
	done chan struct{} // closed when the process has exited
	err  error         // Wait's result, set before done closes
}

// startServer runs `bin serve` in dir with env on top of this process's
// environment minus any CHIME_* variable, which would change the setup.
func startServer(t *testing.T, bin, dir string, env []string) *server {
	t.Helper()
	var base []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CHIME_") {
			base = append(base, kv)
		}
	}
	s := &server{out: &syncbuf.Buffer{}, done: make(chan struct{})}
	s.cmd = exec.Command(bin, "serve")
	s.cmd.Dir = dir
	s.cmd.Env = append(base, env...)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	require.NoError(t, s.cmd.Start())
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			_ = s.cmd.Process.Kill()
			<-s.done
		}
		if t.Failed() {
			t.Logf("server output:\n%s", s.output())
		}
	})
	return s
}

func (s *server) output() string { return s.out.String() }

// waitFor polls cond until it holds, failing the test at timeout or as
// soon as the server exits. Polling is the only way to see another
// process's progress in its database.
func (s *server) waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		ok, err := cond()
		if ok && err == nil {
			return
		}
		lastErr = err
		select {
		case <-tick.C:
		case <-s.done:
			t.Fatalf("server exited (%v) while waiting for %s", s.err, what)
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for %s (last error: %v)", timeout, what, lastErr)
		}
	}
}

// stop sends SIGTERM and expects exit status 0 within the shutdown grace
// plus a margin.
func (s *server) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		t.Fatal("server still running 15s after SIGTERM")
	}
	var exitErr *exec.ExitError
	if errors.As(s.err, &exitErr) {
		t.Fatalf("server exited with status %d after SIGTERM", exitErr.ExitCode())
	}
	require.NoError(t, s.err)
}
