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

// Three faults on one cluster of three nodes, each behind its own fault
// proxy, under the harness's every-second schedules, on MariaDB and on
// PostgreSQL; after each, the cluster must have recovered, and at the end
// the audit finds no fire twice, no second lost, nothing unfinished:
//
//   - the scheduler-lease holder's link goes silent (a blackhole: its
//     connections stay open, nothing is answered) for `partition`, then
//     heals. Another node must take the lease once it expires on the
//     database's clock and go on firing; the server ends the cut-off
//     node's transactions (the fence's idle timeout), so they hold nothing
//     back and its late COMMITs are refused; the node rejoins as a follower.
//   - a worker that runs long jobs (requests_recovery) is cut off the same
//     way: its jobs are recovered by the others and each ends succeeded,
//     once; the node's own runs, which went on, write nothing over them.
//   - 200 ms latency on the lease holder's link: it keeps the lease and
//     every fire is written.
func TestPartitions(t *testing.T) {
	t.Run("mysql", func(t *testing.T) { partitions(t, testdb.CreateMySQLDatabase(t)) })
	t.Run("postgres", func(t *testing.T) { partitions(t, testdb.CreatePostgresDatabase(t)) })
}

func partitions(t *testing.T, dsn string) {
	st, ids, nodes, proxies, _ := proxiedCluster(t, dsn, "300ms")
	time.Sleep(2 * time.Second) // a steady state before the first fault
	old := partitionLeader(t, st, proxies, nodes)
	partitionWorker(t, st, nodes, proxies, old)
	latency(t, st, proxies)
	end, err := st.DBNow(context.Background())
	require.NoError(t, err)
	settled(t, st, end)
	for _, p := range nodes {
		p.stop(t, 15*time.Second)
	}
	audit(t, st, ids)
	for id, p := range nodes {
		if strings.Contains(p.out.String(), `"level":"fatal"`) {
			t.Errorf("node %s logged a fatal error", id)
		}
	}
}

// sessions describes the database's open transactions, for a failure.
func sessions(t *testing.T, st *store.Store) string {
	q := `SELECT CONCAT(trx_mysql_thread_id, ' ', trx_state, ' since ', trx_started, ' locks ', trx_rows_locked, ' query ', COALESCE(trx_query, '-'))
		FROM information_schema.innodb_trx`
	if st.Dialect() == store.Postgres {
		q = `SELECT pid || ' ' || COALESCE(state, '') || ' xact ' || COALESCE(xact_start::text, '-') || ' wait ' || COALESCE(wait_event_type || ':' || wait_event, '-') ||
			' ' || LEFT(query, 160) FROM pg_stat_activity WHERE datname = current_database()`
	}
	var rows []string
	require.NoError(t, st.DB().Raw(q).Scan(&rows).Error)
	l, _ := st.GetLease(context.Background(), chimedb.SchedulerLease)
	return fmt.Sprintf("lease %+v\n%s", l, strings.Join(rows, "\n"))
}

// leaseHolder is the scheduler lease's live holder, or "".
func leaseHolder(t *testing.T, st *store.Store) string {
	l, err := st.GetLease(context.Background(), chimedb.SchedulerLease)
	require.NoError(t, err)
	if !l.Live {
		return ""
	}
	return l.Holder
}

// partitionLeader blackholes the lease holder and heals it; it returns the
// holder's id.
func partitionLeader(t *testing.T, st *store.Store, proxies map[string]*faultproxy.Proxy, nodes map[string]*nodeProc) string {
	leader := nodes[leaseHolder(t, st)]
	require.NotNil(t, leader, "no live lease holder among the nodes")
	proxies[leader.id].Blackhole()
	cutAt := time.Now()
	var newLeader string
	took := waitForOr(t, failover+heartbeat+10*time.Second, "another node to take the scheduler lease", func() bool {
		newLeader = leaseHolder(t, st)
		return newLeader != "" && newLeader != leader.id
	}, func() string { return sessions(t, st) })
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
	t.Logf("healed after %s; %s alive again %s later; %d of its batches refused by the fence", healedAt.Sub(cutAt).Round(10*time.Millisecond),
		leader.id, rejoin.Round(10*time.Millisecond), strings.Count(leader.out.String(), "the scheduler lease is no longer this node's"))
	require.NotEqual(t, leader.id, leaseHolder(t, st), "the lease went back to the cut-off node though the new holder lives")
	time.Sleep(2 * time.Second) // the healed cluster runs on
	return leader.id
}

