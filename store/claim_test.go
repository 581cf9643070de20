package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// Claimers racing on one table each get disjoint rows, every due row is
// claimed exactly once, and rows not yet due stay pending.
func TestClaimJobsConcurrentClaimersAreDisjoint(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		db := st.DB()
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{MaxAttempts: 2})
		now := store.DBTime(time.Now())
		jobs := make([]models.Job, 200)
		for i := range jobs {
			jobs[i] = models.Job{JobDefinitionID: def.ID, ScheduledAt: now, RunAt: now.Add(-time.Duration(i) * time.Millisecond), Status: models.JobPending}
		}
		require.NoError(t, db.Create(&jobs).Error)
		later := models.Job{JobDefinitionID: def.ID, ScheduledAt: now, RunAt: now.Add(time.Hour), Status: models.JobPending}
		require.NoError(t, db.Create(&later).Error)

		var mu sync.Mutex
		seen := map[int64]string{}
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			node := string(rune('a' + w))
			wg.Go(func() {
				for {
					res, err := st.ClaimJobs(ctx, &chimedb.ClaimParams{NodeID: node, Now: time.Now(), Limit: 7})
					if err != nil {
						t.Error(err)
						return
					}
					if res.Selected == 0 {
						return
					}
					mu.Lock()
					for _, j := range res.Jobs {
						if prev, dup := seen[j.ID]; dup {
							t.Errorf("job %d claimed by %s and %s", j.ID, prev, node)
						}
						seen[j.ID] = node
						require.Equal(t, def.ID, j.Definition.ID)
						require.Equal(t, 2, j.EffectiveMaxAttempts())
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		require.Len(t, seen, len(jobs))
		var pending int64
		require.NoError(t, db.Model(&models.Job{}).Where("status = 'pending'").Count(&pending).Error)
		require.EqualValues(t, 1, pending)

		plan, err := st.ExplainClaim(ctx, time.Now(), 10)
		require.NoError(t, err)
		// idx_jobs_claim_order is the only index of jobs on status since
		// 00013; TestClaimUsesPriorityIndex pins that it also gives the order.
		require.Contains(t, plan, "idx_jobs_claim_order")
	})
}

// Outcomes are guarded: a row that is no longer running on the node is
// not overwritten. On PostgreSQL a batch with nothing but outcomes is
// written by its one UPDATE alone, whose RETURNING says which rows the
// guard let through.
func TestCompleteJobsIsGuarded(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		db := st.DB()
		now := store.DBTime(time.Now())
		mk := func(status models.JobStatus, node string) int64 {
			j := models.Job{JobDefinitionID: 1, ScheduledAt: now, RunAt: now, Status: status, NodeID: node, Attempt: 1}
			require.NoError(t, db.Create(&j).Error)
			return j.ID
		}
		ok1, ok2 := mk(models.JobRunning, "n"), mk(models.JobPaused, "n")
		canceled, other := mk(models.JobCanceled, "n"), mk(models.JobRunning, "m")
		res := "out"
		msg := "boom"
		alone0, _ := st.CompletionPaths()
		applied, err := st.CompleteJobs(ctx, &chimedb.CompleteJobsParams{NodeID: "n", Outcomes: []chimedb.JobOutcome{
			{ID: ok1, Status: models.JobSucceeded, FinishedAt: now, Result: &res},
			{ID: ok2, Status: models.JobPending, RunAt: now.Add(time.Minute), Error: &msg},
			{ID: canceled, Status: models.JobSucceeded, FinishedAt: now},
			{ID: other, Status: models.JobFailed, FinishedAt: now},
		}})
		require.NoError(t, err)
		require.ElementsMatch(t, []int64{ok1, ok2}, applied)
		alone, _ := st.CompletionPaths()
		require.Equal(t, st.Dialect() == store.Postgres, alone == alone0+1)
		var j models.Job
		require.NoError(t, db.Take(&j, ok1).Error)
		require.Equal(t, models.JobSucceeded, j.Status)
		require.Equal(t, "out", *j.Result)
		require.Nil(t, j.Error)
		require.Equal(t, now, j.FinishedAt.UTC())
		j = models.Job{}
		require.NoError(t, db.Take(&j, ok2).Error)
		require.Equal(t, models.JobPending, j.Status)
		require.Empty(t, j.NodeID)
		require.Nil(t, j.FinishedAt)
		require.Equal(t, now.Add(time.Minute), j.RunAt.UTC())
		require.Equal(t, "boom", *j.Error)
		j = models.Job{}
		require.NoError(t, db.Take(&j, canceled).Error)
		require.Equal(t, models.JobCanceled, j.Status)
		j = models.Job{}
		require.NoError(t, db.Take(&j, other).Error)
		require.Equal(t, models.JobRunning, j.Status)
	})
}

