package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// A job heartbeat on PostgreSQL beats the node's running jobs that no
// other transaction holds and passes over one that another holds (an
// outcome being written), instead of waiting for it: the beat rewrote
// every running row of the node, and waiting behind each outcome batch
// made beats of seconds that the next batches then waited on. The row
// passed over is beaten by the next beat once it is free. Before, this
// beat waited for the holder, which here lets go only after the beat
// returned: the beat ran into its context's deadline.
func TestHeartbeatJobsPassesOverHeldRows(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.Postgres)
	db := st.DB()
	def := testdb.Definition(t, st, nil)
	started := store.DBTime(time.Now().Add(-time.Minute))
	ids := make([]int64, 3)
	for i := range ids {
		j := models.Job{JobDefinitionID: def.ID, ScheduledAt: started, RunAt: started, Status: models.JobRunning,
			Attempt: 1, NodeID: "hb-node", QueuedAt: &started, StartedAt: &started, HeartbeatAt: &started}
		require.NoError(t, db.Create(&j).Error)
		ids[i] = j.ID
	}

	holder := db.Begin()
	require.NoError(t, holder.Error)
	defer holder.Rollback()
	require.NoError(t, holder.Exec("SELECT id FROM jobs WHERE id = ? FOR UPDATE", ids[1]).Error)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	beat := store.DBTime(time.Now())
	n, err := st.HeartbeatJobs(ctx, "hb-node", beat)
	require.NoError(t, err, "the beat must not wait for the held row")
	require.EqualValues(t, 2, n)
	require.NoError(t, holder.Rollback().Error)

	heartbeats := func() map[int64]time.Time {
		var rows []models.Job
		require.NoError(t, db.Where("id IN ?", ids).Find(&rows).Error)
		out := map[int64]time.Time{}
		for _, r := range rows {
			out[r.ID] = r.HeartbeatAt.UTC()
		}
		return out
	}
	got := heartbeats()
	require.True(t, got[ids[0]].Equal(beat) && got[ids[2]].Equal(beat), "free rows beaten: %v", got)
	require.True(t, got[ids[1]].Equal(started), "the held row is passed over: %v", got)

	next := beat.Add(5 * time.Second)
	n, err = st.HeartbeatJobs(ctx, "hb-node", next)
	require.NoError(t, err)
	require.EqualValues(t, 3, n)
	require.True(t, heartbeats()[ids[1]].Equal(next), "the next beat reaches the row once it is free")
}
