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
	"github.com/chimesched/chime/store"
)

// Three nodes, 100 schedules firing every second, and the leader killed
// with SIGKILL while it runs jobs. A survivor must take the lease within
// the failover window plus a heartbeat, each schedule must get exactly one
// catch-up job for the gap and no fire twice, and every job the dead node
// held must end succeeded, or failed with the reason.
func TestKillLeader(t *testing.T) {
	t.Run("mysql", func(t *testing.T) { killLeader(t, testdb.CreateMySQLDatabase(t)) })
	t.Run("postgres", func(t *testing.T) { killLeader(t, testdb.CreatePostgresDatabase(t)) })
}

func killLeader(t *testing.T, dsn string) {
	st, ids, nodes, leader := startCluster(t, dsn, "300ms")
	ctx := context.Background()

	// Steady state: three seconds of the full cluster, for the throughput figure.
	steadyFrom, _ := st.DBNow(ctx)
	time.Sleep(3 * time.Second) // a throughput window of real processes on a real database
	steadyTo, _ := st.DBNow(ctx)
	t.Logf("3 nodes, steady state: %s", measure(t, st, steadyFrom.Add(-time.Second), steadyTo.Add(-time.Second)))

	waitFor(t, 10*time.Second, "the leader to run jobs", func() bool {
		return count(t, st, "SELECT COUNT(*) FROM jobs WHERE node_id = ? AND status = ?", leader.id, models.JobRunning) > 0
	})
	leader.kill()
	killedAt, err := st.DBNow(ctx)
	require.NoError(t, err)
	killedWall := time.Now()
	// The dead process can no longer change its rows: this is what it held.
	var held []int64
	require.NoError(t, st.DB().Model(&models.Job{}).Where("node_id = ? AND status IN ?", leader.id,
		[]models.JobStatus{models.JobQueued, models.JobRunning, models.JobPaused}).Pluck("id", &held).Error)
	t.Logf("killed leader %s holding %d jobs", leader.id, len(held))

	var newLeader string
	took := waitFor(t, failover+heartbeat+3*time.Second, "a survivor to take the scheduler lease", func() bool {
		l, err := st.GetLease(ctx, "scheduler")
		if err == nil && l.Live && l.Holder != leader.id {
			newLeader = l.Holder
			return true
		}
		return false
	})
	t.Logf("%s took the lease %s after the kill (failover %s + heartbeat %s)", newLeader, took.Round(10*time.Millisecond), failover, heartbeat)
	require.LessOrEqual(t, took, failover+heartbeat+time.Second, "takeover slower than failover + heartbeat (+1s for polling and a loaded machine)")

	var firstAfter time.Time
	waitFor(t, 10*time.Second, "the first fire by the new leader", func() bool {
		return st.DB().Raw("SELECT MIN(created_at) FROM jobs WHERE created_at > ?", killedAt).Row().Scan(&firstAfter) == nil && !firstAfter.IsZero()
	})
	t.Logf("first fire by the new leader %s after the kill", firstAfter.Sub(killedAt).Round(time.Millisecond))

	// Every job of the dead node ends succeeded, or failed with the reason.
	if len(held) > 0 {
		waitFor(t, failover+10*time.Second, "the dead node's jobs to finish", func() bool {
			return count(t, st, "SELECT COUNT(*) FROM jobs WHERE id IN ? AND status NOT IN ?", held,
				[]models.JobStatus{models.JobSucceeded, models.JobFailed}) == 0
		})
		var jobs []models.Job
		require.NoError(t, st.DB().Where("id IN ?", held).Find(&jobs).Error)
		for _, j := range jobs {
			if j.Status == models.JobFailed {
				require.NotNil(t, j.Error, "job %d failed without a reason", j.ID)
				// Whichever sees it first says why: a survivor's reaper once
				// the dead node's lease runs out, or its reconciler once the
				// job's own heartbeat has been silent for failover_after.
				require.Regexp(t, "node "+leader.id+" died|no heartbeat from node "+leader.id, *j.Error, "job %d", j.ID)
			}
		}
	}
	// Let the survivors run three more seconds, for the throughput after
	// failover, then stop them.
	afterFrom, _ := st.DBNow(ctx)
	time.Sleep(3 * time.Second) // a throughput window of real processes on a real database
	afterTo, _ := st.DBNow(ctx)
	t.Logf("2 nodes after failover: %s", measure(t, st, afterFrom.Add(-time.Second), afterTo.Add(-time.Second)))
	stopAll(t, st, nodes)
	require.Zero(t, count(t, st, "SELECT COUNT(*) FROM jobs WHERE node_id = ? AND status IN ?", leader.id,
		[]models.JobStatus{models.JobQueued, models.JobRunning, models.JobPaused}), "jobs left on the dead node")
	checkFires(t, st, ids, killedAt.Add(-time.Second), 1)
	for id, p := range nodes {
		if p != leader && strings.Contains(p.out.String(), `"level":"fatal"`) {
			t.Errorf("node %s logged a fatal error", id)
		}
	}
	t.Logf("test ran %s after the kill", time.Since(killedWall).Round(time.Second))
}

// startCluster seeds the harness's every-second schedules (their jobs sleep
// for sleep) on a fresh schema at dsn, starts nodes n1, n2 and n3, and
// returns once one of them leads and jobs have succeeded.
func startCluster(t *testing.T, dsn, sleep string) (*store.Store, []int64, map[string]*nodeProc, *nodeProc) {
	t.Helper()
	bin := chimeBinary(t)
	migrate(t, bin, dsn)
	st := openStore(t, dsn)
	ids := seedSchedules(t, st, schedules, sleep)
	nodes := map[string]*nodeProc{}
	for _, id := range []string{"n1", "n2", "n3"} {
		nodes[id] = startNode(t, bin, dsn, id)
	}
	var lease *chimedb.LeaseState
	waitFor(t, 20*time.Second, "a scheduler lease holder and fires", func() bool {
		l, err := st.GetLease(context.Background(), "scheduler")
		if err != nil || !l.Live {
			return false
		}
		lease = l
		return count(t, st, "SELECT COUNT(*) FROM jobs WHERE status = ?", models.JobSucceeded) > 0
	})
	leader := nodes[lease.Holder]
	require.NotNil(t, leader, "lease held by %q, not one of our nodes", lease.Holder)
	return st, ids, nodes, leader
}

// The same load on one node, for the figures the cluster is compared with.
// It asserts nothing about speed; it logs.
func TestSingleNodeFigures(t *testing.T) {
	dsn := testdb.CreateMySQLDatabase(t)
	bin := chimeBinary(t)
	migrate(t, bin, dsn)
	st := openStore(t, dsn)
	ctx := context.Background()
	seedSchedules(t, st, schedules, "300ms")
	p := startNode(t, bin, dsn, "solo")
	waitFor(t, 20*time.Second, "fires", func() bool {
		return count(t, st, "SELECT COUNT(*) FROM jobs WHERE status = ?", models.JobSucceeded) > 0
	})
	from, _ := st.DBNow(ctx)
	time.Sleep(3 * time.Second) // a throughput window of real processes on a real database
	to, _ := st.DBNow(ctx)
	t.Logf("1 node, steady state: %s", measure(t, st, from.Add(-time.Second), to.Add(-time.Second)))
	p.stop(t, 10*time.Second)
}
