package chimedbtest

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

func queueMethods() []method {
	return []method{
		{"AdminQueries.ListQueues", listQueuesCases},
		{"AdminQueries.GetQueue", getQueueCases},
		{"AdminQueries.PutQueue", putQueueCases},
		{"AdminQueries.SetQueuePaused", setQueuePausedCases},
		{"AdminQueries.DeleteQueue", deleteQueueCases},
		{"ClusterStore.CountQueueJobs", countQueueJobsCases},
	}
}

func i64(v int64) *int64 { return &v }

func (e *env) inQueue(q string) func(d *models.JobDefinition) {
	return func(d *models.JobDefinition) { d.Queue = q }
}

var listQueuesCases = []tcase{
	{"lists the rows checked, their jobs, and the queues named without a row", func(e *env) {
		require.NoError(e.t, e.admin.PutQueue(e.ctx, &models.Queue{Name: "erp", MaxRunning: i64(2)}))
		e.exec(`INSERT INTO queues (name, max_running) VALUES ('broken', 0)`)
		d := e.definition(e.inQueue("erp"))
		e.definition(e.inQueue("ghost"))
		e.job(d.ID, runAt(e.now().Add(-time.Minute)))
		e.queued(d.ID, "n1", 0)
		qs, err := e.admin.ListQueues(e.ctx)
		require.NoError(e.t, err)
		byName := map[string]chimedb.QueueState{}
		var names []string
		for _, q := range qs {
			byName[q.Name] = q
			names = append(names, q.Name)
		}
		require.Equal(e.t, []string{"broken", "default", "erp", "ghost"}, names)
		require.EqualValues(e.t, 1, byName["erp"].Running)
		require.EqualValues(e.t, 1, byName["erp"].Waiting)
		require.Empty(e.t, byName["erp"].Invalid)
		require.Contains(e.t, byName["broken"].Invalid, "max_running 0")
		require.True(e.t, byName["ghost"].Missing)
		require.False(e.t, byName["default"].Missing)
	}},
}

var getQueueCases = []tcase{
	{"gets one queue; a missing one is ErrNotFound", func(e *env) {
		q, err := e.admin.GetQueue(e.ctx, "default")
		require.NoError(e.t, err)
		require.Equal(e.t, "default", q.Name)
		_, err = e.admin.GetQueue(e.ctx, "nope")
		require.ErrorIs(e.t, err, chimedb.ErrNotFound)
	}},
}

var putQueueCases = []tcase{
	{"creates, then updates limits; a changed rate starts the limiter afresh; bad values are refused", func(e *env) {
		require.NoError(e.t, e.admin.PutQueue(e.ctx, &models.Queue{Name: "api", RateLimit: i64(100), RatePeriodMs: i64(60000)}))
		e.exec(`UPDATE queues SET rate_tat_us = 5 WHERE name = 'api'`)
		require.NoError(e.t, e.admin.PutQueue(e.ctx, &models.Queue{Name: "api", Description: "partner", RateLimit: i64(100), RatePeriodMs: i64(60000), MaxRunning: i64(4)}))
		q, err := e.admin.GetQueue(e.ctx, "api")
		require.NoError(e.t, err)
		require.EqualValues(e.t, 4, *q.MaxRunning)
		require.Equal(e.t, "partner", q.Description)
		require.EqualValues(e.t, 5, *q.RateTatUs, "same rate: the limiter's state stays")
		require.NoError(e.t, e.admin.PutQueue(e.ctx, &models.Queue{Name: "api", RateLimit: i64(50), RatePeriodMs: i64(60000)}))
		q, err = e.admin.GetQueue(e.ctx, "api")
		require.NoError(e.t, err)
		require.Nil(e.t, q.RateTatUs)
		require.Nil(e.t, q.MaxRunning)
		require.Error(e.t, e.admin.PutQueue(e.ctx, &models.Queue{Name: "api", MaxRunning: i64(-1)}))
		require.Error(e.t, e.admin.PutQueue(e.ctx, &models.Queue{Name: ""}))
	}},
}

var setQueuePausedCases = []tcase{
	{"pauses and resumes; a missing queue is ErrNotFound", func(e *env) {
		q, err := e.admin.SetQueuePaused(e.ctx, "default", true)
		require.NoError(e.t, err)
		require.True(e.t, q.Paused)
		q, err = e.admin.SetQueuePaused(e.ctx, "default", false)
		require.NoError(e.t, err)
		require.False(e.t, q.Paused)
		_, err = e.admin.SetQueuePaused(e.ctx, "nope", true)
		require.ErrorIs(e.t, err, chimedb.ErrNotFound)
	}},
}

var deleteQueueCases = []tcase{
	{"deletes an unused queue; a named one and 'default' are ErrInUse", func(e *env) {
		require.NoError(e.t, e.admin.PutQueue(e.ctx, &models.Queue{Name: "free"}))
		require.NoError(e.t, e.admin.PutQueue(e.ctx, &models.Queue{Name: "used"}))
		e.definition(e.inQueue("used"))
		require.NoError(e.t, e.admin.DeleteQueue(e.ctx, "free"))
		require.ErrorIs(e.t, e.admin.DeleteQueue(e.ctx, "free"), chimedb.ErrNotFound)
		require.ErrorIs(e.t, e.admin.DeleteQueue(e.ctx, "used"), chimedb.ErrInUse)
		require.ErrorIs(e.t, e.admin.DeleteQueue(e.ctx, "default"), chimedb.ErrInUse)
	}},
}

var countQueueJobsCases = []tcase{
	{"counts active and due pending jobs by the queue each takes", func(e *env) {
		d := e.definition(e.inQueue("erp"))
		plain := e.definition()
		now := e.now()
		e.job(d.ID, runAt(now.Add(-time.Minute)))
		e.job(d.ID, runAt(now.Add(time.Hour))) // not due
		e.queued(d.ID, "n1", 0)
		e.job(plain.ID, runAt(now.Add(-time.Minute)))
		moved := e.job(plain.ID, runAt(now.Add(-time.Minute)))
		e.exec(`UPDATE jobs SET queue = 'erp' WHERE id = ?`, moved.ID)
		got, err := e.Cluster.CountQueueJobs(e.ctx)
		require.NoError(e.t, err)
		require.Equal(e.t, map[string]chimedb.QueueCount{"erp": {Running: 1, Waiting: 2}, "default": {Waiting: 1}}, got)
	}},
}
