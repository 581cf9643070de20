package clustertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/syncbuf"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// Cluster settings every process of these tests runs with: short windows
// so a failover takes seconds, not the production 20 s.
// CHIME_CLUSTERTEST_HEARTBEAT, _FAILOVER and _SCHEDULES override them, to
// replay a reported run's parameters (e.g. 1s, 4s and 50).
var (
	heartbeat = envDuration("CHIME_CLUSTERTEST_HEARTBEAT", 500*time.Millisecond)
	failover  = envDuration("CHIME_CLUSTERTEST_FAILOVER", 2*time.Second)
	schedules = envInt("CHIME_CLUSTERTEST_SCHEDULES", 100)
)

func envDuration(name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		panic(fmt.Sprintf("%s=%q: want a positive duration", name, v))
	}
	return d
}

func envInt(name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		panic(fmt.Sprintf("%s=%q: want a positive integer", name, v))
	}
	return n
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildDir  string
)

// chimeBinary builds ./cmd/chime once per test binary into a temporary
// directory removed by TestMain.
func chimeBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "chime-clustertest-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "chime")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/chimesched/chime/cmd/chime").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// nodeProc is one `chime serve` child process.
type nodeProc struct {
	id   string
	cmd  *exec.Cmd
	out  *syncbuf.Buffer
	done chan struct{}
	err  error // set before done closes
}

// driverOf says which database dsn reaches: a libpq URL or key=value DSN
// (the multi-host form of the Patroni test) is PostgreSQL, anything else
// a go-sql-driver DSN for MariaDB.
func driverOf(dsn string) store.Dialect {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") || strings.HasPrefix(dsn, "host=") {
		return store.Postgres
	}
	return store.MySQL
}

// nodeEnv is the environment of every node on dsn.
func nodeEnv(dsn, id string) []string {
	return append(os.Environ(),
		"CHIME_DATABASE_DRIVER="+string(driverOf(dsn)),
		"CHIME_DATABASE_DSN="+dsn,
		"CHIME_NODE_ID="+id,
		"CHIME_CLUSTER_HEARTBEAT="+heartbeat.String(),
		"CHIME_CLUSTER_FAILOVER_AFTER="+failover.String(),
		"CHIME_TASKENGINE_POLL_INTERVAL=500ms",
		"CHIME_TASKENGINE_POOL_SIZE=32",
		"CHIME_SCHEDULEENGINE_SYNC_INTERVAL=1s",
		"CHIME_API_ADDR=127.0.0.1:0",
		// Else every node would write a token file into the user's configuration directory.
		"CHIME_API_TOKEN=clustertest-token-0123456789",
		"CHIME_SHUTDOWN_GRACE=2s",
		"CHIME_LOG_FORMAT=json",
	)
}

// migrate runs `chime migrate` once, so the serving nodes need not race to
// apply the schema.
func migrate(t *testing.T, bin, dsn string) {
	t.Helper()
	cmd := exec.Command(bin, "migrate")
	cmd.Env = nodeEnv(dsn, "migrate")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "chime migrate: %s", out)
}

// startNode starts `chime serve --no-migrate` as node id; it is killed at
// cleanup. extra (NAME=value) overrides nodeEnv's settings.
func startNode(t *testing.T, bin, dsn, id string, extra ...string) *nodeProc {
	t.Helper()
	p := &nodeProc{id: id, out: &syncbuf.Buffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, "serve", "--no-migrate")
	p.cmd.Env = append(nodeEnv(dsn, id), extra...) // exec keeps the last value of a name
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		keepLog(t, p)
	})
	return p
}

