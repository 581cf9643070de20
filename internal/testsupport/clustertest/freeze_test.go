package clustertest

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

// The leader frozen (SIGSTOP: a paused VM, a stalled process) 100 ms before
// a second's fires commit, when fire-ahead has that batch prepared and
// holding its schedules' rows. A survivor must take the lease and every
// schedule must fire again while the old leader is still frozen: its new
// leader passes over the held rows and tries them again, and the server
// rolls the frozen transaction back after store.DefaultIdleTxTimeout.
// Thawed, the old leader must write no fire twice, and each schedule has
// exactly one catch-up job for its gap.
func TestFreezeLeader(t *testing.T) {
	t.Run("mysql", func(t *testing.T) { freezeLeader(t, testdb.CreateMySQLDatabase(t)) })
	t.Run("postgres", func(t *testing.T) { freezeLeader(t, testdb.CreatePostgresDatabase(t)) })
}

func freezeLeader(t *testing.T, dsn string) {
	st, ids, nodes, leader := startCluster(t, dsn, "100ms")
	ctx := context.Background()
	// The first leader's first fires are catch-ups for the time since the
	// schedules were inserted: let those pass before the one second
	// checkFires looks back from the freeze.
	waitFor(t, 20*time.Second, "three seconds of fires after the start", func() bool {
		return count(t, st, "SELECT COUNT(*) FROM jobs") > int64(3*len(ids))
	})

	next := time.Now().Truncate(time.Second).Add(time.Second)
	if time.Until(next) < 300*time.Millisecond {
		next = next.Add(time.Second)
	}
	// A wall-clock instant, not an event: 100 ms before next's commit, its
	// batch prepared 200 ms ahead is open and waiting.
	time.Sleep(time.Until(next.Add(-100 * time.Millisecond)))
	require.NoError(t, leader.cmd.Process.Signal(syscall.SIGSTOP))
	thaw := func() { _ = leader.cmd.Process.Signal(syscall.SIGCONT) }
	t.Cleanup(thaw) // before the kill of startNode's cleanup, which runs later
	frozenAt, err := st.DBNow(ctx)
	require.NoError(t, err)
	t.Logf("froze leader %s; a transaction of it open and idle: %v", leader.id, idleTransaction(t, st, dsn))

	var newLeader string
	// When the freeze lands inside the leader's lease renewal (a short
	// transaction: UPDATE leases, then a read, then COMMIT; slow on a loaded
	// machine), the frozen transaction holds the lease row and no survivor
	// can take it until the server rolls it back (store.DefaultIdleTxTimeout):
	// the statements listed on failure then show survivors waiting in
	// UPDATE leases.
	took := waitForOr(t, failover+heartbeat+3*time.Second, "a survivor to take the scheduler lease", func() bool {
		l, err := st.GetLease(ctx, "scheduler")
		if err == nil && l.Live && l.Holder != leader.id {
			newLeader = l.Holder
			return true
		}
		return false
	}, func() string {
		return "idle transaction open: " + idleTransaction(t, st, dsn) + "\nstatements running:\n" + running(t, st, dsn)
	})
	t.Logf("%s took the lease %s after the freeze", newLeader, took.Round(10*time.Millisecond))

	all := int64(len(ids))
	again := waitForOr(t, store.DefaultIdleTxTimeout+15*time.Second, "every schedule to fire again while the old leader is frozen", func() bool {
		return count(t, st, "SELECT COUNT(DISTINCT schedule_id) FROM jobs WHERE scheduled_at > ?", next) == all
	}, func() string {
		return "idle transaction still open: " + idleTransaction(t, st, dsn) + "\nstatements running:\n" + running(t, st, dsn)
	})
	t.Logf("every schedule fired again %s after the freeze", again.Round(100*time.Millisecond))

	thaw()
	waitFor(t, 10*time.Second, "the thawed node to find it no longer leads", func() bool {
		return strings.Contains(leader.out.String(), "no longer leading")
	})
	stopAll(t, st, nodes)
	checkFires(t, st, ids, frozenAt.Add(-time.Second), 1)
	for id, p := range nodes {
		if strings.Contains(p.out.String(), `"level":"fatal"`) {
			t.Errorf("node %s logged a fatal error", id)
		}
	}
}

// idleTransaction reports whether a session sits in an open transaction,
// as the frozen leader's prepared batch does.
func idleTransaction(t *testing.T, st *store.Store, dsn string) string {
	var n int64
	if driverOf(dsn) == store.Postgres {
		n = count(t, st, "SELECT COUNT(*) FROM pg_stat_activity WHERE state = 'idle in transaction' AND datname = current_database()")
	} else {
		n = count(t, st, "SELECT COUNT(*) FROM information_schema.innodb_trx WHERE trx_rows_locked > 0 AND trx_query IS NULL")
	}
	if n > 0 {
		return "yes"
	}
	return "no"
}

// running lists the statements of the database's sessions that have run
// for a second or more: what a node that fires nothing is waiting in.
func running(t *testing.T, st *store.Store, dsn string) string {
	var rows []struct {
		Secs  float64
		State string
		Query string
	}
	q := "SELECT time AS secs, state, info AS query FROM information_schema.processlist WHERE db = DATABASE() AND command <> 'Sleep' AND time >= 1"
	if driverOf(dsn) == store.Postgres {
		q = "SELECT EXTRACT(EPOCH FROM now() - query_start) AS secs, state || ' ' || COALESCE(wait_event, '') AS state, query FROM pg_stat_activity" +
			" WHERE datname = current_database() AND state <> 'idle' AND pid <> pg_backend_pid() AND now() - query_start >= interval '1 second'"
	}
	if err := st.DB().Raw(q).Scan(&rows).Error; err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "  %.0fs %s: %.300s\n", r.Secs, r.State, r.Query)
	}
	return b.String()
}
