package app

import (
	"context"
	"github.com/chimesched/chime/chimedb"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/configs"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/tasks"
)

// gated runs until its gate opens, and says when it has started.
type gated struct {
	tasks.Base
	started chan<- struct{}
	gate    <-chan struct{}
}

func (g *gated) Execute(ctx context.Context, _ *tasks.Job) error {
	g.started <- struct{}{}
	select {
	case <-g.gate:
		return nil
	case <-ctx.Done():
		return tasks.ContextError(ctx)
	}
}

// A node that is shutting down keeps beating while its running jobs get
// their shutdown grace: the serve context has ended, but the cluster
// membership stops only after the task engine. A node that fell silent
// then would be declared dead after failover_after and its running jobs
// recovered elsewhere while they still ran here.
func TestNodeBeatsThroughShutdownGrace(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := newNodeEnv(t, d, 0)
		e.cfg.ShutdownGrace = configs.Duration(time.Minute)
		started, gate := make(chan struct{}, 1), make(chan struct{})
		reg := tasks.NewRegistry()
		reg.MustRegister("gated", func() tasks.Task { return &gated{started: started, gate: gate} })
		def := e.definition("gated", "gated", models.NotifyNever)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		var served error
		cfg := e.cfg
		id := cfg.Node.ID // Serve writes cfg
		go func() {
			defer close(done)
			served = Serve(ctx, &cfg, Options{NoMigrate: true, Logger: e.log, Registry: reg})
		}()
		var opened sync.Once
		open := func() { opened.Do(func() { close(gate) }) }
		t.Cleanup(func() {
			cancel()
			open()
			<-done
		})
		e.job(def, time.Now())
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			t.Fatal("the job did not start")
		}

		cancel() // as SIGTERM does
		beat := func() time.Time {
			var n models.Node
			require.NoError(t, e.st.DB().Take(&n, "id = ?", id).Error)
			return n.HeartbeatAt
		}
		first := beat()
		waitFor(t, 10*time.Second, "a heartbeat after the serve context ended", func() bool {
			return beat().After(first)
		})
		var n models.Node
		require.NoError(t, e.st.DB().Take(&n, "id = ?", id).Error)
		require.Equal(t, chimedb.NodeAlive, n.Status)

		open()
		select {
		case <-done:
			require.NoError(t, served)
		case <-time.After(30 * time.Second):
			t.Fatal("the node did not stop once its job ended")
		}
		require.NoError(t, e.st.DB().Take(&n, "id = ?", id).Error)
		require.Equal(t, chimedb.NodeStopped, n.Status)
		var j models.Job
		require.NoError(t, e.st.DB().Take(&j, "job_definition_id = ?", def.ID).Error)
		require.Equal(t, models.JobSucceeded, j.Status, "the job finished within its grace")
	})
}
