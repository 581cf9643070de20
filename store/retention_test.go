package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// Old finished jobs go in batches with their logs; recent ones, unfinished
// ones and other jobs' logs stay.
func TestDeleteFinishedJobsInBatches(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		db := st.DB()
		def := testdb.Definition(t, st, nil)
		now := store.DBTime(time.Now())
		old, recent := now.Add(-40*24*time.Hour), now.Add(-time.Hour)
		var jobs []models.Job
		for i := range 25 {
			// Due, then finished, 40 days ago.
			jobs = append(jobs, models.Job{JobDefinitionID: def.ID, ScheduledAt: old.Add(time.Duration(i) * time.Second), RunAt: old,
				Status: models.JobSucceeded, FinishedAt: &old})
		}
		jobs = append(jobs,
			models.Job{JobDefinitionID: def.ID, ScheduledAt: now, RunAt: now, Status: models.JobFailed, FinishedAt: &recent},
			models.Job{JobDefinitionID: def.ID, ScheduledAt: now, RunAt: now, Status: models.JobPending, FinishedAt: &old})
		require.NoError(t, db.Create(&jobs).Error)
		var logs []models.JobLog
		for _, j := range jobs {
			logs = append(logs, models.JobLog{JobID: j.ID, Message: "x", CreatedAt: now}, models.JobLog{JobID: j.ID, Message: "y", CreatedAt: now})
		}
		require.NoError(t, st.InsertJobLogs(ctx, logs))

		var batches []int
		for {
			n, err := st.DeleteFinishedJobs(ctx, 30*24*time.Hour, 10)
			require.NoError(t, err)
			batches = append(batches, n)
			if n < 10 {
				break
			}
		}
		require.Equal(t, []int{10, 10, 5}, batches)
		var left []models.Job
		require.NoError(t, db.Order("id").Find(&left).Error)
		require.Len(t, left, 2)
		var logCount int64
		require.NoError(t, db.Model(&models.JobLog{}).Count(&logCount).Error)
		require.EqualValues(t, 4, logCount, "only the kept jobs' logs remain")

		for _, id := range []string{"alive", "gone", "holding", "recent"} {
			require.NoError(t, st.RegisterNode(ctx, &chimedb.RegisterNodeParams{ID: id}))
		}
		require.NoError(t, db.Exec("UPDATE nodes SET status = ?, heartbeat_at = ? WHERE id IN ?", chimedb.NodeDead, old, []string{"gone", "holding"}).Error)
		require.NoError(t, db.Exec("UPDATE nodes SET heartbeat_at = ? WHERE id = ?", old, "alive").Error)
		require.NoError(t, st.SetNodeStatus(ctx, "recent", chimedb.NodeStopped))
		testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Status: models.JobQueued, NodeID: "holding"})
		n, err := st.DeleteGoneNodes(ctx, 30*24*time.Hour)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		var ids []string
		require.NoError(t, db.Model(&models.Node{}).Order("id").Pluck("id", &ids).Error)
		require.Equal(t, []string{"alive", "holding", "recent"}, ids)
	})
}

// A non-positive age would put the cutoff at or after now and delete every
// finished job; 200000 days of hours overflows time.Duration into just that.
func TestDeleteFinishedJobsRefusesNonPositiveAge(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		def := testdb.Definition(t, st, nil)
		done := store.DBTime(time.Now().Add(-time.Minute))
		job := models.Job{JobDefinitionID: def.ID, ScheduledAt: done, RunAt: done, Status: models.JobSucceeded, FinishedAt: &done}
		require.NoError(t, st.DB().Create(&job).Error)
		require.NoError(t, st.RegisterNode(ctx, &chimedb.RegisterNodeParams{ID: "gone"}))
		require.NoError(t, st.SetNodeStatus(ctx, "gone", chimedb.NodeStopped))

		days := 200000 // a variable: as a constant the compiler refuses the overflow
		overflowed := time.Duration(days) * 24 * time.Hour
		require.Negative(t, overflowed, "the overflow this test guards against")
		for _, age := range []time.Duration{overflowed, 0, -time.Hour} {
			n, err := st.DeleteFinishedJobs(ctx, age, 10)
			require.ErrorContains(t, err, "must be positive", age)
			require.Zero(t, n)
			gone, err := st.DeleteGoneNodes(ctx, age)
			require.ErrorContains(t, err, "must be positive", age)
			require.Zero(t, gone)
		}
		testdb.GetJob(t, st, job.ID)
		var nodes int64
		require.NoError(t, st.DB().Model(&models.Node{}).Count(&nodes).Error)
		require.EqualValues(t, 1, nodes)
	})
}
