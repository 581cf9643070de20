package scheduleengine

import (
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

// A column the class test walks: an integer chime turns into a duration,
// or a time fires are computed from.
type walkedColumn struct {
	table, column string
	// row is the schedule that carries the value (through its definition
	// or its trigger row for those tables).
	row models.Schedule
	// values are the extremes written by SQL; each dialect keeps those its
	// column type takes.
	values []any
	// valid says whether the stored value is in bounds, from its text as
	// the database gives it back; nil for times, judged from what was
	// written (the database refuses what it cannot hold).
	valid func(stored string) bool
}

// Extreme integers: the largest int64, the first that overflows
// time.Duration as seconds, one past the INT columns of MariaDB and
// PostgreSQL, their largest, zero, and negatives.
var extremeInts = []any{int64(math.MaxInt64), int64(9223372037), int64(math.MaxInt32 + 1), int64(math.MaxInt32), int64(0), int64(-1), int64(math.MinInt64)}

// What only SQLite's flexible typing stores in an INTEGER column.
var sqliteNonInts = []any{1e30, 1.5, "x"}

// Extreme times: the first and last MySQL's DATETIME holds; PostgreSQL
// holds far more, SQLite anything at all in the columns no trigger
// watches.
var (
	extremeTimes  = []any{"1000-01-01 00:00:00", "9999-12-31 23:59:59"}
	postgresTimes = []any{"0044-03-15 00:00:00 BC", "10000-01-01 00:00:00", "infinity", "-infinity"}
	sqliteTimes   = []any{"0000-01-01 00:00:00", "not a time"}
)

func inBound(b models.Bound) func(string) bool {
	return func(s string) bool {
		v, err := strconv.ParseInt(s, 10, 64)
		return err == nil && b.Check(v) == nil
	}
}

func walkedColumns() []walkedColumn {
	every := models.Schedule{ScheduleType: models.ScheduleInterval, IntervalSeconds: ptr(60)}
	return []walkedColumn{
		{table: "schedules", column: "interval_seconds", row: every, values: extremeInts, valid: inBound(models.IntervalBound)},
		{table: "schedules", column: "catchup_window_seconds", row: every, values: extremeInts, valid: inBound(models.CatchupWindowBound)},
		{table: "job_definitions", column: "timeout_seconds", row: every, values: extremeInts, valid: inBound(models.TimeoutBound)},
		{table: "job_definitions", column: "retry_backoff_seconds", row: every, values: extremeInts, valid: inBound(models.RetryBackoffBound)},
		{table: "schedules", column: "created_at", row: every, values: extremeTimes},
		{table: "schedules", column: "start_at", row: every, values: extremeTimes},
		{table: "schedules", column: "end_at", row: models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("* * * * *")}, values: extremeTimes},
		{table: "schedules", column: "run_at", row: models.Schedule{ScheduleType: models.ScheduleOnce, RunAt: ptr(t0)}, values: extremeTimes},
		{table: "time_triggers", column: "last_fire_at", row: every, values: extremeTimes},
		{table: "time_triggers", column: "spec_changed_at", row: every, values: extremeTimes},
	}
}

// walkedCase is one value written into one column, and what the node
// must make of it.
type walkedCase struct {
	col     walkedColumn
	value   any
	sched   int64
	adHoc   int64 // a job of the case's own definition; 0 for other tables
	invalid bool
}

func (c walkedCase) String() string {
	return fmt.Sprintf("%s.%s = %v", c.col.table, c.col.column, c.value)
}

