package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/taskengine"
	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/tasks/sleep"
)

// A column of jobs or notifications the class test walks.
type rowColumn struct {
	table, column string
	// counter marks the counters chime increments (models.Counters):
	// bounded, where another integer need only be readable.
	counter bool
	time    bool
}

func rowColumns() []rowColumn {
	var out []rowColumn
	for _, c := range []string{"attempt", "recoveries", "snoozes"} {
		out = append(out, rowColumn{table: "jobs", column: c, counter: true})
	}
	for _, c := range []string{"max_attempts", "missed_fires", "priority"} {
		out = append(out, rowColumn{table: "jobs", column: c})
	}
	for _, c := range []string{"scheduled_at", "run_at", "queued_at", "started_at", "finished_at", "heartbeat_at", "created_at", "updated_at"} {
		out = append(out, rowColumn{table: "jobs", column: c, time: true})
	}
	out = append(out, rowColumn{table: "notifications", column: "attempts", counter: true}, rowColumn{table: "notifications", column: "attempt"})
	for _, c := range []string{"next_attempt_at", "created_at", "sent_at", "updated_at"} {
		out = append(out, rowColumn{table: "notifications", column: c, time: true})
	}
	return out
}

// The extremes the class test writes: those of scheduleengine's
// TestExtremeColumnValues, and the largest counter that one more still
// fits in an INT.
var (
	rowInts         = []any{int64(math.MaxInt64), int64(9223372037), int64(math.MaxInt32 + 1), int64(math.MaxInt32), int64(math.MaxInt32 - 1), int64(0), int64(-1), int64(math.MinInt64)}
	rowSQLiteInts   = []any{1e30, 1.5, "x"}
	rowTimes        = []any{"1000-01-01 00:00:00", "9999-12-31 23:59:59"}
	rowPostgresTime = []any{"0044-03-15 00:00:00 BC", "10000-01-01 00:00:00", "infinity", "-infinity"}
	rowSQLiteTimes  = []any{"0000-01-01 00:00:00", "not a time"}
)

// rowCase is one value in one column of one row.
type rowCase struct {
	col   rowColumn
	value any
	id    int64
	// running: a job left running on the node by its previous process,
	// which the engine's start recovers.
	running bool
	bad     bool
	// neverDue: the value lies after every now as the database compares
	// (the row is never claimed, and stays as it is).
	neverDue bool
}

func (c rowCase) String() string {
	s := fmt.Sprintf("%s.%s = %v (row %d)", c.col.table, c.col.column, c.value, c.id)
	if c.running {
		s += ", running"
	}
	return s
}

// THE CLASS TEST of issue 22 for the rows the task engine and the outbox
// take: every integer and time column of jobs and notifications is
// written, by plain SQL, with its extremes, in due pending jobs, in jobs
// a crashed process of the node left running, and in due notices. A real
// task engine must start and run a normal job inserted beside them, the
// outbox's claim must hand out the normal notices, and each row that is
// unreadable or out of its bound must end failed, its error naming the
// column, and be logged; a row never due stays as it was. Before, one
// jobs.attempt = 2147483647 failed every claim that picked it on MariaDB
// and PostgreSQL (attempt + 1 out of range), and a time no Go time is
// failed the claim's scan: the node ran nothing.
func TestExtremeJobAndNoticeValues(t *testing.T) {
	t.Parallel()
	for _, d := range testdb.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			log := logrus.New()
			log.SetLevel(logrus.InfoLevel)
			log.SetOutput(io.Discard)
			hook := logtest.NewLocal(log)
			t.Cleanup(func() {
				if !t.Failed() {
					return
				}
				seen := map[string]bool{}
				for _, e := range hook.AllEntries() {
					line := fmt.Sprintf("log: %s %s %v", e.Level, e.Message, e.Data)
					if e.Level <= logrus.WarnLevel && !seen[line] {
						seen[line] = true
						t.Log(line)
					}
				}
			})
			extremeRows(t, testdb.OpenLogged(t, d, log), log, hook)
		})
	}
}

