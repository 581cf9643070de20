package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// Short windows for tests that drive the node by hand.
const (
	testHeartbeat = time.Second
	testFailover  = 4 * time.Second
)

func testLogger() *logrus.Logger {
	l := logrus.New()
	l.SetLevel(logrus.ErrorLevel)
	if testing.Verbose() {
		l.SetLevel(logrus.DebugLevel)
	}
	return l
}

// newTestNode returns a node on st whose loops are not started: tests call
// Register, beatOnce, renew and Reconcile themselves, on clock.
func newTestNode(t *testing.T, st *store.Store, id string, clock clockwork.Clock) *Node {
	t.Helper()
	n, err := New(st, &Config{
		NodeID: id, Roles: "scheduler,worker", Heartbeat: testHeartbeat, FailoverAfter: testFailover,
		RetentionDays: 30, RetentionBatch: 10, Logger: testLogger(), Clock: clock,
	})
	require.NoError(t, err)
	require.NoError(t, n.members.Register(context.Background()))
	return n
}

func nodeStatus(t *testing.T, st *store.Store, id string) string {
	t.Helper()
	var n models.Node
	require.NoError(t, st.DB().First(&n, "id = ?", id).Error)
	return n.Status
}

// ageNode moves a node's heartbeat back by d on the database's clock, as if
// it had been silent that long.
func ageNode(t *testing.T, st *store.Store, id string, d time.Duration) {
	t.Helper()
	now, err := st.DBNow(context.Background())
	require.NoError(t, err)
	require.NoError(t, st.DB().Exec("UPDATE nodes SET heartbeat_at = ? WHERE id = ?", now.Add(-d), id).Error)
}
