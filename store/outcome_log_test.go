package store_test

import (
	"context"
	"strings"
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

// A succeeded job's last log line is derived from its row, not stored: it
// comes after the stored lines, once, whatever the page size; a job that
// failed gets none; a job that succeeded while the line was still written
// as a row keeps that row and gets no second one; the notification tail
// ends with it.
func TestSucceededLogLineIsDerived(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		ids := runningJobs(t, st, "n", 3)
		sched := store.DBTime(time.Now().Add(-90 * time.Millisecond))
		require.NoError(t, st.DB().Model(&models.Job{}).Where("id IN ?", ids).Update("scheduled_at", sched).Error)
		fin := sched.Add(1234 * time.Millisecond)
		boom := "boom"
		_, err := st.CompleteJobs(ctx, &chimedb.CompleteJobsParams{NodeID: "n", Outcomes: []chimedb.JobOutcome{
			{ID: ids[0], Status: models.JobSucceeded, FinishedAt: fin},
			{ID: ids[1], Status: models.JobFailed, FinishedAt: fin, Error: &boom},
			{ID: ids[2], Status: models.JobSucceeded, FinishedAt: fin},
		}})
		require.NoError(t, err)
		require.NoError(t, st.InsertJobLogs(ctx, []models.JobLog{
			{JobID: ids[0], Level: "info", Message: "task line 1", CreatedAt: sched},
			{JobID: ids[0], Level: "info", Message: "task line 2", CreatedAt: sched},
			{JobID: ids[1], Level: "info", Message: "task line", CreatedAt: sched},
			{JobID: ids[2], Level: "info", Message: "succeeded (attempt 1, 1.234s after scheduled_at)", CreatedAt: fin},
		}))
		admin := st.Admin()

		// Page by page, one line at a time: two stored lines, then the derived one.
		var got []models.JobLog
		after := int64(0)
		for range 5 {
			page, err := admin.ListJobLogs(ctx, ids[0], after, 1)
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			after = page[len(page)-1].ID
		}
		require.Len(t, got, 3)
		require.Equal(t, "task line 2", got[1].Message)
		require.Equal(t, models.OutcomeLogID, got[2].ID)
		require.Equal(t, "succeeded (attempt 1, 1.234s after scheduled_at)", got[2].Message)
		require.Equal(t, "info", got[2].Level)
		require.True(t, fin.Equal(got[2].CreatedAt))

		failed, err := admin.ListJobLogs(ctx, ids[1], 0, 10)
		require.NoError(t, err)
		require.Len(t, failed, 1, "a failed job has no derived line")

		legacy, err := admin.ListJobLogs(ctx, ids[2], 0, 10)
		require.NoError(t, err)
		require.Len(t, legacy, 1, "the stored line is not repeated")
		require.NotEqual(t, models.OutcomeLogID, legacy[0].ID)

		tail, err := st.TailLogs(ctx, ids[0], 2)
		require.NoError(t, err)
		require.Len(t, tail, 2)
		require.True(t, strings.HasSuffix(tail[0], "task line 2"), tail[0])
		require.True(t, strings.HasSuffix(tail[1], "succeeded (attempt 1, 1.234s after scheduled_at)"), tail[1])
	})
}

// The listing reads the job's row before its lines: a job that finishes
// between the two reads (its lines and its final state committed
// together, as the task engine writes them) is listed as still running,
// without the derived line, and the next read has every line. Read the
// other way round, the listing gave the derived line alone, and a
// follower's cursor passed over the lines for good.
func TestJobLogListingReadsTheRowFirst(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		id := runningJobs(t, st, "n", 1)[0]
		var armed atomic.Bool
		// Between the listing's two reads, the job's lines and its success
		// commit in one transaction.
		require.NoError(t, st.DB().Callback().Query().After("gorm:query").Register("test:finish_between", func(db *gorm.DB) {
			if db.Statement.Table != "job_logs" || !armed.CompareAndSwap(true, false) {
				return
			}
			now := store.DBTime(time.Now())
			require.NoError(t, st.DB().Transaction(func(tx *gorm.DB) error {
				if err := tx.Create(&[]models.JobLog{
					{JobID: id, Level: "info", Message: "task line 1", CreatedAt: now},
					{JobID: id, Level: "info", Message: "task line 2", CreatedAt: now},
				}).Error; err != nil {
					return err
				}
				return tx.Model(&models.Job{}).Where("id = ?", id).
					Updates(map[string]any{"status": models.JobSucceeded, "finished_at": now}).Error
			}))
		}))
		armed.Store(true)
		first, err := st.Admin().ListJobLogs(ctx, id, 0, 10)
		require.NoError(t, err)
		require.False(t, armed.Load(), "the job finished during the listing")
		require.Empty(t, first, "a job still running when its row was read has no derived line yet")

		rest, err := st.Admin().ListJobLogs(ctx, id, 0, 10)
		require.NoError(t, err)
		require.Len(t, rest, 3)
		require.Equal(t, "task line 1", rest[0].Message)
		require.Equal(t, models.OutcomeLogID, rest[2].ID)
	})
}