// Starts are guarded: only rows still queued on the node, with the attempt
// count their claim read and no stop request, move to running; the result
// says which did, with their new attempt.
func TestStartJobsIsGuarded(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		db := st.DB()
		now := store.DBTime(time.Now())
		mk := func(status models.JobStatus, node string, attempt int, control models.JobControl) int64 {
			j := models.Job{JobDefinitionID: 1, ScheduledAt: now, RunAt: now, Status: status, NodeID: node, Attempt: attempt, Control: control}
			require.NoError(t, db.Create(&j).Error)
			return j.ID
		}
		fresh, retry := mk(models.JobQueued, "n", 0, ""), mk(models.JobQueued, "n", 2, "")
		otherNode, canceled := mk(models.JobQueued, "m", 0, ""), mk(models.JobCanceled, "n", 0, "")
		stopAsked, reclaimed := mk(models.JobQueued, "n", 0, models.ControlStop), mk(models.JobQueued, "n", 1, "")

		// Every row matches: no read needed.
		started, err := st.StartJobs(ctx, &chimedb.StartJobsParams{NodeID: "n", Now: now,
			Jobs: []chimedb.StartJob{{ID: fresh, Attempt: 0}, {ID: retry, Attempt: 2}}})
		require.NoError(t, err)
		require.Equal(t, map[int64]int{fresh: 1, retry: 3}, started)

		// Some do not: the job of another node, a canceled one, one asked to
		// stop, one whose attempt moved on since its claim, and a duplicate.
		later := now.Add(time.Second)
		started, err = st.StartJobs(ctx, &chimedb.StartJobsParams{NodeID: "n", Now: later,
			Jobs: []chimedb.StartJob{{ID: fresh, Attempt: 0}, {ID: otherNode, Attempt: 0}, {ID: canceled, Attempt: 0},
				{ID: stopAsked, Attempt: 0}, {ID: reclaimed, Attempt: 0}}})
		require.NoError(t, err)
		require.Empty(t, started)

		require.NoError(t, db.Exec("UPDATE jobs SET status = 'queued' WHERE id = ?", fresh).Error)
		started, err = st.StartJobs(ctx, &chimedb.StartJobsParams{NodeID: "n", Now: later.Add(time.Second),
			Jobs: []chimedb.StartJob{{ID: fresh, Attempt: 1}, {ID: fresh, Attempt: 1}, {ID: reclaimed, Attempt: 0}}})
		require.NoError(t, err)
		require.Equal(t, map[int64]int{fresh: 2}, started)

		var j models.Job
		require.NoError(t, db.Take(&j, fresh).Error)
		require.Equal(t, models.JobRunning, j.Status)
		require.Equal(t, 2, j.Attempt)
		for _, id := range []int64{otherNode, stopAsked, reclaimed} {
			j = models.Job{}
			require.NoError(t, db.Take(&j, id).Error)
			require.Equal(t, models.JobQueued, j.Status, "job %d", id)
		}
	})
}