// THE CLASS TEST. Every integer column chime turns into a duration and
// every time column fires are computed from is written, by plain SQL, with
// its extreme values, on a node running a schedule engine and a task
// engine. The node must go on firing its other schedule every minute;
// each out-of-bounds row must become invalid with its column named, and
// be logged; a definition's bad row must fail its ad hoc job before it
// starts. A negative interval (9223372037 s) froze a SQLite node: the plan
// walk looped and allocated 12.7 GB in 40 s, nothing logged.
func TestExtremeColumnValues(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		log := logrus.New()
		log.SetLevel(logrus.InfoLevel)
		log.SetOutput(io.Discard)
		hook := logtest.NewLocal(log)
		t.Cleanup(func() {
			if t.Failed() {
				for _, e := range hook.AllEntries() {
					if e.Level <= logrus.WarnLevel {
						t.Logf("log: %s %s %v", e.Level, e.Message, e.Data)
					}
				}
			}
		})
		clock := newClock()
		start := clock.Now()

		reg := tasks.NewRegistry()
		reg.MustRegister(sleep.Kind, sleep.New)
		te := startTaskEngine(t, st, taskengine.Config{NodeID: "n1", Logger: log, PoolSize: 4, Registry: reg, Clock: clock})
		// As app wires them: fires through the task engine's decorator of the store.
		b := setupWithClock(t, te.HandoffStore(st), "n1", clock, func(c *Config) { c.Logger, c.OnFire = log, te.Wake })
		ok := models.JobDefinition{Name: "ok", TaskType: sleep.Kind, DefaultParams: models.JSON(`{"duration":"0s"}`), MaxAttempts: 1, NotifyOn: models.NotifyNever}
		require.NoError(t, db.Create(&ok).Error)
		b.def = ok
		good := b.schedule(t, models.Schedule{Name: "good", ScheduleType: models.ScheduleInterval, IntervalSeconds: ptr(60)}, start)

		var cases []walkedCase
		for _, col := range walkedColumns() {
			values := col.values
			switch {
			case st.Dialect() == store.SQLite && col.valid != nil:
				values = append(values[:len(values):len(values)], sqliteNonInts...)
			case st.Dialect() == store.SQLite:
				values = append(values[:len(values):len(values)], sqliteTimes...)
			case st.Dialect() == store.Postgres && col.valid == nil:
				values = append(values[:len(values):len(values)], postgresTimes...)
			}
			for i, v := range values {
				if c, ok := writeCase(t, st, b, col, i, v, start); ok {
					cases = append(cases, c)
				}
			}
		}
		t.Logf("%d values written", len(cases))

		for minute := range 4 {
			now := start.Add(time.Duration(minute) * time.Minute)
			b.at(t, now)
			require.Eventually(t, func() bool {
				var j models.Job
				err := db.Where("schedule_id = ? AND scheduled_at = ?", good.ID, store.DBTime(now)).Take(&j).Error
				return err == nil && j.Status == models.JobSucceeded
			}, 20*time.Second, 5*time.Millisecond, "the good schedule's fire at %v did not run", now)
		}

		for _, c := range cases {
			// Plain SQL: gorm would refuse the rows SQLite's typing lets through.
			var s models.Schedule
			require.NoError(t, st.SQL().QueryRow("SELECT status, status_reason FROM schedules WHERE id = ?", c.sched).Scan(&s.Status, &s.StatusReason))
			if !c.invalid {
				require.NotEqual(t, models.ScheduleInvalid, s.Status, "%v: in bounds, but invalid: %s", c, s.StatusReason)
				continue
			}
			require.Equal(t, models.ScheduleInvalid, s.Status, "%v: out of bounds, but %s", c, s.Status)
			require.Contains(t, s.StatusReason, c.col.column, "%v", c)
			require.True(t, logged(hook, c.sched, c.col.column), "%v: no log line marks schedule %d invalid", c, c.sched)
			if c.adHoc != 0 {
				var j models.Job
				require.Eventually(t, func() bool {
					return db.Take(&j, c.adHoc).Error == nil && j.Status == models.JobFailed
				}, 20*time.Second, 5*time.Millisecond, "%v: the ad hoc job did not fail", c)
				require.NotNil(t, j.Error)
				require.Contains(t, *j.Error, c.col.column, "%v", c)
			}
		}
	})
}

// writeCase gives one column one value by plain SQL, on a schedule (and
// definition, or trigger row) of its own. ok is false when the column's
// type refuses the value.
func writeCase(t *testing.T, st *store.Store, b *bundle, col walkedColumn, i int, v any, start time.Time) (c walkedCase, ok bool) {
	t.Helper()
	db := st.DB()
	c = walkedCase{col: col, value: v}
	row := col.row
	row.Name = fmt.Sprintf("%s.%s#%d", col.table, col.column, i)
	if col.column == "catchup_window_seconds" {
		row.CatchupWindowSeconds = ptr(30) // a row with a window, missed fires to drop
	}
	created := start.Add(-time.Hour)
	s := b.schedule(t, row, created)
	c.sched = s.ID
	target, id := col.table, s.ID
	switch col.table {
	case "job_definitions":
		def := models.JobDefinition{Name: row.Name, TaskType: sleep.Kind, DefaultParams: models.JSON(`{"duration":"0s"}`), MaxAttempts: 3,
			NotifyOn: models.NotifyNever}
		require.NoError(t, db.Create(&def).Error)
		require.NoError(t, db.Model(&models.Schedule{}).Where("id = ?", s.ID).Update("job_definition_id", def.ID).Error)
		id = def.ID
	case "time_triggers":
		// The row the engine would have written, by hand.
		require.NoError(t, db.Exec("INSERT INTO time_triggers (schedule_id, last_fire_at, spec_hash) VALUES (?, ?, ?)",
			s.ID, store.DBTime(created), specHash(&s, nil)).Error)
		target = "time_triggers"
	}
	where := "id = ?"
	if target == "time_triggers" {
		where = "schedule_id = ?"
	}
	if err := db.Exec("UPDATE "+target+" SET "+col.column+" = ? WHERE "+where, v, id).Error; err != nil {
		t.Logf("%s.%s = %v: refused by the database: %v", col.table, col.column, v, err)
		require.NoError(t, db.Delete(&models.Schedule{}, s.ID).Error)
		return c, false
	}
	if col.valid != nil {
		var stored sql.NullString
		require.NoError(t, st.SQL().QueryRow("SELECT "+col.column+" FROM "+target+" WHERE "+where, id).Scan(&stored))
		c.invalid = !stored.Valid || !col.valid(stored.String)
	} else {
		at, err := time.Parse(time.DateTime, v.(string))
		c.invalid = err != nil || models.CheckTime(col.column, at) != nil
	}
	if col.table == "job_definitions" {
		require.NoError(t, db.Exec("INSERT INTO jobs (job_definition_id, run_at) VALUES (?, ?)", id, store.DBTime(start)).Error)
		require.NoError(t, db.Raw("SELECT MAX(id) FROM jobs").Scan(&c.adHoc).Error)
	}
	return c, true
}

// logged reports whether the engine logged marking schedule id invalid
// with a reason that names column.
func logged(hook *logtest.Hook, id int64, column string) bool {
	for _, e := range hook.AllEntries() {
		if e.Message == "schedule cannot be scheduled; marking it invalid" && e.Data["schedule_id"] == id &&
			strings.Contains(fmt.Sprint(e.Data["reason"]), column) {
			return true
		}
	}
	return false
}
