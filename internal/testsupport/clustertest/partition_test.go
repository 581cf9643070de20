package clustertest

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/faultproxy"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// partition is how long a node is cut off (CHIME_CLUSTERTEST_PARTITION):
// by default long enough for the lease and the node to be judged dead
// several times over, short enough for CI; the 30 s on demand.
var partition = envDuration("CHIME_CLUSTERTEST_PARTITION", max(4*failover, 8*time.Second))

var mysqlAddr = regexp.MustCompile(`tcp\(([^)]+)\)`)

// viaProxy starts a fault proxy in front of dsn's server and returns the
// DSN that reaches the server through it.
func viaProxy(t *testing.T, dsn string) (string, *faultproxy.Proxy) {
	t.Helper()
	var target string
	if driverOf(dsn) == store.Postgres {
		u, err := url.Parse(dsn)
		require.NoError(t, err)
		target = u.Host
	} else {
		m := mysqlAddr.FindStringSubmatch(dsn)
		require.NotNil(t, m, "no tcp(host:port) in the MySQL DSN")
		target = m[1]
	}
	p, err := faultproxy.Start(target)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return strings.Replace(dsn, target, p.Addr(), 1), p
}

// proxiedCluster is startCluster with each node behind its own proxy.
func proxiedCluster(t *testing.T, dsn, sleep string) (*store.Store, []int64, map[string]*nodeProc, map[string]*faultproxy.Proxy, *nodeProc) {
	t.Helper()
	bin := chimeBinary(t)
	migrate(t, bin, dsn)
	st := openStore(t, dsn)
	ids := seedSchedules(t, st, schedules, sleep)
	nodes, proxies := map[string]*nodeProc{}, map[string]*faultproxy.Proxy{}
	for _, id := range []string{"n1", "n2", "n3"} {
		pdsn, p := viaProxy(t, dsn)
		proxies[id] = p
		nodes[id] = startNode(t, bin, pdsn, id)
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
	return st, ids, nodes, proxies, leader
}

// audit is the check after a fault: no (schedule_id, scheduled_at)
// twice, no hole in any schedule's every-second cadence (a catch-up job
// stands for the fires it counts). Nothing unfinished is settled's check,
// made while the nodes still run.
func audit(t *testing.T, st *store.Store, ids []int64) {
	t.Helper()
	dups := count(t, st, `SELECT COUNT(*) FROM (SELECT schedule_id, scheduled_at FROM jobs WHERE schedule_id IS NOT NULL
		GROUP BY schedule_id, scheduled_at HAVING COUNT(*) > 1) d`)
	bySched := map[int64][]fireRow{}
	for _, f := range fires(t, st) {
		bySched[f.ScheduleID] = append(bySched[f.ScheduleID], f)
	}
	var holes []string
	for _, id := range ids {
		fs := bySched[id]
		for i := 1; i < len(fs); i++ {
			want := time.Second
			if fs[i].CatchUp {
				want = time.Duration(fs[i].MissedFires) * time.Second
			}
			if step := fs[i].ScheduledAt.Sub(fs[i-1].ScheduledAt); step != want {
				holes = append(holes, fmt.Sprintf("schedule %d: step %s before %s, want %s", id, step, fs[i].ScheduledAt.Format("15:04:05.000"), want))
			}
		}
	}
	total := count(t, st, "SELECT COUNT(*) FROM jobs")
	failed := count(t, st, "SELECT COUNT(*) FROM jobs WHERE status = ?", models.JobFailed)
	t.Logf("audit: %d jobs, %d duplicate fires, %d lost seconds, 0 unfinished, %d failed", total, dups, len(holes), failed)
	require.Zero(t, dups, "a (schedule_id, scheduled_at) was written twice")
	require.Empty(t, holes, "lost seconds")
}

// settled waits until every job scheduled before end has finished.
func settled(t *testing.T, st *store.Store, end time.Time) {
	t.Helper()
	var left string
	waitForOr(t, 2*failover+20*time.Second, "every job scheduled before the end to finish", func() bool {
		left = unfinished(t, st, end)
		return left == ""
	}, func() string { return left })
}

// The scheduler-lease holder's link to the database goes silent (a
// blackhole: its connections stay open, nothing is answered) for
// `partition`, then heals. Another node must take the lease once it
// expires on the database's clock, and go on firing; the cut-off node's
// transactions are ended by the server (the fence's idle timeout) so they
// hold nothing back; when the link heals the old holder rejoins without a
// fire of its own landing: no fire twice, no second lost, nothing left
// unfinished.
func TestPartitionLeader(t *testing.T) {
	t.Run("mysql", func(t *testing.T) { partitionLeader(t, testdb.CreateMySQLDatabase(t)) })
	t.Run("postgres", func(t *testing.T) { partitionLeader(t, testdb.CreatePostgresDatabase(t)) })
}

func partitionLeader(t *testing.T, dsn string) {
	st, ids, nodes, proxies, leader := proxiedCluster(t, dsn, "300ms")
	ctx := context.Background()
	time.Sleep(2 * time.Second) // a steady state before the fault
	proxies[leader.id].Blackhole()
	cutAt := time.Now()
	var newLeader string
	took := waitFor(t, failover+heartbeat+10*time.Second, "another node to take the scheduler lease", func() bool {
		l, err := st.GetLease(ctx, chimedb.SchedulerLease)
		if err == nil && l.Live && l.Holder != leader.id {
			newLeader = l.Holder
			return true
		}
		return false
	})
	takenAt := time.Now()
	var firstAfter time.Time
	waitFor(t, 15*time.Second, "the first fire after the takeover", func() bool {
		return st.DB().Raw("SELECT MIN(created_at) FROM jobs WHERE created_at > ?", takenAt).Row().Scan(&firstAfter) == nil && !firstAfter.IsZero()
	})
	t.Logf("leader %s blackholed: %s took the lease after %s, first fire %s after the cut",
		leader.id, newLeader, took.Round(10*time.Millisecond), firstAfter.Sub(cutAt).Round(10*time.Millisecond))
	if d := partition - time.Since(cutAt); d > 0 {
		time.Sleep(d) // the partition lasts its full length
	}
	proxies[leader.id].Heal()
	healedAt := time.Now()
	rejoin := waitFor(t, 2*failover+15*time.Second, "the cut-off node to beat again", func() bool {
		return count(t, st, "SELECT COUNT(*) FROM nodes WHERE id = ? AND status = ? AND heartbeat_at > ?", leader.id, chimedb.NodeAlive, healedAt) > 0
	})
	t.Logf("healed after %s; %s alive again %s later", healedAt.Sub(cutAt).Round(10*time.Millisecond), leader.id, rejoin.Round(10*time.Millisecond))
	l, err := st.GetLease(ctx, chimedb.SchedulerLease)
	require.NoError(t, err)
	require.NotEqual(t, leader.id, l.Holder, "the lease went back to the cut-off node though the new holder lives")
	time.Sleep(3 * time.Second) // the healed cluster runs on
	end, err := st.DBNow(ctx)
	require.NoError(t, err)
	settled(t, st, end)
	for _, p := range nodes {
		p.stop(t, 15*time.Second)
	}
	audit(t, st, ids)
	out := leader.out.String()
	t.Logf("the cut-off node logged %d batches refused by the fence", strings.Count(out, "the scheduler lease is no longer this node's"))
	for id, p := range nodes {
		if strings.Contains(p.out.String(), `"level":"fatal"`) {
			t.Errorf("node %s logged a fatal error", id)
		}
	}
}
