package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testdb"
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
		def := models.JobDefinition{Name: "d", TaskType: "sleep", MaxAttempts: 2, NotifyOn: models.NotifyNever}
		require.NoError(t, db.Create(&def).Error)
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
					res, err := st.ClaimJobs(ctx, &store.ClaimParams{NodeID: node, Now: time.Now(), Limit: 7})
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
		require.Contains(t, plan, "idx_jobs_claim")
	})
}

// Outcomes are guarded: a row that is no longer running on the node is
// not overwritten.
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
		applied, err := st.CompleteJobs(ctx, &store.CompleteJobsParams{NodeID: "n", Outcomes: []store.JobOutcome{
			{ID: ok1, Status: models.JobSucceeded, FinishedAt: now, Result: &res},
			{ID: ok2, Status: models.JobPending, RunAt: now.Add(time.Minute), Error: &msg},
			{ID: canceled, Status: models.JobSucceeded, FinishedAt: now},
			{ID: other, Status: models.JobFailed, FinishedAt: now},
		}})
		require.NoError(t, err)
		require.ElementsMatch(t, []int64{ok1, ok2}, applied)
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
