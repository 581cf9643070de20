package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// claimSteps records what the claims of st send, as the steps
// "lock-queues", "lock-definitions", "mark" (the UPDATE that queues the
// claimed rows) and "count" (a count of active jobs), in order.
func claimSteps(t *testing.T, st *store.Store) func() []string {
	t.Helper()
	return recordSQL(t, st, "claim_steps", func(sql string) string {
		locks := strings.Contains(sql, "FOR UPDATE") || strings.Contains(sql, "FOR NO KEY UPDATE")
		switch {
		case strings.Contains(sql, "FROM queues") && locks:
			return "lock-queues"
		case strings.Contains(sql, "FROM job_definitions") && locks:
			return "lock-definitions"
		case strings.HasPrefix(sql, "UPDATE jobs") && strings.Contains(sql, "SET status"):
			return "mark"
		case strings.Contains(sql, "COUNT(*)") && strings.Contains(sql, "FROM jobs"):
			return "count"
		}
		return ""
	})
}

// limitPaths is st.LimitCheckPaths as one value, to compare.
type limitPaths struct{ first, late, fellBack int64 }

func pathsOf(st *store.Store) limitPaths {
	f, l, b := st.LimitCheckPaths()
	return limitPaths{f, l, b}
}

// A claim whose limits have no rate and that the last count says fits
// them takes no limit's lock before it marks its rows: it locks the
// queue's row and counts after its marks, just before its COMMIT. A
// queue with a rate, or one the last count says may be full, is locked
// and counted first, as before. SQLite, one writer at a time, always
// checks first (a count and no lock).
func TestLimitCheckedLateWhenItFits(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		def := testdb.Definition(t, st, nil)
		sqlExec(t, st, `UPDATE queues SET max_running = 1000000 WHERE name = 'default'`)
		steps := claimSteps(t, st)
		claim := func(n, want int) []string {
			limitJobs(t, st, def.ID, n)
			steps()
			_, ids := claimIDs(t, st, "me", n)
			require.Len(t, ids, want)
			return steps()
		}
		server := st.Dialect() != store.SQLite

		before := pathsOf(st)
		got := claim(5, 5)
		if server {
			require.Equal(t, []string{"mark", "lock-queues", "count"}, got, "checked late: the lock and the count after the marks")
			require.Equal(t, limitPaths{before.first, before.late + 1, before.fellBack}, pathsOf(st))
		} else {
			require.Equal(t, []string{"count", "mark"}, got)
			require.Equal(t, limitPaths{before.first + 1, before.late, before.fellBack}, pathsOf(st))
		}

		// A rate's state is read under the lock before a start: first.
		sqlExec(t, st, `UPDATE queues SET rate_limit = 100000, rate_period_ms = 1000 WHERE name = 'default'`)
		before = pathsOf(st)
		got = claim(5, 5)
		if server {
			require.Equal(t, []string{"lock-queues", "count", "mark"}, got)
		} else {
			require.Equal(t, []string{"count", "mark"}, got)
		}
		require.Equal(t, limitPaths{before.first + 1, before.late, before.fellBack}, pathsOf(st))

		// 5 jobs active at the last count (taken before that claim's
		// marks), 8 picked, a limit of 12: the count first, exact at
		// once (10 active), and the last 2 slots taken.
		sqlExec(t, st, `UPDATE queues SET rate_limit = NULL, rate_period_ms = NULL, max_running = 12 WHERE name = 'default'`)
		before = pathsOf(st)
		got = claim(8, 2)
		if server {
			require.Equal(t, []string{"lock-queues", "count", "mark"}, got)
		} else {
			require.Equal(t, []string{"count", "mark"}, got)
		}
		require.Equal(t, limitPaths{before.first + 1, before.late, before.fellBack}, pathsOf(st))

		// A definition's max_running is checked late as a queue's is:
		// definitions locked before queues.
		sqlExec(t, st, `UPDATE jobs SET status = 'succeeded'`)
		sqlExec(t, st, `UPDATE queues SET max_running = 1000000 WHERE name = 'default'`)
		sqlExec(t, st, `UPDATE job_definitions SET max_running = 1000 WHERE id = ?`, def.ID)
		before = pathsOf(st)
		got = claim(5, 5)
		if server {
			require.Equal(t, []string{"mark", "lock-definitions", "lock-queues", "count"}, got)
			require.Equal(t, limitPaths{before.first, before.late + 1, before.fellBack}, pathsOf(st))
		} else {
			require.Equal(t, []string{"count", "mark"}, got, "one total for both limits")
			require.Equal(t, limitPaths{before.first + 1, before.late, before.fellBack}, pathsOf(st))
		}
	})
}

