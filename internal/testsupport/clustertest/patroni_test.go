package clustertest

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// haScript is the script that runs the Patroni cluster, from this package.
const haScript = "../../../scripts/ha/patroni.sh"

// TestPatroniFailover runs three nodes on a Patroni cluster (etcd, three
// PostgreSQL 15 with synchronous replication: scripts/ha/patroni.sh),
// reached by a multi-host DSN with target_session_attrs=read-write, under
// the harness's every-second schedules, ad-hoc jobs and long jobs
// (requests_recovery). The primary is killed with SIGKILL (Patroni and
// its PostgreSQL, a crashed host) three times, and switched over with
// patronictl three times. After each round the nodes must fire again on
// the new primary without being restarted; at the end the audit finds no
// fire twice, no second lost, nothing unfinished, every long job
// succeeded. It logs, per round, how long no primary existed, how long
// until the nodes fired again, and what /readyz and the API said
// meanwhile.
//
// It starts ten processes and takes minutes, so it runs only when
// CHIME_TEST_PATRONI=1 (scripts/ha/failover-test.sh sets it, after
// installing the packages); never in CI.
func TestPatroniFailover(t *testing.T) {
	if os.Getenv("CHIME_TEST_PATRONI") != "1" {
		t.Skip("CHIME_TEST_PATRONI=1 runs it (scripts/ha/failover-test.sh): it needs etcd and patroni installed and takes minutes")
	}
	for _, c := range []string{"patroni", "etcd"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Fatalf("%s is not installed: run scripts/ha/patroni.sh install", c)
		}
	}
	dir := haCluster(t)
	var rounds []haRound
	for range 3 {
		rounds = append(rounds, haRound{"kill -9", func() error {
			killed, err := haRun(haScript, "kill-leader", dir)
			if err != nil {
				return err
			}
			// Back as a replica once another member leads (started at
			// once, it could find its own leader key still in etcd and
			// lead again): the next round has a synchronous standby.
			for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
				if l, err := haRun(haScript, "leader", dir); err == nil && l != "" && l != killed {
					_, err = haRun(haScript, "start", dir, killed)
					return err
				}
				time.Sleep(200 * time.Millisecond) // Patroni's own pace: its ttl runs out in real time
			}
			return fmt.Errorf("no member took over from %s", killed)
		}}, haRound{"switchover", func() error {
			_, err := haRun(haScript, "switchover", dir)
			return err
		}})
	}
	// CHIME_TEST_PATRONI_DSN=haproxy runs the nodes through HAProxy's
	// primary check instead of the multi-host DSN.
	style := cmp.Or(os.Getenv("CHIME_TEST_PATRONI_DSN"), "multi")
	t.Logf("the nodes reach the primary by the %s DSN", style)
	failoverUnderLoad(t, ha(t, dir, "dsn", dir, style), rounds, pgPrimary, func() { ha(t, dir, "wait-healthy", dir) })
}

// haRound is one fault of failoverUnderLoad: act causes it and returns
// once it is over.
type haRound struct {
	kind string
	act  func() error
}

