package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// limitJobs inserts n due ad hoc jobs of def, in claim order.
func limitJobs(t *testing.T, st *store.Store, def int64, n int) []int64 {
	t.Helper()
	ids := make([]int64, n)
	base := time.Now().Add(-time.Minute)
	for i := range ids {
		ids[i] = testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def, RunAt: base.Add(time.Duration(i) * time.Millisecond)}).ID
	}
	return ids
}

func claimIDs(t *testing.T, st *store.Store, node string, limit int) (*chimedb.ClaimResult, []int64) {
	t.Helper()
	res, err := st.ClaimJobs(context.Background(), &chimedb.ClaimParams{NodeID: node, Now: time.Now(), Limit: limit})
	require.NoError(t, err)
	var ids []int64
	for _, j := range res.Jobs {
		ids = append(ids, j.ID)
	}
	return res, ids
}

func sqlExec(t *testing.T, st *store.Store, sql string, args ...any) {
	t.Helper()
	require.NoError(t, st.DB().Exec(sql, args...).Error)
}

// A queue's max_running bounds its active jobs; the jobs beyond wait,
// pending, with the reason; a job leaving active frees its slot; and a
// full queue's backlog ahead in claim order does not keep the claim from
// another queue's jobs behind it.
func TestQueueMaxRunning(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		sqlExec(t, st, `INSERT INTO queues (name, max_running) VALUES ('erp', 2)`)
		erp := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "export"})
		sqlExec(t, st, `UPDATE job_definitions SET queue = 'erp' WHERE id = ?`, erp.ID)
		other := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "other"})
		erpJobs := limitJobs(t, st, erp.ID, 20)
		otherJob := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: other.ID}).ID

		res, ids := claimIDs(t, st, "a", 5)
		require.Equal(t, []int64{erpJobs[0], erpJobs[1], otherJob}, ids)
		require.NotEmpty(t, res.Limited)
		require.Equal(t, chimedb.LimitQueue, res.Limited[0].Kind)
		require.Contains(t, res.Limited[0].Reason, `queue "erp" has max_running = 2`)
		require.Equal(t, models.JobPending, testdb.GetJob(t, st, erpJobs[2]).Status)

		_, ids = claimIDs(t, st, "b", 5)
		require.Empty(t, ids, "the queue is full")

		// A job that leaves active (finished, or recovered by the
		// reconciler, back to pending) frees its slot.
		sqlExec(t, st, `UPDATE jobs SET status = 'succeeded' WHERE id = ?`, erpJobs[0])
		_, ids = claimIDs(t, st, "b", 5)
		require.Equal(t, []int64{erpJobs[2]}, ids)
		sqlExec(t, st, `UPDATE jobs SET status = 'pending', node_id = '' WHERE id = ?`, erpJobs[1])
		_, ids = claimIDs(t, st, "b", 5)
		require.Equal(t, []int64{erpJobs[1]}, ids, "the recovered job goes first again, by claim order")
	})
}

// A definition's max_running holds across queues and nodes; its
// priorities still decide which job goes first.
func TestDefinitionMaxRunning(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "one-at-a-time"})
		sqlExec(t, st, `UPDATE job_definitions SET max_running = 1 WHERE id = ?`, def.ID)
		low := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Priority: 1, RunAt: time.Now().Add(-2 * time.Second)}).ID
		high := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Priority: 9, RunAt: time.Now().Add(-time.Second)}).ID
		res, ids := claimIDs(t, st, "a", 10)
		require.Equal(t, []int64{high}, ids, "the higher priority first, within the limit")
		require.Len(t, res.Limited, 1)
		require.Equal(t, chimedb.LimitDefinition, res.Limited[0].Kind)
		require.Equal(t, low, res.Limited[0].ID)
		require.Equal(t, 1, res.Selected, "a held row is no backlog to claim at once")
		_, ids = claimIDs(t, st, "b", 10)
		require.Empty(t, ids)
		sqlExec(t, st, `UPDATE jobs SET status = 'failed' WHERE id = ?`, high)
		_, ids = claimIDs(t, st, "b", 10)
		require.Equal(t, []int64{low}, ids)
	})
}

