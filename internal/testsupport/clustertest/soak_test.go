package clustertest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/faultproxy"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
)

// soak is how long TestChaosSoak injects faults (CHIME_CLUSTERTEST_SOAK):
// 60 s by default, for CI; scripts/chaos/soak.sh runs it for 30 minutes.
var soak = envDuration("CHIME_CLUSTERTEST_SOAK", 60*time.Second)

// TestChaosSoak runs three nodes, each behind its own fault proxy, under
// the harness's every-second schedules and a trickle of long ad-hoc jobs
// (requests_recovery), and for `soak` injects one fault after another at
// random: a node killed with SIGKILL and restarted, a node frozen with
// SIGSTOP (sometimes past the failover window), a node's link blackholed,
// every connection cut at once (what a database restart or failover looks
// like from the nodes), 200 ms latency on a link. Then it heals
// everything and audits: no fire twice, no second lost, nothing left
// unfinished; it logs how many faults of each kind it injected, and how
// many jobs failed (a cut-off run of a job without requests_recovery
// fails with the reason, by design).
func TestChaosSoak(t *testing.T) {
	dsn := testdb.CreateMySQLDatabase(t)
	if strings.EqualFold(os.Getenv("CHIME_CLUSTERTEST_SOAK_DB"), "postgres") {
		dsn = testdb.CreatePostgresDatabase(t)
	}
	bin := chimeBinary(t)
	migrate(t, bin, dsn)
	st := openStore(t, dsn)
	ids := seedSchedules(t, st, schedules, "300ms")
	long := models.JobDefinition{Name: "long", TaskType: "sleep", MaxAttempts: 1, RequestsRecovery: true, NotifyOn: models.NotifyNever,
		DefaultParams: models.JSON(`{"duration":"3s"}`)}
	require.NoError(t, st.DB().Create(&long).Error)
	names := []string{"n1", "n2", "n3"}
	nodes, proxies, dsns := map[string]*nodeProc{}, map[string]*faultproxy.Proxy{}, map[string]string{}
	for _, id := range names {
		dsns[id], proxies[id] = viaProxy(t, dsn)
		nodes[id] = startNode(t, bin, dsns[id], id)
	}
	waitFor(t, 30*time.Second, "fires", func() bool {
		return count(t, st, "SELECT COUNT(*) FROM jobs WHERE status = ?", models.JobSucceeded) > 0
	})
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	pause := func(lo, hi time.Duration) { time.Sleep(lo + time.Duration(rng.Int64N(int64(hi-lo)))) }
	faults := map[string]int{}
	adHoc := 0
	deadline := time.Now().Add(soak)
	for time.Now().Before(deadline) {
		for range 5 {
			testdb.Job(t, st, &testdb.JobOpts{DefinitionID: long.ID})
			adHoc++
		}
		id := names[rng.IntN(len(names))]
		switch k := rng.IntN(5); k {
		case 0:
			faults["kill -9 and restart"]++
			nodes[id].kill()
			pause(500*time.Millisecond, 3*time.Second)
			nodes[id] = startNode(t, bin, dsns[id], id)
		case 1:
			faults["SIGSTOP"]++
			p := nodes[id].cmd.Process
			_ = p.Signal(syscall.SIGSTOP)
			pause(time.Second, 2*failover)
			_ = p.Signal(syscall.SIGCONT)
		case 2:
			faults["blackhole"]++
			proxies[id].Blackhole()
			pause(time.Second, 3*failover)
			proxies[id].Heal()
		case 3:
			faults["every connection cut"]++
			for _, p := range proxies {
				p.Cut()
			}
		case 4:
			faults["200 ms latency"]++
			proxies[id].SetLatency(200 * time.Millisecond)
			pause(time.Second, 2*failover)
			proxies[id].SetLatency(0)
		}
		pause(2*time.Second, 5*time.Second) // the cluster recovers between faults
	}
	for _, id := range names {
		require.True(t, nodes[id].running(), "node %s exited: %v\n%s", id, nodes[id].err, tail(nodes[id].out.String(), 2048))
	}
	end, err := st.DBNow(context.Background())
	require.NoError(t, err)
	settled(t, st, end)
	for _, p := range nodes {
		p.stop(t, 15*time.Second)
	}
	var kinds []string
	for k, n := range faults {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(kinds)
	t.Logf("soak of %s: %s; %d ad-hoc long jobs, %d of them succeeded", soak, strings.Join(kinds, ", "), adHoc,
		count(t, st, "SELECT COUNT(*) FROM jobs WHERE job_definition_id = ? AND status = ?", long.ID, models.JobSucceeded))
	audit(t, st, ids)
	require.Zero(t, count(t, st, "SELECT COUNT(*) FROM jobs WHERE job_definition_id = ? AND status <> ?", long.ID, models.JobSucceeded),
		"a long job with requests_recovery did not succeed")
}