// failoverUnderLoad runs three nodes on dsn under the harness's
// every-second schedules, ad-hoc and long jobs, through rounds, each
// begun once healthy() returns, and audits at the end; probe says which
// database server takes writes now ("" when none does).
func failoverUnderLoad(t *testing.T, dsn string, rounds []haRound, probe func() string, healthy func()) {
	t.Helper()
	bin := chimeBinary(t)
	migrate(t, bin, dsn)
	st := openStore(t, dsn)
	ids := seedSchedules(t, st, schedules, "300ms")
	long := models.JobDefinition{Name: "long", TaskType: "sleep", MaxAttempts: 1, RequestsRecovery: true, NotifyOn: models.NotifyNever,
		DefaultParams: models.JSON(`{"duration":"8s"}`)}
	require.NoError(t, st.DB().Create(&long).Error)
	short := models.JobDefinition{Name: "ad-hoc", TaskType: "sleep", MaxAttempts: 1, NotifyOn: models.NotifyNever,
		DefaultParams: models.JSON(`{"duration":"100ms"}`)}
	require.NoError(t, st.DB().Create(&short).Error)

	nodes, apis := map[string]*nodeProc{}, map[string]string{}
	for _, id := range []string{"n1", "n2", "n3"} {
		apis[id] = freeAddr(t)
		nodes[id] = startNode(t, bin, dsn, id, "CHIME_API_ADDR="+apis[id])
	}
	waitFor(t, 60*time.Second, "fires", func() bool {
		return count(t, st, "SELECT COUNT(*) FROM jobs WHERE status = ?", models.JobSucceeded) > 0
	})
	start, err := st.DBNow(context.Background())
	require.NoError(t, err)

	adHoc := 0
	for i, rd := range rounds {
		healthy()
		flushIdle(t, st)
		for range 5 {
			testdb.Job(t, st, &testdb.JobOpts{DefinitionID: long.ID})
		}
		for range 20 {
			testdb.Job(t, st, &testdb.JobOpts{DefinitionID: short.ID})
		}
		adHoc += 25
		time.Sleep(2 * time.Second) // real nodes claim the long jobs, so that the fault hits them running
		r := failoverRound(t, rd.kind, st, apis, probe, rd.act)
		t.Logf("round %d (%s): %s", i+1, rd.kind, r)
		for id, p := range nodes {
			require.True(t, p.running(), "node %s exited in round %d:\n%s", id, i+1, tail(p.out.String(), 2048))
		}
	}
	healthy()
	flushIdle(t, st)
	end, err := st.DBNow(context.Background())
	require.NoError(t, err)
	settled(t, st, end)
	stopAll(t, st, nodes)
	t.Logf("run of %s: %d fires, %d jobs in all, %d ad-hoc (%d long, %d of them succeeded)", end.Sub(start).Round(time.Second),
		count(t, st, "SELECT COUNT(*) FROM jobs WHERE schedule_id IS NOT NULL"), count(t, st, "SELECT COUNT(*) FROM jobs"), adHoc,
		count(t, st, "SELECT COUNT(*) FROM jobs WHERE job_definition_id = ?", long.ID),
		count(t, st, "SELECT COUNT(*) FROM jobs WHERE job_definition_id = ? AND status = ?", long.ID, models.JobSucceeded))
	for _, id := range []string{"n1", "n2", "n3"} {
		t.Logf("node %s's warnings and errors:\n%s", id, warnCounts(nodes[id].out.String()))
	}
	var failed []struct {
		Error string
		N     int
	}
	require.NoError(t, st.DB().Raw("SELECT COALESCE(error, '') AS error, COUNT(*) AS n FROM jobs WHERE status = ? GROUP BY error",
		models.JobFailed).Scan(&failed).Error)
	for _, f := range failed {
		t.Logf("%d jobs failed with: %s", f.N, tail(f.Error, 300))
	}
	audit(t, st, ids)
	require.Zero(t, count(t, st, "SELECT COUNT(*) FROM jobs WHERE job_definition_id = ? AND status <> ?", long.ID, models.JobSucceeded),
		"a long job with requests_recovery did not succeed")
}

