package console

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// The counts by status and per minute read claim_key ranges; they count
// exactly the jobs whose run_at is in the window, whatever their priority,
// with jobs of every priority due on both sides of its edges.
func TestCountsAtEveryPriority(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		def := testdb.Definition(t, st, nil)
		now := time.Now().UTC()
		end := now.Truncate(time.Minute).Add(time.Minute)
		start := end.Add(-10 * time.Minute)
		statuses := []models.JobStatus{models.JobSucceeded, models.JobFailed, models.JobPending}
		want := map[models.JobStatus]int64{}
		var fires, failures int64
		i := 0
		for _, p := range []int{models.PriorityMin, models.PriorityDefault, models.PriorityMax} {
			for _, d := range []time.Duration{-6 * time.Minute, -4*time.Minute - 30*time.Second, -time.Minute, -time.Second,
				time.Second, time.Minute, 4*time.Minute + 30*time.Second, 6 * time.Minute} {
				for _, edge := range []time.Time{start, end} {
					status := statuses[i%len(statuses)]
					i++
					runAt := edge.Add(d)
					testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Priority: p, Status: status, RunAt: runAt})
					if !runAt.Before(start) {
						want[status]++
					}
					if !runAt.Before(start) && runAt.Before(end) {
						fires++
						if status == models.JobFailed {
							failures++
						}
					}
				}
			}
		}
		got, err := statusCounts(ctx, st, start)
		require.NoError(t, err)
		require.Equal(t, want, got)

		buckets, err := perMinute(ctx, st, now, 10)
		require.NoError(t, err)
		require.Equal(t, start, buckets[0].Start)
		var gotFires, gotFailures int64
		for _, b := range buckets {
			gotFires += b.Fires
			gotFailures += b.Failures
		}
		require.Equal(t, fires, gotFires)
		require.Equal(t, failures, gotFailures)
	})
}
