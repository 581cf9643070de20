package app

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/tasks/builtin"
)

// TestNodeTagsPlacementAndDrain runs a real node with node.tags: its row
// carries them; a job requiring a tag it lacks waits with the reason in
// its log, and one requiring its tags runs; drained (by SQL, as any node
// or an admin would write it) it claims nothing and shows drained; once
// undrained it runs what waited.
func TestNodeTagsPlacementAndDrain(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := newNodeEnv(t, d, 0)
		e.cfg.Node.Tags = "zone:eu, gpu"
		reg := tasks.NewRegistry()
		require.NoError(t, builtin.Register(reg))
		gpu := e.definition("gpu", "sleep", models.NotifyNever)
		lic := e.definition("licence", "sleep", models.NotifyNever)
		later := e.definition("later", "sleep", models.NotifyNever)
		bcast := e.definition("purge", "sleep", models.NotifyNever)
		db := e.st.DB()
		require.NoError(t, db.Exec(`UPDATE job_definitions SET default_params = '{"duration":"0s"}'`).Error)
		require.NoError(t, db.Exec(`UPDATE job_definitions SET required_tags = 'gpu' WHERE id = ?`, gpu.ID).Error)
		require.NoError(t, db.Exec(`UPDATE job_definitions SET required_tags = 'licence' WHERE id = ?`, lic.ID).Error)
		require.NoError(t, db.Exec(`UPDATE job_definitions SET broadcast = ? WHERE id = ?`, true, bcast.ID).Error)

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		cfg := e.cfg
		id := cfg.Node.ID
		go func() { done <- Serve(ctx, &cfg, Options{NoMigrate: true, Logger: e.log, Registry: reg}) }()
		t.Cleanup(func() {
			cancel()
			require.NoError(t, <-done)
		})
		node := func() models.Node {
			var n models.Node
			require.NoError(t, db.Take(&n, "id = ?", id).Error)
			return n
		}
		status := func(j models.Job) models.JobStatus {
			var got models.Job
			require.NoError(t, db.Take(&got, "id = ?", j.ID).Error)
			return got.Status
		}
		waitFor(t, 20*time.Second, "the node's row", func() bool {
			var n int64
			require.NoError(t, db.Model(&models.Node{}).Where("id = ?", id).Count(&n).Error)
			return n == 1
		})
		require.Equal(t, "gpu,zone:eu", node().Tags)

		g, l := e.job(gpu, time.Now()), e.job(lic, time.Now())
		waitFor(t, 20*time.Second, "the gpu job to run", func() bool { return status(g) == models.JobSucceeded })
		waitFor(t, 20*time.Second, "the licence job's reason", func() bool {
			var n int64
			require.NoError(t, db.Model(&models.JobLog{}).Where("job_id = ? AND message LIKE ?", l.ID, "%no live node%licence%").Count(&n).Error)
			return n > 0
		})
		require.Equal(t, models.JobPending, status(l))

		// The only live node gets the only shard of a broadcast.
		b := e.job(bcast, time.Now())
		waitFor(t, 20*time.Second, "the broadcast's shard to run", func() bool { return status(b) == models.JobSucceeded })
		var shard models.Job
		require.NoError(t, db.Take(&shard, "id = ?", b.ID).Error)
		require.Equal(t, 1, *shard.ShardTotal)
		require.Equal(t, id, *shard.TargetNode)

		require.NoError(t, db.Exec(`UPDATE nodes SET drain = 'draining' WHERE id = ?`, id).Error)
		waitFor(t, 20*time.Second, "drained", func() bool { return node().Drain == models.NodeDrained })
		w := e.job(later, time.Now())
		// Real time: the node's heartbeat (250 ms) and poll (100 ms) are
		// its own timers; a second is several of each.
		time.Sleep(time.Second)
		require.Equal(t, models.JobPending, status(w), "a drained node claimed")

		require.NoError(t, db.Exec(`UPDATE nodes SET drain = '' WHERE id = ?`, id).Error)
		waitFor(t, 20*time.Second, "the waiting job to run once undrained", func() bool { return status(w) == models.JobSucceeded })
	})
}