// haCluster starts the Patroni cluster in a directory of its own, stopped
// at cleanup and removed unless the test failed (its logs are the
// post-mortem). Not t.TempDir: PostgreSQL runs as the postgres user, who
// must reach the directory.
func haCluster(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "chime-patroni-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() {
		out, err := exec.Command(haScript, "down", dir).CombinedOutput()
		if err != nil {
			t.Logf("patroni.sh down: %v\n%s", err, out)
		}
		if t.Failed() {
			t.Logf("the Patroni cluster's data and logs: %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	t.Logf("starting the Patroni cluster in %s", dir)
	ha(t, dir, "up", dir)
	return dir
}

// ha runs scripts/ha/patroni.sh and returns its standard output, trimmed.
func ha(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(haScript, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "patroni.sh %s: %s%s\n(logs in %s)", strings.Join(args, " "), out, stderr.String(), dir)
	return strings.TrimSpace(string(out))
}

// freeAddr is a loopback address nobody listens on, for a node's API: the
// test asks each node's /readyz while no primary exists.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// flushIdle closes the test's idle connections: after a failover they lead
// to a server that is gone or no longer the primary, and the test's
// queries, unlike chime's, are not retried.
func flushIdle(t *testing.T, st *store.Store) {
	t.Helper()
	db, err := st.DB().DB()
	require.NoError(t, err)
	db.SetMaxIdleConns(0)
	db.SetMaxIdleConns(2)
	waitFor(t, 30*time.Second, "the test's connection to the primary", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return st.Ping(ctx) == nil
	})
}

// pgPorts are the members' PostgreSQL ports (patroni.sh's defaults, or
// CHIME_HA_PG_PORT and the next two).
func pgPorts() []int {
	base := 15432
	if v, err := strconv.Atoi(os.Getenv("CHIME_HA_PG_PORT")); err == nil {
		base = v
	}
	return []int{base, base + 1, base + 2}
}

// pgPrimary is the port of the member that answers as a primary, "" when
// none does.
func pgPrimary() string {
	for _, p := range pgPorts() {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		conn, err := pgx.Connect(ctx, fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable connect_timeout=1", p))
		if err == nil {
			var recovery bool
			err = conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovery)
			_ = conn.Close(ctx)
			if err == nil && !recovery {
				cancel()
				return strconv.Itoa(p)
			}
		}
		cancel()
	}
	return ""
}

// round is what failoverRound measured.
type round struct {
	from, to         string         // the writer before and after
	noWriter         time.Duration  // from the last sample of the old writer to the first of the new
	firesAgain       time.Duration  // from the new writer's first sample to the first fire written on it
	allFiring        time.Duration  // ... to every schedule having fired again
	fires, jobs      int64          // written from the fault to the end of the round
	readyz, nodesAPI map[string]int // what the nodes answered while no writer answered
}

func (r round) String() string {
	codes := func(m map[string]int) string {
		if len(m) == 0 {
			return "nothing (never asked)"
		}
		var s []string
		for k, n := range m {
			s = append(s, fmt.Sprintf("%s ×%d", k, n))
		}
		sort.Strings(s)
		return strings.Join(s, ", ")
	}
	return fmt.Sprintf("writer %s → %s; none for %s; first fire %s after the new one answered, every schedule firing %s after; "+
		"%d fires, %d jobs in the round; meanwhile /readyz answered %s, GET /api/v1/nodes %s",
		r.from, r.to, r.noWriter.Round(100*time.Millisecond), r.firesAgain.Round(100*time.Millisecond), r.allFiring.Round(100*time.Millisecond),
		r.fires, r.jobs, codes(r.readyz), codes(r.nodesAPI))
}

// failoverRound runs act, the fault, in the background, and samples the
// writer with probe ("" when none answers) every 100 ms until another one
// than before answers, asking the nodes' /readyz and API while none does;
// then waits for act to return and for the nodes to fire on the new
// writer.
func failoverRound(t *testing.T, kind string, st *store.Store, apis map[string]string, probe func() string, act func() error) round {
	t.Helper()
	r := round{from: probe(), readyz: map[string]int{}, nodesAPI: map[string]int{}}
	require.NotEmpty(t, r.from, "no writer before the round")
	began := time.Now()
	lastOld := began
	done := make(chan error, 1)
	go func() { done <- act() }()
	var promoted time.Time
	for promoted.IsZero() {
		require.Less(t, time.Since(began), 3*time.Minute, "no new writer 3 minutes after the %s", kind)
		switch w := probe(); {
		case w == r.from:
			lastOld = time.Now()
		case w != "":
			r.to, promoted = w, time.Now()
		default:
			for _, addr := range apis {
				r.readyz[httpStatus("http://"+addr+"/readyz")]++
				r.nodesAPI[httpStatus("http://"+addr+"/api/v1/nodes")]++
			}
		}
		time.Sleep(100 * time.Millisecond) // the sampling step: real servers fail over in real time
	}
	r.noWriter = promoted.Sub(lastOld)
	select {
	case err := <-done:
		require.NoError(t, err, kind)
	case <-time.After(3 * time.Minute):
		t.Fatalf("the %s did not finish", kind)
	}
	flushIdle(t, st)
	at := store.DBTime(promoted)
	waitFor(t, 2*time.Minute, "a fire written after the new writer answered", func() bool {
		return count(t, st, "SELECT COUNT(*) FROM jobs WHERE schedule_id IS NOT NULL AND created_at >= ?", at) > 0
	})
	r.firesAgain = time.Since(promoted)
	waitFor(t, 2*time.Minute, "every schedule firing again", func() bool {
		return count(t, st, "SELECT COUNT(DISTINCT schedule_id) FROM jobs WHERE scheduled_at >= ?", at.Add(time.Second)) >= int64(schedules)
	})
	r.allFiring = time.Since(promoted)
	from := store.DBTime(began)
	r.fires = count(t, st, "SELECT COUNT(*) FROM jobs WHERE schedule_id IS NOT NULL AND created_at >= ?", from)
	r.jobs = count(t, st, "SELECT COUNT(*) FROM jobs WHERE created_at >= ?", from)
	return r
}

// haRun is ha for a fault run in the background: an error, not a failure.
func haRun(script string, args ...string) (string, error) {
	out, err := exec.Command(script, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", script, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// httpStatus is the status code of a GET of url with the nodes' token, or
// what kept it from having one.
func httpStatus(url string) string {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err.Error()
	}
	req.Header.Set("Authorization", "Bearer clustertest-token-0123456789")
	c := http.Client{Timeout: 3 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return "no answer"
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	if resp.StatusCode == http.StatusOK {
		return "200"
	}
	return fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
}

// warnCounts counts a node log's warnings and errors by message.
func warnCounts(log string) string {
	n := map[string]int{}
	for line := range strings.Lines(log) {
		if strings.Contains(line, `"level":"info"`) || strings.Contains(line, `"level":"debug"`) || strings.TrimSpace(line) == "" {
			continue
		}
		msg := line
		if i := strings.Index(line, `"msg":"`); i >= 0 {
			msg = line[i+7:]
			if j := strings.Index(msg, `"`); j >= 0 {
				msg = msg[:j]
			}
		}
		n[strings.TrimSpace(msg)]++
	}
	var lines []string
	for m, c := range n {
		lines = append(lines, fmt.Sprintf("  %5d× %s", c, m))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
