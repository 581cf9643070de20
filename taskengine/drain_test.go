package taskengine

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/tasks"
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
		mark := waitClaimsBegun(t, e)
		later := adHocJob(t, st, &testdb.DefinitionOpts{Name: "later", DefaultParams: `{"duration":"0s"}`})
		e.Wake()
		open()
		waitOutcome(t, e, st, running, models.JobSucceeded)
		require.Equal(t, mark, claimMark(e), "a draining engine began a claim")
		require.Equal(t, models.JobPending, testdb.GetJob(t, st, later).Status)
		// The worker is freed just after the outcome's commit, not with it.
		waitLeft(t, e, running)
		require.True(t, e.Idle())
		slots, _ := e.ReserveHandoff(4)
		require.Zero(t, slots, "a draining engine took a hand-off")

		e.SetDrain("")
		waitOutcome(t, e, st, later, models.JobSucceeded)
	})
}

// waitClaimsBegun waits until every claim e has begun so far has returned
// and returns their count: a claim begun before a drain may still be on
// its way, its workers reserved (and could take a job written now).
func waitClaimsBegun(t *testing.T, e *Engine) uint64 {
	t.Helper()
	mark := claimMark(e)
	back := 0
	e.signals.claimed.WaitFor(fmt.Sprintf("the %d claims begun so far", mark), func(c claimSignal) bool {
		if c.seq <= mark {
			back++
		}
		return back == int(mark)
	})
	return mark
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
		waitClaimsBegun(t, e)
		clock.Advance(59 * time.Second)
		e.SetDrain(models.NodeDraining)
		require.Equal(t, models.JobRunning, testdb.GetJob(t, st, id).Status, "handed back before drain_timeout")
		clock.Advance(time.Second)
		e.SetDrain(models.NodeDraining)
		j := waitOutcome(t, e, st, id, models.JobPending)
		require.Equal(t, 0, j.Attempt, "the attempt is given back: the only one it has")
		require.Empty(t, j.NodeID)
		requireLog(t, st.DB(), id, "handed back to pending")
		waitLeft(t, e, id)
		require.True(t, e.Idle())
		require.Equal(t, models.JobPending, testdb.GetJob(t, st, id).Status, "a draining engine claimed it again")
	})
}

// shardTask records the shard its job saw.
type shardTask struct{ tasks.Base }

var shardsSeen sync.Map // job id → [2]int{index, total}

func (*shardTask) Execute(_ context.Context, job *tasks.Job) error {
	shardsSeen.Store(job.ID, [2]int{job.ShardIndex, job.ShardTotal})
	return nil
}

// A broadcast's shard reaches its task with its index and total; any
// other job sees 0 and 0.
func TestShardInJob(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		cfg := testConfig(t, nodeName(t))
		cfg.Registry.MustRegister("shard", func() tasks.Task { return &shardTask{} })
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "purge", TaskType: "shard"})
		shard := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID}).ID
		plain := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID}).ID
		require.NoError(t, st.DB().Exec(`UPDATE jobs SET shard_index = 2, shard_total = 3, shard_group = ?, target_node = ? WHERE id = ?`,
			shard, cfg.NodeID, shard).Error)
		e := startEngine(t, st, cfg)
		waitOutcome(t, e, st, shard, models.JobSucceeded)
		waitOutcome(t, e, st, plain, models.JobSucceeded)
		got, _ := shardsSeen.Load(shard)
		require.Equal(t, [2]int{2, 3}, got)
		got, _ = shardsSeen.Load(plain)
		require.Equal(t, [2]int{0, 0}, got)
	})
}