// keepLog saves a node's whole log where a post-mortem can read it: in
// CHIME_CLUSTERTEST_LOGDIR when set (every run), else, when the test
// failed, in a directory of its own that outlives the test (t.TempDir
// does not), named in the output. The warnings and errors, and the log's
// last 4 KiB, go into the test's output as well: in CI they may be all
// that is kept.
func keepLog(t *testing.T, p *nodeProc) {
	out := p.out.String()
	dir := os.Getenv("CHIME_CLUSTERTEST_LOGDIR")
	if dir == "" && !t.Failed() {
		return
	}
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "chime-clustertest-logs-"); err != nil {
			t.Logf("cannot keep node %s's log: %v", p.id, err)
		}
	}
	name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name()) + "-" + p.id + ".log"
	if dir != "" {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(out), 0o644); err != nil {
			t.Logf("cannot keep node %s's log: %v", p.id, err)
		} else if t.Failed() {
			t.Logf("node %s's whole log (%d bytes): %s", p.id, len(out), filepath.Join(dir, name))
		}
	}
	if t.Failed() {
		t.Logf("node %s: its warnings and errors:\n%s\nits last 4 KiB:\n%s", p.id, notable(out), tail(out, 4096))
	}
}

// notable keeps the log's lines above info (JSON lines whose level is
// warning, error or fatal, and lines that are not JSON: a panic, a
// driver's own messages), repeats of one message folded into a count.
func notable(log string) string {
	var b strings.Builder
	last, repeats := "", 0
	flush := func() {
		if repeats > 0 {
			fmt.Fprintf(&b, "  (the same message %d more times)\n", repeats)
		}
		repeats = 0
	}
	for line := range strings.Lines(log) {
		if strings.Contains(line, `"level":"info"`) || strings.Contains(line, `"level":"debug"`) || strings.TrimSpace(line) == "" {
			continue
		}
		msg := line
		if i := strings.Index(line, `"msg":`); i >= 0 {
			msg = line[i:]
			if j := strings.Index(msg, `","`); j >= 0 {
				msg = msg[:j]
			}
		}
		if msg == last {
			repeats++
			continue
		}
		flush()
		last = msg
		b.WriteString(line)
		if !strings.HasSuffix(line, "\n") {
			b.WriteByte('\n')
		}
	}
	flush()
	return b.String()
}

// stopAll stops the nodes gracefully, the scheduler lease's holder last. A
// leader stopped first gives the lease up, and a node that takes it while
// it is being stopped itself may write a catch-up job for the fires the
// hand-over missed: one more than the fire checks expect, and not what
// they test.
func stopAll(t *testing.T, st *store.Store, nodes map[string]*nodeProc) {
	t.Helper()
	holder := ""
	if l, err := st.GetLease(context.Background(), "scheduler"); err == nil && l.Live {
		holder = l.Holder
	}
	for id, p := range nodes {
		if id != holder {
			p.stop(t, 10*time.Second)
		}
	}
	if p := nodes[holder]; p != nil {
		p.stop(t, 10*time.Second)
	}
}

func (p *nodeProc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL: no deferred code, no lease release, no goodbye.
func (p *nodeProc) kill() {
	if p.running() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-p.done
}

// stop sends SIGTERM and waits up to d for a graceful exit.
func (p *nodeProc) stop(t *testing.T, d time.Duration) {
	t.Helper()
	if !p.running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(d):
		t.Errorf("node %s did not stop within %s after SIGTERM", p.id, d)
		p.kill()
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// openStore opens the test's own connection to the cluster's database.
func openStore(t *testing.T, dsn string) *store.Store {
	t.Helper()
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	st, err := store.Open(context.Background(), store.Config{Driver: driverOf(dsn), DSN: dsn, Logger: log, MaxOpenConns: 4})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// seedSchedules inserts a sleep definition and n schedules firing every
// second, the way an admin would: plain rows in schedules.
func seedSchedules(t *testing.T, st *store.Store, n int, sleep string) []int64 {
	t.Helper()
	db := st.DB()
	def := models.JobDefinition{
		Name: "cluster-sleep", TaskType: "sleep", MaxAttempts: 1, NotifyOn: models.NotifyNever,
		DefaultParams: models.JSON(`{"duration":"` + sleep + `"}`),
	}
	// The columns later releases added are left out: the rolling-upgrade
	// test seeds a database of the last release's schema.
	require.NoError(t, db.Omit("queue", "max_running", "required_tags", "broadcast", "rate_limit", "rate_period_ms", "rate_tat_us").
		Create(&def).Error)
	expr := "* * * * * *"
	scheds := make([]models.Schedule, n)
	for i := range scheds {
		scheds[i] = models.Schedule{
			Name: fmt.Sprintf("every-second-%03d", i), JobDefinitionID: def.ID, ScheduleType: models.ScheduleCron, CronExpr: &expr,
			Timezone: "UTC", MisfirePolicy: models.MisfireFireOnce, Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive,
		}
	}
	require.NoError(t, db.Omit("queue", "required_tags", "workflow_id").Create(&scheds).Error)
	ids := make([]int64, n)
	for i, s := range scheds {
		ids[i] = s.ID
	}
	return ids
}

// waitFor polls cond every 50 ms until it holds or d passes; the bound is
// the assertion, the polling only how soon we notice.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	return waitForOr(t, d, what, cond, nil)
}

// waitForOr is waitFor that adds diag() to the failure message.
func waitForOr(t *testing.T, d time.Duration, what string, cond func() bool, diag func() string) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > d {
			msg := ""
			if diag != nil {
				msg = "\n" + diag()
			}
			t.Fatalf("timed out after %s waiting for %s%s", d, what, msg)
		}
		time.Sleep(50 * time.Millisecond) // the poll step: real processes on a real database
	}
	return time.Since(start)
}

