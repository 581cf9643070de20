package taskengine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/tasks"
)

// twiceTask's first run of a job waits for first and then fails; any later
// run waits for second and succeeds. runs counts the runs begun.
type twiceTask struct {
	tasks.Base
	mu            *sync.Mutex
	runs          *int
	first, second chan struct{}
}

func (w *twiceTask) Execute(ctx context.Context, _ *tasks.Job) error {
	w.mu.Lock()
	*w.runs++
	n := *w.runs
	w.mu.Unlock()
	gate := w.second
	if n == 1 {
		gate = w.first
	}
	select {
	case <-gate:
	case <-ctx.Done():
		return tasks.ContextError(ctx)
	}
	if n == 1 {
		return errors.New("the first run's outcome")
	}
	return nil
}

// A node cut off from the database long enough to be declared dead keeps
// running its jobs; another node recovers them (back to pending, the
// attempt given back), and this node, healed, may claim one of them again
// while the cut-off run still goes on. The rows are on the same node_id
// and running, so the database's guard cannot tell the runs apart: the
// old run's outcome must not be written over the rerun's row, nor its
// end unregister the rerun (whose stop and pause requests would then go
// nowhere).
func TestSupersededRunWritesNoOutcome(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		var mu sync.Mutex
		runs := 0
		first, second := make(chan struct{}), make(chan struct{})
		cfg := testConfig(t, nodeName(t))
		cfg.Registry = testRegistry()
		cfg.Registry.MustRegister("twice", func() tasks.Task { return &twiceTask{mu: &mu, runs: &runs, first: first, second: second} })
		id := adHocJob(t, st, &testdb.DefinitionOpts{Name: "twice", TaskType: "twice", RequestsRecovery: true})
		e := startEngine(t, st, cfg)
		waitStarted(t, e, id)

		// What another node's reaper does once this one was declared dead.
		res, err := st.RecoverNode(context.Background(), &chimedb.RecoverNodeParams{NodeID: cfg.NodeID, Now: time.Now()})
		require.NoError(t, err)
		require.Equal(t, []int64{id}, res.Recovered)
		// The rerun, on this node again.
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return runs == 2
		}, 20*time.Second, 10*time.Millisecond, "the recovered job was not run again here")

		close(first)
		waitLeft(t, e, id)
		require.NotNil(t, e.exec.run(id), "the cut-off run's end unregistered the rerun")

		close(second)
		j := waitJob(t, st, id, "the job to finish", func(j models.Job) bool { return j.Status.Finished() })
		require.Equal(t, models.JobSucceeded, j.Status, "the cut-off run's outcome was written over the rerun's row (error %q)", deref(j.Error))
		require.Equal(t, 1, j.Recoveries)
		require.Equal(t, 1, j.Attempt)
	})
}
