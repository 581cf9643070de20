package clustertest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
)

// The database goes away for 10 s under three running nodes and comes
// back: every node keeps running and reconnects, nobody is declared dead,
// the fires due during the outage are caught up once per schedule, no
// (schedule_id, scheduled_at) is written twice and no job is left behind.
func TestDatabaseOutage(t *testing.T) {
	testdb.MySQLServerDSN(t) // same skip rule as the other MariaDB tests
	m := startMariaDB(t)
	m.createDatabase(t, "chime")
	dsn := m.dsn("chime")
	bin := chimeBinary(t)
	migrate(t, bin, dsn)
	st := openStore(t, dsn)
	ctx := context.Background()
	ids := seedSchedules(t, st, schedules, "300ms")

	var nodes []*nodeProc
	for _, id := range []string{"n1", "n2", "n3"} {
		nodes = append(nodes, startNode(t, bin, dsn, id))
	}
	waitFor(t, 20*time.Second, "a scheduler lease holder and fires", func() bool {
		l, err := st.GetLease(ctx, "scheduler")
		return err == nil && l.Live && count(t, st, "SELECT COUNT(*) FROM jobs WHERE status = ?", models.JobSucceeded) > 0
	})
	time.Sleep(2 * time.Second) // real processes run a little steady state before the outage

	outageAt, err := st.DBNow(ctx)
	require.NoError(t, err)
	m.stop(t)
	t.Log("database stopped")
	time.Sleep(10 * time.Second) // the outage itself: the real database is down this long
	for _, p := range nodes {
		require.True(t, p.running(), "node %s exited during the outage:\n%s", p.id, tail(p.out.String(), 2048))
	}
	m.start(t)
	restartAt, err := st.DBNow(ctx)
	require.NoError(t, err)
	t.Logf("database back after %s", restartAt.Sub(outageAt).Round(100*time.Millisecond))

	resumed := waitFor(t, 20*time.Second, "every schedule to fire again", func() bool {
		return count(t, st, "SELECT COUNT(DISTINCT schedule_id) FROM jobs WHERE scheduled_at >= ?", restartAt.Add(time.Second)) == int64(len(ids))
	})
	t.Logf("all schedules firing again %s after the database came back", resumed.Round(10*time.Millisecond))
	// Nothing lost: everything due before the restart gets run to the end.
	waitForOr(t, 20*time.Second, "the jobs due before the restart to finish", func() bool {
		return count(t, st, "SELECT COUNT(*) FROM jobs WHERE scheduled_at < ? AND status NOT IN ?", restartAt,
			[]models.JobStatus{models.JobSucceeded, models.JobFailed}) == 0
	}, func() string { return unfinished(t, st, restartAt) })
	var nodeRows []models.Node
	require.NoError(t, st.DB().Find(&nodeRows).Error)
	for _, n := range nodeRows {
		require.Equal(t, chimedb.NodeAlive, n.Status, "node %s after the outage", n.ID)
	}
	byID := map[string]*nodeProc{}
	for _, p := range nodes {
		require.True(t, p.running(), "node %s exited after the outage", p.id)
		byID[p.id] = p
	}
	stopAll(t, st, byID)
	for _, p := range nodes {
		out := p.out.String()
		require.Contains(t, out, "heartbeat failed", "node %s should log the outage", p.id)
		require.Contains(t, out, "database is reachable", "node %s should log the recovery", p.id)
		require.NotContains(t, out, "declared node dead", "node %s declared a live node dead", p.id)
	}
	var failed []models.Job
	require.NoError(t, st.DB().Where("status = ?", models.JobFailed).Find(&failed).Error)
	for _, j := range failed {
		require.NotNil(t, j.Error, "job %d failed without a reason", j.ID)
		t.Logf("job %d failed: %s", j.ID, strings.TrimSpace(*j.Error))
	}
	checkFires(t, st, ids, outageAt, 1)
}