func count(t *testing.T, st *store.Store, q string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, st.DB().Raw(q, args...).Scan(&n).Error)
	return n
}

// fireRow is what the checks need of a job.
type fireRow struct {
	ID          int64
	ScheduleID  int64
	ScheduledAt time.Time
	CatchUp     bool
	MissedFires int
	Status      models.JobStatus
	NodeID      string
	Error       *string
	CreatedAt   time.Time
}

func fires(t *testing.T, st *store.Store) []fireRow {
	t.Helper()
	var rows []fireRow
	require.NoError(t, st.DB().Raw(`SELECT id, schedule_id, scheduled_at, catch_up, missed_fires, status, node_id, error, created_at
		FROM jobs WHERE schedule_id IS NOT NULL ORDER BY schedule_id, scheduled_at`).Scan(&rows).Error)
	return rows
}

// checkFires asserts, for the fires of every schedule: no (schedule_id,
// scheduled_at) twice, exactly wantCatchUps catch-up jobs among those
// scheduled after since, and no hole in the cadence: each fire follows the
// previous by one second, or by missed_fires seconds when it is the
// catch-up job standing for that many missed fires.
func checkFires(t *testing.T, st *store.Store, scheduleIDs []int64, since time.Time, wantCatchUps int) {
	t.Helper()
	require.Zero(t, count(t, st, `SELECT COUNT(*) FROM (SELECT schedule_id, scheduled_at FROM jobs WHERE schedule_id IS NOT NULL
		GROUP BY schedule_id, scheduled_at HAVING COUNT(*) > 1) d`), "a (schedule_id, scheduled_at) was written twice")
	bySched := map[int64][]fireRow{}
	for _, f := range fires(t, st) {
		bySched[f.ScheduleID] = append(bySched[f.ScheduleID], f)
	}
	var problems []string
	for _, id := range scheduleIDs {
		fs := bySched[id]
		sort.Slice(fs, func(i, j int) bool { return fs[i].ScheduledAt.Before(fs[j].ScheduledAt) })
		var catchUps []string // when each was due and written: who wrote it, and why, is in the nodes' logs then
		for i, f := range fs {
			if f.CatchUp && f.ScheduledAt.After(since) {
				catchUps = append(catchUps, fmt.Sprintf("%s (missed %d, written %s)",
					f.ScheduledAt.Format("15:04:05.000"), f.MissedFires, f.CreatedAt.Format("15:04:05.000")))
			}
			if i == 0 {
				continue
			}
			step := f.ScheduledAt.Sub(fs[i-1].ScheduledAt)
			want := time.Second
			if f.CatchUp {
				want = time.Duration(f.MissedFires) * time.Second
			}
			if step != want {
				problems = append(problems, fmt.Sprintf("schedule %d: %s after %s (catch_up=%v missed=%d): step %s, want %s",
					id, f.ScheduledAt.Format("15:04:05.000"), fs[i-1].ScheduledAt.Format("15:04:05.000"), f.CatchUp, f.MissedFires, step, want))
			}
		}
		if len(catchUps) != wantCatchUps {
			problems = append(problems, fmt.Sprintf("schedule %d: %d catch-up jobs after %s, want %d: %s",
				id, len(catchUps), since.Format("15:04:05.000"), wantCatchUps, strings.Join(catchUps, ", ")))
		}
	}
	if len(problems) > 0 {
		t.Errorf("%d problems in the fire record, first ones:\n%s", len(problems), strings.Join(problems[:min(len(problems), 20)], "\n"))
	}
}

