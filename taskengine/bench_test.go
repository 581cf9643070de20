package taskengine

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// insertRows writes n jobs with multi-row INSERTs (1,000 rows a statement).
func insertRows(b testing.TB, db *gorm.DB, n int, defID int64, status models.JobStatus, at time.Time) {
	b.Helper()
	const per = 1000
	at = store.DBTime(at)
	for done := 0; done < n; done += per {
		k := min(per, n-done)
		var sb strings.Builder
		sb.WriteString("INSERT INTO jobs (job_definition_id, scheduled_at, run_at, status, attempt, finished_at) VALUES ")
		args := make([]any, 0, 6*k)
		for i := 0; i < k; i++ {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString("(?,?,?,?,?,?)")
			var fin any
			attempt := 0
			if status.Finished() {
				fin, attempt = at, 1
			}
			args = append(args, defID, at, at, string(status), attempt, fin)
		}
		require.NoError(b, db.Exec(sb.String(), args...).Error)
	}
}

// stmtCounts counts the statements a store sends, by their first words,
// through GORM callbacks (every statement of store goes through GORM).
type stmtCounts struct {
	mu sync.Mutex
	by map[string]int
}

func countStatements(b testing.TB, db *gorm.DB) *stmtCounts {
	c := &stmtCounts{by: map[string]int{}}
	count := func(tx *gorm.DB) {
		sql := strings.ToUpper(strings.TrimSpace(tx.Statement.SQL.String()))
		kind, _, _ := strings.Cut(sql, " ")
		switch {
		case kind == "INSERT" || kind == "UPDATE" || kind == "DELETE":
			if _, rest, ok := strings.Cut(sql, kind+" "); ok {
				if kind == "INSERT" || kind == "DELETE" {
					_, rest, _ = strings.Cut(rest, " ") // INTO / FROM
				}
				tbl, _, _ := strings.Cut(rest, " ")
				kind += " " + strings.Trim(tbl, "`\"")
			}
		case strings.Contains(sql, "FOR UPDATE"):
			kind = "SELECT … FOR UPDATE"
		}
		c.mu.Lock()
		c.by[kind]++
		c.mu.Unlock()
	}
	cb := db.Callback()
	require.NoError(b, cb.Create().After("gorm:create").Register("bench:count", count))
	require.NoError(b, cb.Query().After("gorm:query").Register("bench:count", count))
	require.NoError(b, cb.Update().After("gorm:update").Register("bench:count", count))
	require.NoError(b, cb.Delete().After("gorm:delete").Register("bench:count", count))
	require.NoError(b, cb.Row().After("gorm:row").Register("bench:count", count))
	require.NoError(b, cb.Raw().After("gorm:raw").Register("bench:count", count))
	return c
}

// perJob formats the counts divided by n jobs.
func (c *stmtCounts) perJob(n int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.by))
	total := 0
	for k, v := range c.by {
		keys = append(keys, k)
		total += v
	}
	slices.Sort(keys)
	var sb strings.Builder
	fmt.Fprintf(&sb, "total %.3f (%d statements)", float64(total)/float64(n), total)
	for _, k := range keys {
		fmt.Fprintf(&sb, "; %s %.4f (%d)", k, float64(c.by[k])/float64(n), c.by[k])
	}
	return sb.String()
}

