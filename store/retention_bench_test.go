package store_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// BenchmarkDeleteFinishedJobs measures one retention batch of 500 jobs
// (MariaDB) beside CHIME_BENCH_HISTORY (default 200,000) finished jobs of
// the last 30 days that the cutoff keeps and a backlog of 2,000 pending
// ones: the pick of the batch must read only the rows past the cutoff.
// Each iteration first writes 500 jobs 40 days old, outside the timer.
//
//	CHIME_TEST_MYSQL_DSN=... go test -run '^$' -bench BenchmarkDeleteFinishedJobs -benchtime 50x ./store/
func BenchmarkDeleteFinishedJobs(b *testing.B) {
	if os.Getenv(testdb.EnvDSN) == "" {
		b.Skipf("%s not set", testdb.EnvDSN)
	}
	history := 200_000
	if v, err := strconv.Atoi(os.Getenv("CHIME_BENCH_HISTORY")); err == nil && v >= 0 {
		history = v
	}
	st := testdb.Open(b, store.MySQL)
	ctx := context.Background()
	db := st.DB()
	def := testdb.Definition(b, st, nil)
	now := store.DBTime(time.Now())
	span := 30 * 24 * time.Hour
	write := func(n int, status models.JobStatus, at func(i int) time.Time) {
		jobs := make([]models.Job, 0, 2000)
		flush := func() {
			require.NoError(b, db.Create(&jobs).Error)
			jobs = jobs[:0]
		}
		for i := range n {
			t := at(i)
			j := models.Job{JobDefinitionID: def.ID, ScheduledAt: t, RunAt: t, Status: status, Priority: 1 + i%10}
			if status != models.JobPending {
				j.FinishedAt = &t
			}
			jobs = append(jobs, j)
			if len(jobs) == cap(jobs) {
				flush()
			}
		}
		if len(jobs) > 0 {
			flush()
		}
	}
	write(history, models.JobSucceeded, func(i int) time.Time { return now.Add(-span + span*time.Duration(i)/time.Duration(max(history, 1))) })
	write(2000, models.JobPending, func(i int) time.Time { return now.Add(-time.Duration(i) * time.Millisecond) })
	require.NoError(b, db.Exec("ANALYZE TABLE jobs").Error)
	old := now.Add(-40 * 24 * time.Hour)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		write(500, models.JobSucceeded, func(i int) time.Time { return old.Add(time.Duration(i) * time.Second) })
		b.StartTimer()
		n, err := st.DeleteFinishedJobs(ctx, span, 500)
		require.NoError(b, err)
		require.Equal(b, 500, n)
	}
}