// figures are the throughput and lateness of jobs in a window.
type figures struct {
	FiredPerSec, FinishedPerSec float64
	// FireLateMs is created_at − scheduled_at (the fire written), StartLateMs
	// started_at − scheduled_at (the task started), both averages in ms.
	FireLateMs, StartLateMs, MaxStartLateMs float64
}

func (f figures) String() string {
	return fmt.Sprintf("%.0f fires/s, %.0f of them/s succeeded, fire written %.0f ms after scheduled_at, task started %.0f ms after (max %.0f ms)",
		f.FiredPerSec, f.FinishedPerSec, f.FireLateMs, f.StartLateMs, f.MaxStartLateMs)
}

// measure reads the figures of jobs scheduled in [from, to), computed here
// so that the SQL is the same on every database; callers leave a second
// after to, so those jobs have had time to finish.
func measure(t *testing.T, st *store.Store, from, to time.Time) figures {
	t.Helper()
	secs := to.Sub(from).Seconds()
	var jobs []models.Job
	require.NoError(t, st.DB().Select("status, scheduled_at, created_at, started_at").
		Where("scheduled_at >= ? AND scheduled_at < ?", from, to).Find(&jobs).Error)
	var f figures
	var finished, started int
	var fireLate, startLate float64
	for _, j := range jobs {
		if j.Status == models.JobSucceeded {
			finished++
		}
		fireLate += float64(j.CreatedAt.Sub(j.ScheduledAt).Microseconds()) / 1000
		if j.StartedAt != nil {
			late := float64(j.StartedAt.Sub(j.ScheduledAt).Microseconds()) / 1000
			started++
			startLate += late
			f.MaxStartLateMs = max(f.MaxStartLateMs, late)
		}
	}
	f.FiredPerSec, f.FinishedPerSec = float64(len(jobs))/secs, float64(finished)/secs
	if len(jobs) > 0 {
		f.FireLateMs = fireLate / float64(len(jobs))
	}
	if started > 0 {
		f.StartLateMs = startLate / float64(started)
	}
	return f
}

// unfinished describes the jobs scheduled before at that have not finished.
func unfinished(t *testing.T, st *store.Store, at time.Time) string {
	t.Helper()
	var rows []struct {
		Status  string
		NodeID  string
		Control string
		N       int
		Oldest  time.Time
		MinID   int64
	}
	require.NoError(t, st.DB().Raw(`SELECT status, node_id, control, COUNT(*) AS n, MIN(scheduled_at) AS oldest, MIN(id) AS min_id
		FROM jobs WHERE scheduled_at < ? AND status NOT IN ('succeeded', 'failed') GROUP BY status, node_id, control`, at).Scan(&rows).Error)
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%d %s on %q (control %q), oldest scheduled %s, e.g. job %d\n", r.N, r.Status, r.NodeID, r.Control, r.Oldest.Format("15:04:05.000"), r.MinID)
		var logs []models.JobLog
		_ = st.DB().Where("job_id = ?", r.MinID).Order("id").Find(&logs).Error
		for _, l := range logs {
			fmt.Fprintf(&b, "    %s %s %s\n", l.CreatedAt.Format("15:04:05.000"), l.Level, l.Message)
		}
	}
	return b.String()
}