func extremeRows(t *testing.T, st *store.Store, log *logrus.Logger, hook *logtest.Hook) {
	ctx := context.Background()
	def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "ok"})
	due := store.DBTime(time.Now().Add(-time.Minute))

	var cases []rowCase
	for _, col := range rowColumns() {
		values := rowInts
		switch {
		case col.time && st.Dialect() == store.SQLite:
			values = append(rowTimes[:len(rowTimes):len(rowTimes)], rowSQLiteTimes...)
		case col.time && st.Dialect() == store.Postgres:
			values = append(rowTimes[:len(rowTimes):len(rowTimes)], rowPostgresTime...)
		case col.time:
			values = rowTimes
		case st.Dialect() == store.SQLite:
			values = append(values[:len(values):len(values)], rowSQLiteInts...)
		}
		for _, v := range values {
			for _, running := range []bool{false, true} {
				// A recovery writes run_at and updated_at anew; notices
				// do not run.
				if running && (col.table != "jobs" || col.column == "run_at" || col.column == "updated_at") {
					continue
				}
				if c, ok := writeRowCase(t, st, def.ID, col, v, running, due); ok {
					cases = append(cases, c)
				}
			}
		}
	}
	nbad := 0
	for _, c := range cases {
		if c.bad {
			nbad++
		}
	}
	t.Logf("%d values written, %d of them bad", len(cases), nbad)

	reg := tasks.NewRegistry()
	reg.MustRegister(sleep.Kind, sleep.New)
	te, err := taskengine.New(st, &taskengine.Config{NodeID: "n1", Logger: log, PollInterval: 100 * time.Millisecond,
		ControlInterval: 50 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond, PoolSize: 4, Registry: reg,
		ShutdownGrace: 5 * time.Second})
	require.NoError(t, err)
	require.NoError(t, te.Start(ctx), "the engine's start recovers the rows its previous process left")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, te.Stop(ctx))
	})
	normal := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID})
	te.Wake()
	require.Eventually(t, func() bool {
		return testdb.GetJob(t, st, normal.ID).Status == models.JobSucceeded
	}, 30*time.Second, 10*time.Millisecond, "the normal job did not run")

	// The outbox's claim, as notify's sender makes it.
	delivered := map[int64]bool{}
	for range 5 {
		ds, err := st.ClaimNotifications(ctx, &models.NotificationClaim{NodeID: "n1", Limit: 100, Lease: time.Minute})
		require.NoError(t, err, "the outbox's claim")
		for _, d := range ds {
			delivered[d.ID] = true
			_, err := st.FinishNotification(ctx, &models.NotificationResult{ID: d.ID, JobID: d.JobID, Attempts: d.Attempts, Sent: true})
			require.NoError(t, err)
		}
	}

	for _, c := range cases {
		if c.col.table == "notifications" {
			checkNoticeCase(t, st, hook, c, delivered[c.id])
		} else {
			checkJobCase(t, st, hook, c)
		}
	}
}

// writeRowCase writes one row whose column holds v, by plain SQL: a due
// pending job (running on n1 when running), or a due notice of a job of
// its own. ok is false when the column's type refuses v.
func writeRowCase(t *testing.T, st *store.Store, defID int64, col rowColumn, v any, running bool, due time.Time) (rowCase, bool) {
	t.Helper()
	db := st.DB()
	c := rowCase{col: col, value: v, running: running}
	// A normal row, then the value by UPDATE: an INSERT's value may be
	// replaced (SQLite's triggers that normalize times touch updated_at).
	var q string
	var args []any
	switch col.table {
	case "jobs":
		cols := map[string]any{"job_definition_id": defID, "scheduled_at": due, "run_at": due}
		if running {
			// Attempt 0 of 1: recovered to pending, then claimed again.
			cols["status"], cols["node_id"], cols["attempt"] = models.JobRunning, "n1", int64(0)
		}
		q, args = insertSQL("jobs", cols)
	default:
		j := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: defID, Status: models.JobSucceeded})
		q, args = insertSQL("notifications", map[string]any{"job_id": j.ID, "job_status": models.JobSucceeded, "attempt": int64(1),
			"recipients": "a@example.com", "next_attempt_at": due, "created_at": due})
	}
	require.NoError(t, db.Exec(q, args...).Error)
	require.NoError(t, db.Raw("SELECT MAX(id) FROM "+col.table).Scan(&c.id).Error)
	if err := db.Exec("UPDATE "+col.table+" SET "+col.column+" = ? WHERE id = ?", v, c.id).Error; err != nil {
		t.Logf("%v: refused by the database: %v", c, err)
		require.NoError(t, db.Exec("DELETE FROM "+col.table+" WHERE id = ?", c.id).Error)
		return c, false
	}
	if col.time {
		at, err := time.Parse(time.DateTime, v.(string))
		c.bad = err != nil || models.CheckTime(col.column, at) != nil
		// Only these decide when a row is due; a value past every now
		// (text compares after digits on SQLite) leaves it never due.
		if col.column == "run_at" || col.table == "notifications" && (col.column == "next_attempt_at" || col.column == "created_at") {
			c.neverDue = err == nil && at.After(time.Now()) || err != nil && v != "-infinity" && !strings.HasSuffix(v.(string), " BC")
		}
		// A due notice's claim writes next_attempt_at and updated_at anew
		// before it reads the row.
		if col.table == "notifications" && (col.column == "next_attempt_at" || col.column == "updated_at") && !c.neverDue {
			c.bad = false
		}
	} else {
		// What the database kept, as its text: MariaDB may clamp.
		var stored sql.NullString
		require.NoError(t, st.SQL().QueryRow("SELECT "+col.column+" FROM "+col.table+" WHERE id = ?", c.id).Scan(&stored))
		n, err := strconv.ParseInt(stored.String, 10, 64)
		c.bad = !stored.Valid || err != nil || col.counter && (n < 0 || n > math.MaxInt32-1)
	}
	return c, true
}

