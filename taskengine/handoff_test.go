package taskengine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/tasks/sleep"
)

// ReserveHandoff takes no more than the free workers, shares them with
// the claims, gets back what DeliverHandoff did not use, and reserves
// nothing before Start or once Stop has begun.
func TestReserveHandoffBoundedByFreeWorkers(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		cfg := testConfig(t, nodeName(t))
		cfg.PoolSize = 4
		cfg.PollInterval = time.Hour // the start's claim only: it would reserve the free workers too
		e := newTestEngine(t, st, cfg)
		slots, _ := e.ReserveHandoff(3)
		require.Zero(t, slots, "not started")
		require.NoError(t, e.Start(context.Background()))
		waitClaimAfter(t, e, 0)

		a, kinds := e.ReserveHandoff(3)
		require.Equal(t, 3, a)
		require.Contains(t, kinds, sleep.Kind)
		require.NotContains(t, kinds, queuedSleepKind, "a task with an OnQueue is never handed off")
		b, _ := e.ReserveHandoff(3)
		require.Equal(t, 1, b, "one worker left")
		c, _ := e.ReserveHandoff(1)
		require.Zero(t, c, "the pool is reserved")
		e.DeliverHandoff(nil, a) // a failed fire: all three back
		d, _ := e.ReserveHandoff(5)
		require.Equal(t, 3, d)
		e.DeliverHandoff(nil, d)
		e.DeliverHandoff(nil, b)
		require.Zero(t, e.workers.taken.Load())

		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, e.Stop(ctx))
		slots, _ = e.ReserveHandoff(1)
		require.Zero(t, slots, "stopped")
	})
}