// partitionWorker cuts off a node that runs long jobs and is not the lease
// holder (prefer), and heals it.
func partitionWorker(t *testing.T, st *store.Store, nodes map[string]*nodeProc, proxies map[string]*faultproxy.Proxy, prefer string) {
	def := models.JobDefinition{Name: "long", TaskType: "sleep", MaxAttempts: 1, RequestsRecovery: true, NotifyOn: models.NotifyNever,
		DefaultParams: models.JSON(`{"duration":"6s"}`)}
	require.NoError(t, st.DB().Create(&def).Error)
	var long []int64
	for range 12 {
		long = append(long, testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID}).ID)
	}
	holder := leaseHolder(t, st)
	var w string
	waitFor(t, 15*time.Second, "a worker that is not the lease holder to run long jobs", func() bool {
		for _, id := range []string{prefer, "n1", "n2", "n3"} {
			if id != holder && count(t, st, "SELECT COUNT(*) FROM jobs WHERE id IN ? AND node_id = ? AND status = ?", long, id, models.JobRunning) > 0 {
				w = id
				return true
			}
		}
		return false
	})
	held := count(t, st, "SELECT COUNT(*) FROM jobs WHERE id IN ? AND node_id = ? AND status = ?", long, w, models.JobRunning)
	proxies[w].Blackhole()
	cutAt := time.Now()
	// A transaction the worker had open when it was cut off keeps its rows
	// locked until the server ends it (store.DefaultIdleTxTimeout): the
	// recovery of those jobs waits for that.
	recovered := waitForOr(t, store.DefaultIdleTxTimeout+2*failover+15*time.Second, "the cut-off worker's long jobs to be recovered", func() bool {
		return count(t, st, "SELECT COUNT(*) FROM jobs WHERE id IN ? AND node_id = ? AND status IN ?", long, w,
			[]models.JobStatus{models.JobQueued, models.JobRunning}) == 0
	}, func() string { return sessions(t, st) })
	if d := partition - time.Since(cutAt); d > 0 {
		time.Sleep(d)
	}
	if idle := sessions(t, st); strings.Contains(idle, "idle in transaction") {
		t.Logf("sessions before the worker's link heals:\n%s", idle)
	}
	proxies[w].Heal()
	healedAt := time.Now()
	waitFor(t, 2*failover+15*time.Second, "the cut-off worker to beat again", func() bool {
		return count(t, st, "SELECT COUNT(*) FROM nodes WHERE id = ? AND status = ? AND heartbeat_at > ?", w, chimedb.NodeAlive, healedAt) > 0
	})
	waitFor(t, 30*time.Second, "every long job to finish", func() bool {
		return count(t, st, "SELECT COUNT(*) FROM jobs WHERE id IN ? AND status NOT IN ?", long,
			[]models.JobStatus{models.JobSucceeded, models.JobFailed}) == 0
	})
	var jobs []models.Job
	require.NoError(t, st.DB().Where("id IN ?", long).Find(&jobs).Error)
	recoveries := 0
	for _, j := range jobs {
		require.Equal(t, models.JobSucceeded, j.Status, "long job %d: %s", j.ID, deref(j.Error))
		recoveries += j.Recoveries
	}
	t.Logf("worker %s blackholed with %d long jobs running: recovered by the others %s after the cut; healed after %s; "+
		"12/12 long jobs succeeded, %d recoveries", w, held, recovered.Round(10*time.Millisecond), healedAt.Sub(cutAt).Round(10*time.Millisecond), recoveries)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// latency adds 200 ms each way to the lease holder's link for a while.
func latency(t *testing.T, st *store.Store, proxies map[string]*faultproxy.Proxy) {
	holder := leaseHolder(t, st)
	require.NotEmpty(t, holder)
	proxies[holder].SetLatency(200 * time.Millisecond)
	from, err := st.DBNow(context.Background())
	require.NoError(t, err)
	time.Sleep(max(partition, 8*time.Second))
	to, err := st.DBNow(context.Background())
	require.NoError(t, err)
	proxies[holder].SetLatency(0)
	after := leaseHolder(t, st)
	time.Sleep(2 * time.Second) // the window's jobs finish before they are measured
	t.Logf("200 ms on %s's link: lease holder after it %s; %s", holder, after, measure(t, st, from, to.Add(-time.Second)))
}
