package cluster

import (
	"context"
	"testing"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// Restarts with the default node id (hostname-pid) do not pile up rows in
// nodes: a node that joins removes the rows its host's earlier processes
// left stopped or dead, unless a row still names unfinished jobs or was
// given its own id.
func TestRestartsDoNotPileUpNodeRows(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		start := func(id, host string, pid int) *Node {
			n, err := New(st, &Config{
				NodeID: id, Hostname: host, PID: pid, Roles: "worker", Heartbeat: testHeartbeat, FailoverAfter: testFailover,
				Logger: testLogger(), Clock: clockwork.NewFakeClock(),
			})
			require.NoError(t, err)
			require.NoError(t, n.Start(ctx))
			return n
		}
		for i, id := range []string{"box-101", "box-102", "box-103"} {
			require.NoError(t, start(id, "box", 101+i).Stop(ctx))
		}
		require.NoError(t, start("named", "box", 7).Stop(ctx))
		require.NoError(t, start("other-5", "other", 5).Stop(ctx))
		dead := start("box-104", "box", 104)
		require.NoError(t, dead.Stop(ctx))
		require.NoError(t, st.SetNodeStatus(ctx, "box-104", chimedb.NodeDead))
		holding := start("box-105", "box", 105)
		require.NoError(t, holding.Stop(ctx))
		def := testdb.Definition(t, st, nil)
		testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Status: models.JobRunning, NodeID: "box-105", Attempt: 1})

		n := start("box-200", "box", 200)
		defer func() { require.NoError(t, n.Stop(ctx)) }()
		var ids []string
		require.NoError(t, st.DB().Model(&models.Node{}).Order("id").Pluck("id", &ids).Error)
		require.Equal(t, []string{"box-105", "box-200", "named", "other-5"}, ids,
			"box-105 still names a running job; named and other-5 are not box's default ids")
	})
}