// A paused queue, a queue that does not exist and rows with values out of
// bounds (written by plain SQL) hold jobs pending with the reason; none is
// lost, and fixing the row releases them.
func TestQueueBadRowsHoldJobs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, setup, reason, fix string
	}{
		{"paused", `UPDATE queues SET paused = TRUE WHERE name = 'q'`, `queue "q" is paused`, `UPDATE queues SET paused = FALSE WHERE name = 'q'`},
		{"missing", `DELETE FROM queues WHERE name = 'q'`, `queue "q" does not exist`, `INSERT INTO queues (name) VALUES ('q')`},
		{"zero", `UPDATE queues SET max_running = 0 WHERE name = 'q'`, "max_running 0 is out of 1..1000000", `UPDATE queues SET max_running = NULL WHERE name = 'q'`},
		{"negative", `UPDATE queues SET max_running = -3 WHERE name = 'q'`, "max_running -3 is out of", `UPDATE queues SET max_running = 5 WHERE name = 'q'`},
		{"absurd rate", `UPDATE queues SET rate_limit = 1000000, rate_period_ms = 1 WHERE name = 'q'`, "more than one start per microsecond", `UPDATE queues SET rate_limit = NULL, rate_period_ms = NULL WHERE name = 'q'`},
		{"half a rate", `UPDATE queues SET rate_limit = 5 WHERE name = 'q'`, "must be set together", `UPDATE queues SET rate_limit = NULL WHERE name = 'q'`},
		{"definition", `UPDATE job_definitions SET max_running = 0`, "definition", `UPDATE job_definitions SET max_running = 2`},
	}
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		for _, c := range cases {
			sqlExec(t, st, `DELETE FROM jobs`)
			sqlExec(t, st, `DELETE FROM job_definitions`)
			sqlExec(t, st, `DELETE FROM queues WHERE name = 'q'`)
			sqlExec(t, st, `INSERT INTO queues (name) VALUES ('q')`)
			def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "d-" + strings.ReplaceAll(c.name, " ", "-")})
			sqlExec(t, st, `UPDATE job_definitions SET queue = 'q' WHERE id = ?`, def.ID)
			job := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID}).ID
			sqlExec(t, st, c.setup)
			res, ids := claimIDs(t, st, "a", 5)
			require.Empty(t, ids, c.name)
			require.Len(t, res.Limited, 1, c.name)
			require.Contains(t, res.Limited[0].Reason, c.reason, c.name)
			require.Equal(t, models.JobPending, testdb.GetJob(t, st, job).Status, c.name)
			sqlExec(t, st, c.fix)
			_, ids = claimIDs(t, st, "a", 5)
			require.Equal(t, []int64{job}, ids, c.name)
		}
	})
}

// SQLite keeps text in an INTEGER column: the queue is invalid, its jobs
// wait, and the other queues' jobs run.
func TestQueueUnreadableValue(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.SQLite)
	sqlExec(t, st, `INSERT INTO queues (name, max_running) VALUES ('q', 'three')`)
	def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "in-q"})
	sqlExec(t, st, `UPDATE job_definitions SET queue = 'q' WHERE id = ?`, def.ID)
	free := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "free"})
	limitJobs(t, st, def.ID, 3)
	ok := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: free.ID}).ID
	res, ids := claimIDs(t, st, "a", 10)
	require.Equal(t, []int64{ok}, ids)
	require.Len(t, res.Limited, 3)
	require.Contains(t, res.Limited[0].Reason, `queues.max_running holds "three", which is not an integer`)
}

// A schedule's queue and an ad hoc job's queue override the definition's.
func TestQueueOverrides(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		sqlExec(t, st, `INSERT INTO queues (name, paused) VALUES ('stopped', TRUE)`)
		def := testdb.Definition(t, st, nil)
		adhoc := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID}).ID
		sqlExec(t, st, `UPDATE jobs SET queue = 'stopped' WHERE id = ?`, adhoc)
		sqlExec(t, st, `INSERT INTO schedules (name, job_definition_id, schedule_type, interval_seconds, queue) VALUES ('s', ?, 'interval', 60, 'stopped')`, def.ID)
		var sid int64
		require.NoError(t, st.DB().Raw(`SELECT id FROM schedules WHERE name = 's'`).Scan(&sid).Error)
		at := store.DBTime(time.Now().Add(-time.Second))
		fired := models.Job{ScheduleID: &sid, JobDefinitionID: def.ID, ScheduledAt: at, RunAt: at, Status: models.JobPending}
		require.NoError(t, st.DB().Create(&fired).Error)
		plain := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID}).ID

		res, ids := claimIDs(t, st, "a", 10)
		require.Equal(t, []int64{plain}, ids)
		require.Len(t, res.Limited, 2)
		sqlExec(t, st, `UPDATE queues SET paused = FALSE WHERE name = 'stopped'`)
		_, ids = claimIDs(t, st, "a", 10)
		require.ElementsMatch(t, []int64{adhoc, fired.ID}, ids)
	})
}

