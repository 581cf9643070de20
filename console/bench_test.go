package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

// EnvBenchJobs sets how many finished jobs BenchmarkPages writes (default
// 1,000,000).
const EnvBenchJobs = "CHIME_CONSOLE_BENCH_JOBS"

// BenchmarkPages measures the server-side render time of every console
// page on MariaDB with a long history: 1,000,000 finished jobs over 30
// days, 200 schedules of 50 definitions, and one definition whose few jobs
// are all old (a filter that matches little is the slow case of a scan).
// It reports p50 and p99 per page; docs/benchmarks.md has the figures.
//
//	CHIME_TEST_MYSQL_DSN=... go test -run '^$' -bench BenchmarkPages -benchtime 200x ./console/
func BenchmarkPages(b *testing.B) {
	testdb.MySQLServerDSN(b)
	total := 1_000_000
	if v, err := strconv.Atoi(os.Getenv(EnvBenchJobs)); err == nil && v > 0 {
		total = v
	}
	st := testdb.Open(b, store.MySQL)
	start := time.Now()
	ids := fillHistory(b, st, total)
	b.Logf("wrote %d jobs in %s", total, time.Since(start).Round(time.Second))

	s := newSite(b, st, testToken)
	c := s.client()
	s.login(c)
	cookie := c.Jar.Cookies(mustURL(s.srv.URL))[0]
	// Server-side time: the handler itself, no network or browser.
	h := s.h

	pages := []struct{ name, path string }{
		{"overview", "/"},
		{"schedules", "/schedules"},
		{"schedules_paused", "/schedules?status=paused"},
		{"schedules_search", "/schedules?q=report-1"},
		{"schedule", fmt.Sprintf("/schedules/%d", ids.schedule)},
		{"schedule_edit", fmt.Sprintf("/schedules/%d/edit", ids.schedule)},
		{"jobs", "/jobs"},
		{"jobs_failed", "/jobs?status=failed"},
		{"jobs_canceled_rare", "/jobs?status=canceled"},
		{"jobs_definition", fmt.Sprintf("/jobs?definition=%d", ids.definition)},
		{"jobs_definition_rare", fmt.Sprintf("/jobs?definition=%d", ids.rareDefinition)},
		{"jobs_schedule", fmt.Sprintf("/jobs?schedule=%d", ids.schedule)},
		{"jobs_last_hour", "/jobs?since=1h"},
		{"jobs_last_15m_quiet", "/jobs?since=15m"},
		{"jobs_last_7d", "/jobs?since=7d"},
		{"jobs_canceled_last_7d", "/jobs?status=canceled&since=7d"},
		{"jobs_failed_last_day", "/jobs?status=failed&since=24h"},
		{"jobs_deep_page", fmt.Sprintf("/jobs?cursor=%d", ids.deepCursor)},
		{"job", fmt.Sprintf("/jobs/%d", ids.job)},
		{"job_log", fmt.Sprintf("/jobs/%d/log", ids.job)},
		{"definitions", "/definitions"},
		{"nodes", "/nodes"},
	}
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			times := make([]time.Duration, 0, b.N)
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, "http://localhost"+p.path, nil)
				req.AddCookie(cookie)
				rec := httptest.NewRecorder()
				t0 := time.Now()
				h.ServeHTTP(rec, req)
				times = append(times, time.Since(t0))
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", p.path, rec.Code, rec.Body.String())
				}
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

type historyIDs struct {
	schedule, definition, rareDefinition, job, deepCursor int64
}