// BenchmarkDrain drains 20,000 pending `sleep 0s` jobs with a pool of 100
// and reports jobs/s from the start of the engine (first claim) to the last
// outcome written. Run with -benchtime=1x. With CHIME_BENCH_LIMITS set,
// the default queue and the definition have a max_running the drain never
// reaches (docs/limits.md): the limits' cost in the claim.
func BenchmarkDrain(b *testing.B) {
	for _, d := range testdb.Dialects {
		b.Run(string(d), func(b *testing.B) {
			const n = 20000
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				st := testdb.Open(b, d)
				db := st.DB()
				def := testdb.Definition(b, st, &testdb.DefinitionOpts{Name: "bench", DefaultParams: `{"duration":"0s"}`}).ID
				insertRows(b, db, n, def, models.JobPending, time.Now().Add(-time.Second))
				if os.Getenv("CHIME_BENCH_LIMITS") != "" {
					// Limits configured on both the queue and the
					// definition, but not reached: their cost alone.
					require.NoError(b, db.Exec(`UPDATE queues SET max_running = 100000 WHERE name = 'default'`).Error)
					require.NoError(b, db.Exec(`UPDATE job_definitions SET max_running = 100000 WHERE id = ?`, def).Error)
				}
				cfg := testConfig(b, "bench")
				cfg.PoolSize = 100
				// The production intervals, not testConfig's short ones: a
				// control tick scans the pending backlog (jobs.control has
				// no index), and 20 ticks a second would measure that.
				cfg.PollInterval = DefaultPollInterval
				cfg.ControlInterval = DefaultControlInterval
				cfg.HeartbeatInterval = DefaultHeartbeatInterval
				e, err := New(st, &cfg)
				require.NoError(b, err)
				counts := countStatements(b, db)
				b.StartTimer()
				began := time.Now()
				require.NoError(b, e.Start(context.Background()))
				for e.completer.finished.Load() < n {
					time.Sleep(2 * time.Millisecond) // the poll step: a benchmark has no deadline to fail
				}
				took := time.Since(began)
				b.StopTimer()
				stopBegan := time.Now()
				require.NoError(b, e.Stop(context.Background()))
				stopTook := time.Since(stopBegan)
				b.Logf("%s: statements per job: %s", d, counts.perJob(n))
				var ok, logs int64
				require.NoError(b, db.Model(&models.Job{}).Where("status = 'succeeded'").Count(&ok).Error)
				require.NoError(b, db.Model(&models.JobLog{}).Count(&logs).Error)
				require.EqualValues(b, n, ok)
				// Since 54ff99b a success writes no job_logs row at all:
				// queued, running and the outcome are read off the job's row.
				require.Zero(b, logs, "a success writes no job_logs row")
				b.ReportMetric(float64(n)/took.Seconds(), "jobs/s")
				b.ReportMetric(0, "ns/op")
				b.Logf("%s: %d jobs in %v = %.0f jobs/s (Stop flushed the rest in %v)", d, n, took.Round(time.Millisecond), float64(n)/took.Seconds(), stopTook.Round(time.Millisecond))
			}
		})
	}
}

// BenchmarkClaimWithHistory measures one claim of 100 rows from a table
// holding CHIME_BENCH_HISTORY (default 1,000,000) finished jobs, next to an
// empty history, and logs the plan: the claim reads idx_jobs_claim_order, so its
// cost does not grow with history.
func BenchmarkClaimWithHistory(b *testing.B) {
	history := 1_000_000
	if v := os.Getenv("CHIME_BENCH_HISTORY"); v != "" {
		history, _ = strconv.Atoi(v)
	}
	for _, d := range testdb.Dialects {
		for _, h := range []int{0, history} {
			b.Run(fmt.Sprintf("%s/history=%d", d, h), func(b *testing.B) {
				st := testdb.Open(b, d)
				db := st.DB()
				def := testdb.Definition(b, st, &testdb.DefinitionOpts{Name: "bench", DefaultParams: `{"duration":"0s"}`}).ID
				insertRows(b, db, h, def, models.JobSucceeded, time.Now().Add(-time.Hour))
				insertRows(b, db, 2000, def, models.JobPending, time.Now().Add(-time.Minute))
				ctx := context.Background()
				if d == store.MySQL {
					require.NoError(b, db.Exec("ANALYZE TABLE jobs").Error)
				} else {
					require.NoError(b, db.Exec("ANALYZE").Error)
				}
				plan, err := st.ExplainClaim(ctx, time.Now(), 100)
				require.NoError(b, err)
				b.Logf("plan:\n%s", plan)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					res, err := st.ClaimJobs(ctx, &chimedb.ClaimParams{NodeID: "bench", Now: time.Now(), Limit: 100})
					require.NoError(b, err)
					require.Len(b, res.Jobs, 100)
					b.StopTimer()
					require.NoError(b, db.Exec("UPDATE jobs SET status = 'pending', node_id = '', queued_at = NULL WHERE status = 'queued'").Error)
					b.StartTimer()
				}
			})
		}
	}
}
