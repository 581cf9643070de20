package console_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

// plan returns the query plan of q: MySQL's EXPLAIN rows as "table:key"
// (key empty for a scan), SQLite's EXPLAIN QUERY PLAN details,
// PostgreSQL's EXPLAIN lines.
func plan(t *testing.T, st *store.Store, q string) string {
	t.Helper()
	ctx := context.Background()
	if st.Dialect() == store.Postgres {
		// Fresh statistics, as autovacuum would have them on a table with a
		// history, rather than the planner's guesses for a new one.
		_, err := st.SQL().ExecContext(ctx, "VACUUM ANALYZE jobs")
		require.NoError(t, err)
		rows, err := st.SQL().QueryContext(ctx, "EXPLAIN "+q)
		require.NoError(t, err)
		defer rows.Close()
		var out []string
		for rows.Next() {
			var line string
			require.NoError(t, rows.Scan(&line))
			out = append(out, strings.TrimSpace(line))
		}
		require.NoError(t, rows.Err())
		return strings.Join(out, "; ")
	}
	if st.Dialect() == store.SQLite {
		rows, err := st.SQL().QueryContext(ctx, "EXPLAIN QUERY PLAN "+q)
		require.NoError(t, err)
		defer rows.Close()
		var out []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			require.NoError(t, rows.Scan(&id, &parent, &notused, &detail))
			out = append(out, detail)
		}
		require.NoError(t, rows.Err())
		return strings.Join(out, "; ")
	}
	rows, err := st.SQL().QueryContext(ctx, "EXPLAIN "+q)
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		row := map[string]string{}
		for i, c := range cols {
			row[c] = vals[i].String
		}
		out = append(out, row["table"]+":"+row["key"]+" ("+row["Extra"]+")")
	}
	require.NoError(t, rows.Err())
	return strings.Join(out, "; ")
}

// TestQueriesUseIndexes pins the plans that keep pages fast with a long
// history (BenchmarkPages measures them): each query the console runs on
// jobs (store's Admin, admin_console.go) reads an index range, never the whole table. Plans, not timings.
func TestQueriesUseIndexes(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ids := fillHistory(t, st, 5000)
		// The overview's window: the last day of a 30-day history.
		day := time.Now().Add(-24 * time.Hour)
		const statuses = "status IN ('pending','queued','running','paused','succeeded','failed','stopped','canceled')"
		surely := fmt.Sprintf("claim_key > %d", store.ClaimKeyUntil(day))
		edge := fmt.Sprintf("claim_key >= %d AND claim_key <= %d AND run_at >= '%s'",
			store.ClaimKeyFrom(day), store.ClaimKeyUntil(day), store.DBTime(day).Format("2006-01-02 15:04:05"))
		for _, c := range []struct{ name, q, index string }{
			// CountJobsByStatus: the part surely in the window, from the
			// index alone, and its edge; CountJobsPerMinute reads a range
			// like the edge's.
			{"counts by status", "SELECT status, COUNT(*) FROM jobs WHERE " + statuses + " AND " + surely + " GROUP BY status", "idx_jobs_claim_order"},
			{"counts by status at the window's edge", "SELECT status, COUNT(*) FROM jobs WHERE " + statuses + " AND " + edge + " GROUP BY status", "idx_jobs_claim_order"},
			// CountRunningByNode.
			{"running per node", "SELECT node_id, COUNT(*) FROM jobs WHERE status = 'running' GROUP BY node_id", "idx_jobs_claim_order"},
			// LastJobs and ScheduleJobs.
			{"a schedule's latest jobs", fmt.Sprintf("SELECT * FROM jobs WHERE schedule_id = %d ORDER BY scheduled_at DESC LIMIT 20", ids.schedule), `uq_jobs_schedule_fire|sqlite_autoindex_jobs_1 \(schedule_id=`}, // SQLite names the UNIQUE constraint itself
			// The API's job list filtered by definition (store.Admin.ListJobs).
			// The job list by time, for a window that holds no job.
			{"jobs in a quiet window", "SELECT * FROM jobs WHERE scheduled_at >= '2999-01-01 00:00:00' ORDER BY id DESC LIMIT 51", "idx_jobs_scheduled"},
			{"jobs of a definition", fmt.Sprintf("SELECT * FROM jobs WHERE job_definition_id = %d ORDER BY id DESC LIMIT 51", ids.rareDefinition), "idx_jobs_definition"},
		} {
			p := plan(t, st, c.q)
			require.Regexp(t, c.index, p, "%s: %s", c.name, p)
		}
	})
}