// fillHistory writes the benchmark's rows with multi-row INSERTs of
// generated literals (no outside input), a few thousand rows a statement.
func fillHistory(b testing.TB, st *store.Store, total int) historyIDs {
	ctx := context.Background()
	db := st.SQL()
	now := time.Now().UTC().Truncate(time.Second)
	ts := func(t time.Time) string { return "'" + t.Format("2006-01-02 15:04:05.000000") + "'" }
	exec := func(q string) {
		if _, err := db.ExecContext(ctx, q); err != nil {
			b.Fatalf("%v: %.200s", err, q)
		}
	}
	var sb strings.Builder
	sb.WriteString("INSERT INTO job_definitions (id, name, task_type, description, default_params, timeout_seconds, max_attempts, " +
		"retry_backoff_seconds, notify_on, notify_emails, created_at, updated_at) VALUES ")
	const defs, schedules = 51, 200
	for d := 1; d <= defs; d++ {
		if d > 1 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, "(%d, 'definition-%d', 'sleep', '', '{\"duration\": \"1s\"}', 0, 1, 10, 'never', '', %s, %s)", d, d, ts(now), ts(now))
	}
	exec(sb.String())
	sb.Reset()
	sb.WriteString("INSERT INTO schedules (id, name, job_definition_id, schedule_type, cron_expr, timezone, misfire_policy, " +
		"concurrency, status, status_reason, created_at, updated_at) VALUES ")
	for s := 1; s <= schedules; s++ {
		if s > 1 {
			sb.WriteString(",")
		}
		status := "active"
		if s%10 == 0 {
			status = "paused"
		}
		fmt.Fprintf(&sb, "(%d, 'report-%d', %d, 'cron', '*/5 * * * *', 'UTC', 'fire_once', 'allow', '%s', '', %s, %s)",
			s, s, 1+s%(defs-1), status, ts(now), ts(now))
	}
	exec(sb.String())

	// Jobs: oldest first, so ids grow with time as they do in a live
	// table; one every 30 days / total, the last 20 minutes quiet (a
	// time filter that matches nothing must not read the whole table).
	span := 30 * 24 * time.Hour
	step := span / time.Duration(total)
	end := now.Add(-20 * time.Minute)
	const batch = 2000
	header := "INSERT INTO jobs (schedule_id, job_definition_id, scheduled_at, run_at, status, control, attempt, max_attempts, " +
		"node_id, queued_at, started_at, finished_at, result, error, created_at, updated_at) VALUES "
	for i := 0; i < total; {
		sb.Reset()
		sb.WriteString(header)
		for k := 0; k < batch && i < total; k, i = k+1, i+1 {
			at := end.Add(-span + time.Duration(i)*step)
			sch := 1 + i%schedules
			def := 1 + sch%(defs-1)
			status, res, errText := "succeeded", "'ok'", "NULL"
			switch {
			case i%50 == 7:
				status, res, errText = "failed", "NULL", "'exit status 1'"
			case i%5000 == 11:
				status = "canceled"
			}
			schCol := strconv.Itoa(sch)
			if i < 20 {
				// The rare definition: a few ad hoc jobs, all 30 days old.
				schCol, def = "NULL", defs
			}
			if k > 0 {
				sb.WriteString(",")
			}
			fin := at.Add(2 * time.Second)
			fmt.Fprintf(&sb, "(%s, %d, %s, %s, '%s', '', 1, 1, 'bench-node', %s, %s, %s, %s, %s, %s, %s)",
				schCol, def, ts(at), ts(at), status, ts(at), ts(at), ts(fin), res, errText, ts(at), ts(fin))
		}
		exec(sb.String())
	}
	var ids historyIDs
	ids.schedule, ids.definition, ids.rareDefinition = 7, 8, defs
	row := db.QueryRowContext(ctx, "SELECT MAX(id) FROM jobs")
	require.NoError(b, row.Scan(&ids.job))
	ids.deepCursor = ids.job / 2
	// The sampled job has a log of 50 lines.
	sb.Reset()
	sb.WriteString("INSERT INTO job_logs (job_id, level, message, created_at) VALUES ")
	for l := range 50 {
		if l > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, "(%d, 'info', 'line %d of the task''s output', %s)", ids.job, l, ts(now))
	}
	exec(sb.String())
	exec("INSERT INTO nodes (id, hostname, pid, version, roles, started_at, heartbeat_at, status) VALUES " +
		"('bench-node', 'bench', 1, 'dev', 'scheduler,worker', " + ts(now) + ", " + ts(now) + ", 'alive')")
	if st.Dialect() == store.MySQL {
		exec("ANALYZE TABLE jobs")
	} else {
		exec("ANALYZE")
	}
	return ids
}
