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
// or an admin would write it) it claims nothing and shows drained, and
// stays drained when an admin deletes its row while it runs; once
// undrained it runs what waited, claimed only after the undrain.
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
		// An admin's DELETE of a drained node's row does not undo the
		// drain: the node writes its row again, still drained.
		require.NoError(t, db.Exec(`DELETE FROM nodes WHERE id = ?`, id).Error)
		waitFor(t, 20*time.Second, "the node's row written again", func() bool {
			var n int64
			require.NoError(t, db.Model(&models.Node{}).Where("id = ?", id).Count(&n).Error)
			return n == 1
		})
		require.Equal(t, models.NodeDrained, node().Drain, "the row came back undrained")
		// Two more heartbeats, each followed by the read of the drain: the
		// node has polled for jobs several times (every 100 ms) meanwhile.
		for range 2 {
			was := node().HeartbeatAt
			waitFor(t, 20*time.Second, "a heartbeat", func() bool { return node().HeartbeatAt.After(was) })
		}
		require.Equal(t, models.NodeDrained, node().Drain)
		require.Equal(t, models.JobPending, status(w), "a drained node claimed")

		undrainedAt := time.Now()
		require.NoError(t, db.Exec(`UPDATE nodes SET drain = '' WHERE id = ?`, id).Error)
		waitFor(t, 20*time.Second, "the waiting job to run once undrained", func() bool { return status(w) == models.JobSucceeded })
		var got models.Job
		require.NoError(t, db.Take(&got, "id = ?", w.ID).Error)
		require.NotNil(t, got.QueuedAt)
		// The database keeps microseconds at most, rounding: the order holds.
		require.False(t, got.QueuedAt.Before(undrainedAt.Truncate(time.Microsecond)),
			"claimed at %s, before the undrain at %s: a drained node claimed", got.QueuedAt, undrainedAt)
	})
}
