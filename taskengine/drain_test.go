package taskengine

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// A draining engine claims nothing more and lets its running job finish;
// it is then idle; undrained, it claims again.
func TestDrainStopsClaimingAndFinishes(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		gate, open := openGate(t)
		running := adHocJob(t, st, &testdb.DefinitionOpts{Name: "long", TaskType: "wait", DefaultParams: `{"gate":"` + gate + `"}`})
		e := startEngine(t, st, testConfig(t, nodeName(t)))
		waitStarted(t, e, running)

		e.SetDrain(models.NodeDraining)
		require.False(t, e.Idle())
		later := adHocJob(t, st, &testdb.DefinitionOpts{Name: "later", DefaultParams: `{"duration":"0s"}`})
		mark := claimMark(e)
		e.Wake()
		open()
		waitOutcome(t, e, st, running, models.JobSucceeded)
		require.Equal(t, mark, claimMark(e), "a draining engine began a claim")
		require.Equal(t, models.JobPending, testdb.GetJob(t, st, later).Status)
		require.True(t, e.Idle())
		slots, _ := e.ReserveHandoff(4)
		require.Zero(t, slots, "a draining engine took a hand-off")

		e.SetDrain("")
		waitOutcome(t, e, st, later, models.JobSucceeded)
	})
}

// Past DrainTimeout a draining engine hands the job it still runs back to
// pending, its attempt given back, for another node.
func TestDrainTimeoutHandsBack(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		gate, _ := openGate(t)
		id := adHocJob(t, st, &testdb.DefinitionOpts{Name: "long", TaskType: "wait", DefaultParams: `{"gate":"` + gate + `"}`, MaxAttempts: 1})
		clock := clockwork.NewFakeClock()
		cfg := testConfig(t, nodeName(t))
		cfg.Clock, cfg.DrainTimeout = clock, time.Minute
		e := startEngine(t, st, cfg)
		waitStarted(t, e, id)

		e.SetDrain(models.NodeDraining)
		clock.Advance(59 * time.Second)
		e.SetDrain(models.NodeDraining)
		require.Equal(t, models.JobRunning, testdb.GetJob(t, st, id).Status, "handed back before drain_timeout")
		clock.Advance(time.Second)
		e.SetDrain(models.NodeDraining)
		j := waitOutcome(t, e, st, id, models.JobPending)
		require.Equal(t, 0, j.Attempt, "the attempt is given back: the only one it has")
		require.Empty(t, j.NodeID)
		requireLog(t, st.DB(), id, "handed back to pending")
		require.True(t, e.Idle())
		require.Equal(t, models.JobPending, testdb.GetJob(t, st, id).Status, "a draining engine claimed it again")
	})
}
