package app

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/configs"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// On PostgreSQL a job inserted by plain SQL starts at once on a worker node
// that polls only every 30 s: the trigger's NOTIFY wakes it. Two nodes
// share the database; the insert comes from neither. After its LISTEN
// connection is killed, a node listens again.
func TestPlainSQLJobStartsOnNotify(t *testing.T) {
	t.Parallel()
	e := newNodeEnv(t, store.Postgres, 0)
	e.cfg.TaskEngine.PollInterval = configs.Duration(30 * time.Second)
	def := e.definition("d", "chatty", models.NotifyNever)
	a := e.cfg
	a.Node.ID = "a"
	b := e.cfg
	b.Node.ID = "b"
	e.cfg = a
	e.serve()
	e.cfg = b
	e.serve()
	db := e.st.DB()
	listening := func(n int) func() bool {
		return func() bool {
			var got int
			require.NoError(t, db.Raw(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
				AND application_name = ? AND wait_event = 'ClientRead'`, store.ListenApplicationName).Scan(&got).Error)
			return got == n
		}
	}
	// Each node claims once at start; wait for both to listen and to have
	// looked, so that only a wake-up can start the next job.
	waitFor(t, 10*time.Second, "both nodes to LISTEN", listening(2))
	started := func(id int64) func() bool {
		return func() bool {
			var j models.Job
			require.NoError(t, db.Take(&j, id).Error)
			return j.Status == models.JobSucceeded
		}
	}
	insert := func() int64 {
		var id int64
		require.NoError(t, db.Raw(`INSERT INTO jobs (job_definition_id) VALUES (?) RETURNING id`, def.ID).Scan(&id).Error)
		return id
	}
	// 10 s is a third of the poll interval: a job that waited for a poll
	// would not make it.
	waitFor(t, 10*time.Second, "the plain-SQL job to run", started(insert()))

	var killed int
	require.NoError(t, db.Raw(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = ?`, store.ListenApplicationName).Scan(&killed).Error)
	require.Equal(t, 2, killed)
	waitFor(t, 10*time.Second, "both nodes to LISTEN again", listening(2))
	waitFor(t, 10*time.Second, "a plain-SQL job to run after the reconnect", started(insert()))
}
