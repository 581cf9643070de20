package store_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// 00013 drops idx_jobs_claim (status, run_at): idx_jobs_claim_order serves
// its queries, and each index holding status costs at every status change.
// Its Down brings it back.
func TestMigration13DropsIdxJobsClaim(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		m := st.DB().Migrator()
		require.False(t, m.HasIndex(&models.Job{}, "idx_jobs_claim"))
		require.True(t, m.HasIndex(&models.Job{}, "idx_jobs_claim_order"))
		require.NoError(t, st.MigrateDownTo(ctx, 12))
		require.True(t, m.HasIndex(&models.Job{}, "idx_jobs_claim"))
		_, err := st.Migrate(ctx)
		require.NoError(t, err)
		require.False(t, m.HasIndex(&models.Job{}, "idx_jobs_claim"))
	})
}

// history inserts finished jobs due and finished at each of at, and a
// backlog of pending jobs due in the last minutes, priorities 1 to 10; on
// PostgreSQL it refreshes the statistics, as autovacuum would on a table
// with a history.
func history(t *testing.T, st *store.Store, at []time.Time, backlog int) {
	t.Helper()
	def := testdb.Definition(t, st, nil)
	now := store.DBTime(time.Now())
	var jobs []models.Job
	for i, a := range at {
		a := store.DBTime(a)
		jobs = append(jobs, models.Job{JobDefinitionID: def.ID, ScheduledAt: a.Add(time.Duration(i) * time.Millisecond), RunAt: a,
			Priority: 1 + i%10, Status: models.JobSucceeded, FinishedAt: &a})
	}
	for i := range backlog {
		jobs = append(jobs, models.Job{JobDefinitionID: def.ID, ScheduledAt: now, RunAt: now.Add(-time.Duration(i) * time.Second),
			Priority: 1 + i%10, Status: models.JobPending})
	}
	require.NoError(t, st.DB().CreateInBatches(&jobs, 500).Error)
	if st.Dialect() == store.Postgres {
		require.NoError(t, st.DB().Exec("VACUUM ANALYZE jobs").Error)
	}
}

// rangeOnClaimOrder is, per database, how a plan says it reads a range of
// idx_jobs_claim_order bounded by status and claim_key, not by status
// alone.
func rangeOnClaimOrder(d store.Dialect) *regexp.Regexp {
	switch d {
	case store.MySQL:
		return regexp.MustCompile(`"key": "idx_jobs_claim_order",\s*"key_length": "\d+",\s*"used_key_parts": \["status", "claim_key"\]`)
	case store.SQLite:
		return regexp.MustCompile(`INDEX idx_jobs_claim_order \(status=\? AND claim_key[<>]`)
	default:
		// Since migration 00020 (alerts) PostgreSQL may instead read
		// idx_jobs_finished from the cutoff down: a range too.
		return regexp.MustCompile(`(Index (Only )?Scan using|Bitmap Index Scan on) idx_jobs_claim_order[^\n]*\n[^\n]*Index Cond: \(.*status.*AND \(claim_key [<>]` +
			`|(Index (Only )?Scan using|Bitmap Index Scan on) idx_jobs_finished[^\n]*\n[^\n]*Index Cond: \(finished_at < `)
	}
}

// Retention picks its batch from a range of idx_jobs_claim_order bounded
// by the cutoff, not from every finished row: a long history is mostly
// younger than the cutoff.
func TestDeleteFinishedJobsReadsClaimOrderRange(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		now := time.Now()
		var at []time.Time
		for i := range 2000 {
			at = append(at, now.Add(-time.Duration(i)*time.Minute))
		}
		for i := range 10 {
			at = append(at, now.Add(-40*24*time.Hour-time.Duration(i)*time.Minute))
		}
		history(t, st, at, 100)
		plan, err := st.ExplainDeleteFinishedJobs(context.Background(), now.Add(-30*24*time.Hour), 500)
		require.NoError(t, err)
		require.Regexp(t, rangeOnClaimOrder(st.Dialect()), plan)
	})
}

// The claim_key bound of retention keeps every job due before the cutoff
// in reach, whatever its priority, and no job due after it.
func TestDeleteFinishedJobsAtEveryPriority(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		def := testdb.Definition(t, st, nil)
		now := store.DBTime(time.Now())
		age := 30 * 24 * time.Hour
		old := now.Add(-age - time.Hour)
		var gone, kept []int64
		for _, p := range []int{models.PriorityMin, models.PriorityDefault, models.PriorityMax} {
			for _, runAt := range []time.Time{now.Add(-age - 10*time.Second), now.Add(-age + time.Minute)} {
				j := models.Job{JobDefinitionID: def.ID, ScheduledAt: runAt, RunAt: runAt, Priority: p, Status: models.JobSucceeded, FinishedAt: &old}
				require.NoError(t, st.DB().Create(&j).Error)
				if runAt.Before(now.Add(-age)) {
					gone = append(gone, j.ID)
				} else {
					kept = append(kept, j.ID)
				}
			}
		}
		n, err := st.DeleteFinishedJobs(ctx, age, 100)
		require.NoError(t, err)
		require.Equal(t, len(gone), n)
		var left []int64
		require.NoError(t, st.DB().Model(&models.Job{}).Order("id").Pluck("id", &left).Error)
		require.Equal(t, kept, left)
	})
}

// CountWaitingJobs reads two ranges of idx_jobs_claim_order: the rows
// surely due, from the index alone, and the few minutes above them.
func TestCountWaitingJobsReadsClaimOrderRanges(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		now := time.Now()
		var at []time.Time
		for i := range 1000 {
			at = append(at, now.Add(-time.Duration(i)*time.Minute))
		}
		history(t, st, at, 300)
		plan, err := st.ExplainCountWaitingJobs(context.Background(), now)
		require.NoError(t, err)
		ranges := rangeOnClaimOrder(st.Dialect()).FindAllString(plan, -1)
		require.Len(t, ranges, 2, plan)
		switch st.Dialect() {
		case store.MySQL:
			require.Contains(t, plan, `"using_index": true`, "the surely due rows counted from the index alone")
		case store.Postgres:
			require.Contains(t, plan, "Index Only Scan using idx_jobs_claim_order", "the surely due rows counted from the index alone")
		}
	})
}

// A job is waiting when it is pending and due, whatever its priority: the
// claim_key ranges miss none and take none that is not due.
func TestCountWaitingJobsAtEveryPriority(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		def := testdb.Definition(t, st, nil)
		now := time.Now()
		want := 0
		for _, p := range []int{models.PriorityMin, models.PriorityDefault, models.PriorityMax} {
			for _, d := range []time.Duration{-10 * time.Minute, -4*time.Minute - 30*time.Second, -time.Second, 30 * time.Second, time.Minute, 10 * time.Minute} {
				testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Priority: p, RunAt: now.Add(d)})
				if d < 0 {
					want++
				}
			}
		}
		n, err := st.CountWaitingJobs(context.Background())
		require.NoError(t, err)
		require.EqualValues(t, want, n)
	})
}