// A rate limit spaces starts evenly by the database's clock: of a backlog
// only one starts per spacing, the claim says when the next may, and the
// limiter's state is in the row.
func TestQueueRateLimit(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		sqlExec(t, st, `INSERT INTO queues (name, rate_limit, rate_period_ms) VALUES ('slow', 2, 2000)`)
		def := testdb.Definition(t, st, nil)
		sqlExec(t, st, `UPDATE job_definitions SET queue = 'slow' WHERE id = ?`, def.ID)
		jobs := limitJobs(t, st, def.ID, 5)
		res, ids := claimIDs(t, st, "a", 10)
		require.Equal(t, []int64{jobs[0]}, ids)
		require.Len(t, res.Limited, 4)
		require.Equal(t, chimedb.LimitRate, res.Limited[0].Kind)
		require.Greater(t, res.RetryIn, 500*time.Millisecond)
		require.LessOrEqual(t, res.RetryIn, time.Second)
		_, ids = claimIDs(t, st, "b", 10)
		require.Empty(t, ids, "another node is held to the same rate")
		var tat *int64
		require.NoError(t, st.DB().Raw(`SELECT rate_tat_us FROM queues WHERE name = 'slow'`).Scan(&tat).Error)
		require.NotNil(t, tat)
		// Reset the limiter as an admin may: the next job starts.
		sqlExec(t, st, `UPDATE queues SET rate_tat_us = NULL WHERE name = 'slow'`)
		_, ids = claimIDs(t, st, "b", 10)
		require.Equal(t, []int64{jobs[1]}, ids)
	})
}

// A claim comes a little after the limiter's time: that lateness is
// given back to the next start, up to half a spacing (at most 250 ms), so
// the rate holds on average; strict GCRA dropped it, and under load the
// queue ran 8 to 47 % under its rate. A long idle queue gets no more than
// that credit: its next start is still most of a spacing away.
func TestQueueRateLimitCreditsLateness(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		// One start per second: a credit of at most 250 ms.
		sqlExec(t, st, `INSERT INTO queues (name, rate_limit, rate_period_ms) VALUES ('paced', 60, 60000)`)
		def := testdb.Definition(t, st, nil)
		sqlExec(t, st, `UPDATE job_definitions SET queue = 'paced' WHERE id = ?`, def.ID)
		limitJobs(t, st, def.ID, 3)
		setTat := func(ago time.Duration) {
			now, err := st.DBNow(ctx)
			require.NoError(t, err)
			sqlExec(t, st, `UPDATE queues SET rate_tat_us = ? WHERE name = 'paced'`, now.Add(-ago).UnixMicro())
		}

		setTat(200 * time.Millisecond) // the claim is 200 ms late
		res, ids := claimIDs(t, st, "a", 10)
		require.Len(t, ids, 1)
		require.Less(t, res.RetryIn, 850*time.Millisecond, "the next start should come 200 ms sooner than a spacing")
		require.Greater(t, res.RetryIn, 500*time.Millisecond)

		setTat(10 * time.Minute) // idle for long: no burst
		res, ids = claimIDs(t, st, "a", 10)
		require.Len(t, ids, 1)
		require.Greater(t, res.RetryIn, 600*time.Millisecond, "an idle queue earns no more than the credit")
		require.LessOrEqual(t, res.RetryIn, 750*time.Millisecond)

		// 200 a second: a spacing of 5 ms, shorter than a claim takes. The
		// credit's 20 ms floor lets one claim start the four a claim's
		// latency would otherwise lose (one per claim ran 18 % short), and
		// no more: an idle queue still gets no burst.
		sqlExec(t, st, `UPDATE queues SET rate_limit = 200, rate_period_ms = 1000 WHERE name = 'paced'`)
		limitJobs(t, st, def.ID, 20)
		setTat(10 * time.Minute)
		_, ids = claimIDs(t, st, "a", 20)
		require.GreaterOrEqual(t, len(ids), 4, "a fast rate's claim should make up 20 ms of lateness")
		require.LessOrEqual(t, len(ids), 6, "no more than 20 ms of starts at once")
	})
}