// A forbid schedule with an active job holds its due rows back even when
// they come first, and the claim fills up with the rows after them.
func TestClaimJobsSkipsBusyForbidSchedules(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		db := st.DB()
		def := testdb.Definition(t, st, nil)
		require.NoError(t, db.Exec(`INSERT INTO schedules (name, job_definition_id, schedule_type, interval_seconds, concurrency)
			VALUES ('excl', ?, 'interval', 1, 'forbid'), ('free', ?, 'interval', 1, 'allow')`, def.ID, def.ID).Error)
		var excl, free int64
		require.NoError(t, db.Raw("SELECT id FROM schedules WHERE name = 'excl'").Scan(&excl).Error)
		require.NoError(t, db.Raw("SELECT id FROM schedules WHERE name = 'free'").Scan(&free).Error)
		now := store.DBTime(time.Now())
		mk := func(sched *int64, status models.JobStatus, age time.Duration) int64 {
			j := models.Job{ScheduleID: sched, JobDefinitionID: def.ID, ScheduledAt: now.Add(-age), RunAt: now.Add(-age), Status: status}
			require.NoError(t, db.Create(&j).Error)
			return j.ID
		}
		mk(&excl, models.JobRunning, time.Hour)
		mk(&excl, models.JobPending, 3*time.Minute) // due first, but its schedule is busy
		mk(&excl, models.JobPending, 2*time.Minute)
		a := mk(&free, models.JobPending, time.Minute)
		b := mk(nil, models.JobPending, time.Second)

		res, err := st.ClaimJobs(ctx, &chimedb.ClaimParams{NodeID: "n", Now: time.Now(), Limit: 2})
		require.NoError(t, err)
		var got []int64
		for _, j := range res.Jobs {
			got = append(got, j.ID)
		}
		require.Equal(t, []int64{a, b}, got)
		require.Contains(t, res.Blocked, excl)
		require.Equal(t, "free", res.Jobs[0].ScheduleName)
	})
}

// Two nodes claiming at the same instant must not each start one of the two
// due jobs of a forbid schedule: the schedule row is the lock between them.
func TestConcurrentClaimsRespectForbid(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		db := st.DB()
		def := testdb.Definition(t, st, nil)
		excl := insertForbidSchedule(t, db, def.ID)
		for round := range 10 {
			require.NoError(t, db.Exec("DELETE FROM jobs").Error)
			now := store.DBTime(time.Now())
			for i := range 2 {
				at := now.Add(-time.Duration(i+1) * time.Second)
				require.NoError(t, db.Create(&models.Job{ScheduleID: &excl, JobDefinitionID: def.ID, ScheduledAt: at, RunAt: at, Status: models.JobPending}).Error)
			}
			var wg sync.WaitGroup
			claimed := make([]int, 2)
			for n := range 2 {
				wg.Go(func() {
					res, err := st.ClaimJobs(ctx, &chimedb.ClaimParams{NodeID: fmt.Sprint("n", n), Now: time.Now(), Limit: 4})
					assert.NoError(t, err)
					if res != nil {
						claimed[n] = len(res.Jobs)
					}
				})
			}
			wg.Wait()
			require.Equal(t, 1, claimed[0]+claimed[1], "round %d: one job of a forbid schedule at a time", round)
		}
	})
}

// insertForbidSchedule adds the schedule "excl", concurrency = forbid, of
// definition def, as an admin's SQL would, and returns its id.
func insertForbidSchedule(t *testing.T, db *gorm.DB, def int64) int64 {
	t.Helper()
	require.NoError(t, db.Exec(`INSERT INTO schedules (name, job_definition_id, schedule_type, interval_seconds, concurrency)
		VALUES ('excl', ?, 'interval', 1, 'forbid')`, def).Error)
	var id int64
	require.NoError(t, db.Raw("SELECT id FROM schedules WHERE name = 'excl'").Scan(&id).Error)
	return id
}