// A late claim whose count finds a limit passed (the last count was low:
// the jobs that fill the limit became active after it) rolls back and
// claims again with its locks first, which admits exactly up to the
// limit and leaves the rest pending, untouched. Both a queue's and a
// definition's max_running.
func TestLateLimitFallsBack(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		server := st.Dialect() != store.SQLite
		sqlExec(t, st, `INSERT INTO queues (name, max_running) VALUES ('q', 10)`)
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "q"})
		sqlExec(t, st, `UPDATE job_definitions SET queue = 'q' WHERE id = ?`, def.ID)
		// The last count saw none active: a fresh store.
		for range 9 {
			testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Status: models.JobRunning, NodeID: "x"})
		}
		jobs := limitJobs(t, st, def.ID, 5)
		before := pathsOf(st)
		res, ids := claimIDs(t, st, "me", 5)
		require.Equal(t, jobs[:1], ids, "9 running, a limit of 10")
		require.Len(t, res.Limited, 4)
		require.Equal(t, chimedb.LimitQueue, res.Limited[0].Kind)
		if server {
			require.Equal(t, limitPaths{before.first + 1, before.late, before.fellBack + 1}, pathsOf(st), "late, fell back, locks first")
		} else {
			require.Equal(t, limitPaths{before.first + 1, before.late, before.fellBack}, pathsOf(st))
		}
		for _, id := range jobs[1:] {
			j := testdb.GetJob(t, st, id)
			require.Equal(t, models.JobPending, j.Status, "rolled back")
			require.Empty(t, j.NodeID)
			require.Nil(t, j.QueuedAt)
		}

		// A definition: the last count says 1 active, then 2 jobs of a
		// definition limited to 3 start behind it.
		sqlExec(t, st, `UPDATE jobs SET status = 'succeeded' WHERE status IN ('queued', 'running')`)
		_, ids = claimIDs(t, st, "me", 1)
		require.Len(t, ids, 1)
		sqlExec(t, st, `UPDATE jobs SET status = 'succeeded'`)
		three := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "three"})
		sqlExec(t, st, `UPDATE job_definitions SET max_running = 3 WHERE id = ?`, three.ID)
		for range 2 {
			testdb.Job(t, st, &testdb.JobOpts{DefinitionID: three.ID, Status: models.JobRunning, NodeID: "x"})
		}
		mine := limitJobs(t, st, three.ID, 2)
		before = pathsOf(st)
		res, ids = claimIDs(t, st, "me", 2)
		require.Equal(t, mine[:1], ids, "2 running, a limit of 3")
		require.Len(t, res.Limited, 1)
		require.Equal(t, chimedb.LimitDefinition, res.Limited[0].Kind)
		if server {
			require.Equal(t, limitPaths{before.first + 1, before.late, before.fellBack + 1}, pathsOf(st))
		}
		require.Equal(t, models.JobPending, testdb.GetJob(t, st, mine[1]).Status)
	})
}

// lockWaitersSQL counts the other sessions of this test's database that
// wait for a row lock of queues.
var lockWaitersSQL = map[store.Dialect]string{
	store.MySQL: `SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE()
		AND ID <> CONNECTION_ID() AND COMMAND = 'Query' AND INFO LIKE '%FROM queues%FOR UPDATE%'`,
	store.Postgres: `SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database()
		AND wait_event_type = 'Lock' AND query LIKE '%FROM queues%'`,
}