// Claimers racing on one database never pass a queue's or a definition's
// max_running: a sampler counting active jobs while they claim and finish
// never sees more than the limits.
func TestLimitsHoldUnderConcurrentClaims(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		sqlExec(t, st, `INSERT INTO queues (name, max_running) VALUES ('q3', 3)`)
		one := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "one"})
		many := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "many"})
		sqlExec(t, st, `UPDATE job_definitions SET queue = 'q3'`)
		sqlExec(t, st, `UPDATE job_definitions SET max_running = 1 WHERE id = ?`, one.ID)
		n := 120
		if st.Dialect() == store.SQLite {
			n = 40 // one writer: the claimers mostly wait for each other
		}
		now := store.DBTime(time.Now().Add(-time.Minute))
		jobs := make([]models.Job, n)
		for i := range jobs {
			d := many.ID
			if i%3 == 0 {
				d = one.ID
			}
			jobs[i] = models.Job{JobDefinitionID: d, ScheduledAt: now, RunAt: now, Status: models.JobPending}
		}
		require.NoError(t, st.DB().Create(&jobs).Error)

		var done atomic.Int64
		var maxQ, maxOne atomic.Int64
		stop := make(chan struct{})
		var sampler sync.WaitGroup
		sampler.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				var q, o int64
				_ = st.DB().Raw(`SELECT COUNT(*) FROM jobs WHERE status IN ('queued', 'running', 'paused')`).Scan(&q).Error
				_ = st.DB().Raw(`SELECT COUNT(*) FROM jobs WHERE status IN ('queued', 'running', 'paused') AND job_definition_id = ?`, one.ID).Scan(&o).Error
				if q > maxQ.Load() {
					maxQ.Store(q)
				}
				if o > maxOne.Load() {
					maxOne.Store(o)
				}
			}
		})
		var wg sync.WaitGroup
		for w := range 4 {
			node := fmt.Sprintf("n%d", w)
			wg.Go(func() {
				for done.Load() < int64(n) {
					res, err := st.ClaimJobs(ctx, &chimedb.ClaimParams{NodeID: node, Now: time.Now(), Limit: 3})
					if err != nil {
						t.Error(err)
						return
					}
					for _, j := range res.Jobs {
						time.Sleep(time.Millisecond)
						if err := st.InTx(ctx, func(tx *gorm.DB) error {
							return tx.Exec(`UPDATE jobs SET status = 'succeeded' WHERE id = ?`, j.ID).Error
						}); err != nil {
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
		t.Logf("most active seen: queue %d (limit 3), definition %d (limit 1)", maxQ.Load(), maxOne.Load())
		require.LessOrEqual(t, maxQ.Load(), int64(3))
		require.LessOrEqual(t, maxOne.Load(), int64(1))
		require.Equal(t, int64(n), done.Load())
	})
}

// A limited claim counts its queues' active jobs from the status prefix of
// idx_jobs_claim_order, whatever the statistics say. On MariaDB, with
// statistics taken while jobs was empty (as InnoDB's background
// recalculation leaves them for a while after a burst), the count's join
// was driven from job_definitions into idx_jobs_definition: every job of
// the definition, pending ones included, read in every claim, and a queue
// limit that never binds cut the drain of 20,000 jobs to a quarter.
func TestActiveQueueCountUsesStatusIndex(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.MySQL)
	sqlExec(t, st, `ALTER TABLE jobs STATS_AUTO_RECALC = 0`)
	sqlExec(t, st, `ANALYZE TABLE jobs`)
	def := testdb.Definition(t, st, nil)
	now := store.DBTime(time.Now().Add(-time.Minute))
	jobs := make([]models.Job, 5000)
	for i := range jobs {
		jobs[i] = models.Job{JobDefinitionID: def.ID, ScheduledAt: now, RunAt: now, Status: models.JobPending}
	}
	require.NoError(t, st.DB().CreateInBatches(&jobs, 1000).Error)
	plan, err := st.ExplainCountActiveQueues(context.Background())
	require.NoError(t, err)
	require.Contains(t, plan, `"key": "idx_jobs_claim_order"`, "the count should read active jobs by status:\n%s", plan)
	require.NotContains(t, plan, `"key": "idx_jobs_definition"`, plan)
	plan, err = st.ExplainCountActiveJobs(context.Background())
	require.NoError(t, err)
	require.Contains(t, plan, `"key": "idx_jobs_claim_order"`, "the total should read active jobs by status:\n%s", plan)
}