// insertSQL is an INSERT of cols into table.
func insertSQL(table string, cols map[string]any) (string, []any) {
	names := make([]string, 0, len(cols))
	marks := make([]string, 0, len(cols))
	args := make([]any, 0, len(cols))
	for k, v := range cols {
		names, marks, args = append(names, k), append(marks, "?"), append(args, v)
	}
	return "INSERT INTO " + table + " (" + strings.Join(names, ", ") + ") VALUES (" + strings.Join(marks, ", ") + ")", args
}

// checkJobCase requires a bad job failed with its column named and
// logged, a row never due pending still, and any other finished.
func checkJobCase(t *testing.T, st *store.Store, hook *logtest.Hook, c rowCase) {
	t.Helper()
	var status string
	var errText sql.NullString
	final := func() bool {
		require.NoError(t, st.SQL().QueryRow("SELECT status, error FROM jobs WHERE id = ?", c.id).Scan(&status, &errText))
		return models.JobStatus(status).Finished()
	}
	if c.neverDue {
		final()
		require.Equal(t, string(models.JobPending), status, "%v: never due, but %s", c, status)
		return
	}
	require.Eventually(t, final, 30*time.Second, 10*time.Millisecond, "%v: still %s", c, status)
	if !c.bad {
		require.NotContains(t, errText.String, c.col.table+"."+c.col.column, "%v: in bounds, but failed for it", c)
		if !c.running {
			require.Equal(t, string(models.JobSucceeded), status, "%v: %s", c, errText.String)
		}
		return
	}
	require.Equal(t, string(models.JobFailed), status, "%v", c)
	require.Contains(t, errText.String, c.col.table+"."+c.col.column, "%v", c)
	require.True(t, rowLogged(hook, "job_id", c.id, c.col.column), "%v: no log line names the row and its column", c)
}

// checkNoticeCase requires a bad notice failed with its column named and
// logged, one never due pending and not delivered, and any other delivered.
func checkNoticeCase(t *testing.T, st *store.Store, hook *logtest.Hook, c rowCase, delivered bool) {
	t.Helper()
	var status string
	var lastErr sql.NullString
	require.NoError(t, st.SQL().QueryRow("SELECT status, last_error FROM notifications WHERE id = ?", c.id).Scan(&status, &lastErr))
	switch {
	case c.neverDue:
		require.False(t, delivered, "%v", c)
		require.Equal(t, string(models.NotificationPending), status, "%v", c)
	case !c.bad:
		require.True(t, delivered, "%v: not delivered (%s: %s)", c, status, lastErr.String)
	default:
		require.False(t, delivered, "%v: delivered", c)
		require.Equal(t, string(models.NotificationFailed), status, "%v", c)
		require.Contains(t, lastErr.String, c.col.table+"."+c.col.column, "%v", c)
		require.True(t, rowLogged(hook, "notification_id", c.id, c.col.column), "%v: no log line names the row and its column", c)
	}
}

// rowLogged reports whether a warning or error names row id (under key)
// and column.
func rowLogged(hook *logtest.Hook, key string, id int64, column string) bool {
	for _, e := range hook.AllEntries() {
		if e.Level <= logrus.WarnLevel && e.Data[key] == id && strings.Contains(fmt.Sprint(e.Data["reason"]), column) {
			return true
		}
	}
	return false
}

// The reconciler's sweep of stalled jobs fails a row it cannot judge
// (attempt out of its bound, or no integer at all on SQLite), naming the
// column, and recovers the others: one such row failed the whole sweep,
// every tick, and every stalled job stayed running.
func TestStalledSweepFailsRowsThatCannotRun(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{MaxAttempts: 3})
		old := store.DBTime(time.Now().Add(-time.Hour))
		bad := any(int64(math.MaxInt32))
		if st.Dialect() == store.SQLite {
			bad = "x"
		}
		var ids []int64
		for _, attempt := range []any{int64(1), bad} {
			j := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Status: models.JobRunning, NodeID: "gone", Attempt: 1, Heartbeat: &old})
			require.NoError(t, st.DB().Exec("UPDATE jobs SET attempt = ?, updated_at = ? WHERE id = ?", attempt, old, j.ID).Error)
			ids = append(ids, j.ID)
		}
		res, err := st.RecoverStalledJobs(ctx, time.Minute)
		require.NoError(t, err)
		require.Equal(t, []int64{ids[0]}, res.Retried)
		require.Equal(t, []int64{ids[1]}, res.Failed)
		var status string
		var errText sql.NullString
		require.NoError(t, st.SQL().QueryRow("SELECT status, error FROM jobs WHERE id = ?", ids[1]).Scan(&status, &errText))
		require.Equal(t, string(models.JobFailed), status)
		require.Contains(t, errText.String, "jobs.attempt")
	})
}
