package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/metrics"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// chime_jobs_waiting counts pending jobs that are due: the backlog no
// worker has taken. Not parallel: the gauge is the process's.
func TestJobsWaitingGauge(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		def := testdb.Definition(t, st, nil)
		for range 3 {
			testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Status: models.JobPending})
		}
		later := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Status: models.JobPending})
		require.NoError(t, st.DB().Model(&models.Job{}).Where("id = ?", later.ID).
			Update("run_at", store.DBTime(time.Now().Add(time.Hour))).Error)
		testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Status: models.JobRunning, NodeID: "n1", Attempt: 1})
		testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Status: models.JobSucceeded, NodeID: "n1", Attempt: 1})

		n, err := st.CountWaitingJobs(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 3, n, "pending and due only")

		node := newTestNode(t, st, "n1", clockwork.NewFakeClock())
		node.refreshWaiting(ctx, true)
		require.EqualValues(t, 3, gauge(t))
		// A node that lost the maintenance lease reports 0, so the sum over
		// nodes stays the count.
		node.refreshWaiting(ctx, false)
		require.EqualValues(t, 0, gauge(t))
	})
}

func gauge(t *testing.T) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, metrics.JobsWaiting.Write(&m))
	return m.GetGauge().GetValue()
}