// Two late claims of one queue, each of which alone fits its limit, mark
// their rows at once and then wait together for the queue's row (held
// here). The first to take it commits; the second's count then sees the
// first's jobs with its own, finds the limit passed, and claims again
// with its locks first: 5 jobs active of a limit of 5, never 8.
func TestLateClaimsRacingHoldTheLimit(t *testing.T) {
	t.Parallel()
	testdb.ForEachServer(t, func(t *testing.T, st *store.Store) {
		ctx := t.Context()
		sqlExec(t, st, `INSERT INTO queues (name, max_running) VALUES ('q', 5)`)
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "q"})
		sqlExec(t, st, `UPDATE job_definitions SET queue = 'q' WHERE id = ?`, def.ID)
		limitJobs(t, st, def.ID, 10)

		hold := st.DB().WithContext(ctx).Begin()
		require.NoError(t, hold.Error)
		defer hold.Rollback()
		require.NoError(t, hold.Exec(`SELECT name FROM queues WHERE name = 'q' FOR UPDATE`).Error)
		before := pathsOf(st)
		type claimed struct {
			n   int
			err error
		}
		out := make(chan claimed, 2)
		for _, node := range []string{"a", "b"} {
			go func() {
				res, err := st.ClaimJobs(ctx, &chimedb.ClaimParams{NodeID: node, Now: time.Now(), Limit: 4})
				if err != nil {
					out <- claimed{err: err}
					return
				}
				out <- claimed{n: len(res.Jobs)}
			}()
		}
		// The lock waits are the server's: no signal of chime's says them,
		// so the server's own view is polled.
		require.Eventually(t, func() bool {
			var waiting int
			if err := st.DB().Raw(lockWaitersSQL[st.Dialect()]).Scan(&waiting).Error; err != nil {
				t.Error(err)
				return true
			}
			return waiting >= 2
		}, 30*time.Second, 10*time.Millisecond, "the two claims never waited for the queue's row together")
		var marked int64
		require.NoError(t, hold.Raw(`SELECT COUNT(*) FROM jobs WHERE status = 'pending'`).Scan(&marked).Error)
		require.Equal(t, int64(10), marked, "the marks are not committed while the claims wait")
		require.NoError(t, hold.Rollback().Error)

		var got []int
		for range 2 {
			c := <-out
			require.NoError(t, c.err)
			got = append(got, c.n)
		}
		slices.Sort(got)
		require.Equal(t, []int{1, 4}, got, "the first 4, the second what is left of the limit")
		var active int64
		require.NoError(t, st.DB().Raw(`SELECT COUNT(*) FROM jobs WHERE status IN ?`,
			[]models.JobStatus{models.JobQueued, models.JobRunning, models.JobPaused}).Scan(&active).Error)
		require.Equal(t, int64(5), active)
		require.Equal(t, limitPaths{before.first + 1, before.late + 1, before.fellBack + 1}, pathsOf(st))
	})
}

// Claimers racing on one database, most of their claims checked late,
// never pass a queue's or a definition's max_running: a sampler counting
// active jobs while they claim and finish never sees more than the
// limits, and some claims went late and some fell back.
func TestLateLimitsHoldUnderConcurrentClaims(t *testing.T) {
	t.Parallel()
	testdb.ForEachServer(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		sqlExec(t, st, `INSERT INTO queues (name, max_running) VALUES ('q', 12)`)
		a := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "a"})
		b := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "b"})
		sqlExec(t, st, `UPDATE job_definitions SET queue = 'q'`)
		sqlExec(t, st, `UPDATE job_definitions SET max_running = 8 WHERE id = ?`, b.ID)
		const n = 400
		now := store.DBTime(time.Now().Add(-time.Minute))
		jobs := make([]models.Job, n)
		for i := range jobs {
			d := a.ID
			if i%2 == 0 {
				d = b.ID
			}
			jobs[i] = models.Job{JobDefinitionID: d, ScheduledAt: now, RunAt: now, Status: models.JobPending}
		}
		require.NoError(t, st.DB().CreateInBatches(&jobs, 200).Error)
		before := pathsOf(st)

		var done, maxQ, maxB atomic.Int64
		stop := make(chan struct{})
		var sampler sync.WaitGroup
		sampler.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				var c struct{ Q, B int64 }
				_ = st.DB().Raw(`SELECT COUNT(*) AS q, COALESCE(SUM(CASE WHEN job_definition_id = ? THEN 1 ELSE 0 END), 0) AS b
					FROM jobs WHERE status IN ('queued', 'running', 'paused')`, b.ID).Scan(&c).Error
				if c.Q > maxQ.Load() {
					maxQ.Store(c.Q)
				}
				if c.B > maxB.Load() {
					maxB.Store(c.B)
				}
			}
		})
		var wg sync.WaitGroup
		for w := range 6 {
			node := fmt.Sprintf("n%d", w)
			wg.Go(func() {
				for done.Load() < n {
					res, err := st.ClaimJobs(ctx, &chimedb.ClaimParams{NodeID: node, Now: time.Now(), Limit: 4})
					if err != nil {
						t.Error(err)
						return
					}
					for _, j := range res.Jobs {
						if err := st.DB().Exec(`UPDATE jobs SET status = 'succeeded' WHERE id = ?`, j.ID).Error; err != nil {
							t.Error(err)
							return
						}
						done.Add(1)
					}
				}
			})
		}
		wg.Wait()
		close(stop)
		sampler.Wait()
		p := pathsOf(st)
		t.Logf("most active seen: queue %d (limit 12), definition %d (limit 8); claims locks first %d, late %d, fell back %d",
			maxQ.Load(), maxB.Load(), p.first-before.first, p.late-before.late, p.fellBack-before.fellBack)
		require.LessOrEqual(t, maxQ.Load(), int64(12))
		require.LessOrEqual(t, maxB.Load(), int64(8))
		require.Equal(t, int64(n), done.Load())
		require.Greater(t, p.late, before.late, "some claims went late")
	})
}
