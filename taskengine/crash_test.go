package taskengine

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/syncbuf"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// Environment of the child process the crash test starts and kills.
const (
	envCrashChild  = "CHIME_TASKENGINE_CRASH_CHILD"
	envCrashDriver = "CHIME_TASKENGINE_CRASH_DRIVER"
	envCrashDSN    = "CHIME_TASKENGINE_CRASH_DSN"
)

// crashChild runs an engine as node envCrashChild against the database in
// the environment until it is killed.
func crashChild() {
	log := logrus.New()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{Driver: store.Dialect(os.Getenv(envCrashDriver)), DSN: os.Getenv(envCrashDSN), Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(2)
	}
	// Not testConfig: flags are not parsed in the child, so testing.Verbose would panic.
	e, err := New(st, &Config{
		NodeID: os.Getenv(envCrashChild), Logger: log, Registry: testRegistry(),
		PollInterval: 100 * time.Millisecond, ControlInterval: 50 * time.Millisecond,
	})
	if err == nil {
		err = e.Start(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(2)
	}
	fmt.Println("crash child: engine started")
	select {} // until kill -9
}

// startCrashChild starts an engine as node in a child process on cfg's
// database; kill kills it with SIGKILL (no graceful stop) and waits for it.
func startCrashChild(t *testing.T, cfg store.Config, node string) (kill func()) {
	t.Helper()
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), envCrashChild+"="+node, envCrashDriver+"="+string(cfg.Driver), envCrashDSN+"="+cfg.DSN)
	out := &syncbuf.Buffer{}
	child.Stdout, child.Stderr = out, out
	require.NoError(t, child.Start())
	t.Cleanup(func() {
		_ = child.Process.Kill()
		if t.Failed() {
			t.Logf("child output:\n%s", out.String())
		}
	})
	return func() {
		require.NoError(t, child.Process.Kill())
		_ = child.Wait()
	}
}

// A node process killed mid-run: after a restart with the same node id the
// job runs again, as attempt 2, and succeeds (its definition does not
// request recovery, so the lost run used an attempt).
func TestProcessKilledMidRun(t *testing.T) {
	t.Parallel()
	for _, d := range testdb.Dialects {
		t.Run(string(d), func(t *testing.T) {
			st, cfg := testdb.OpenConfig(t, d)
			db := st.DB()
			id := adHocJob(t, st, &testdb.DefinitionOpts{Name: "crashy", DefaultParams: `{"duration":"1500ms"}`, MaxAttempts: 2})

			node := nodeName(t)
			kill := startCrashChild(t, cfg, node)
			j := waitJob(t, st, id, "running in the child", func(j models.Job) bool {
				return j.Status == models.JobRunning || j.Status.Finished()
			})
			require.Equal(t, models.JobRunning, j.Status)
			kill()
			j = testdb.GetJob(t, st, id)
			require.Equal(t, models.JobRunning, j.Status, "the dead process left it running")
			require.Equal(t, 1, j.Attempt)

			e := startEngine(t, st, testConfig(t, node))
			j = waitOutcome(t, e, st, id, models.JobSucceeded)
			require.Equal(t, 2, j.Attempt)
			requireLog(t, db, id, "died during attempt 1 of 2; retrying (requests_recovery is off)")
			requireLog(t, db, id, "running: attempt 2 of 2")
		})
	}
}

// A node process killed mid-run, its jobs recovered by another node (as
// the cluster's reaper does): the job whose definition requests recovery
// runs again on the other node as the same attempt, without using one, and
// succeeds although max_attempts is 1; the one that does not request it
// fails with the reason, naming the lost node.
func TestNodeLossRecovery(t *testing.T) {
	t.Parallel()
	for _, d := range testdb.Dialects {
		t.Run(string(d), func(t *testing.T) {
			st, cfg := testdb.OpenConfig(t, d)
			db := st.DB()
			onDef := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "recover-on", DefaultParams: `{"duration":"1500ms"}`}).ID
			offDef := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "recover-off", DefaultParams: `{"duration":"1500ms"}`}).ID
			require.NoError(t, db.Exec(`UPDATE job_definitions SET requests_recovery = ? WHERE id = ?`, true, onDef).Error)
			on := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: onDef}).ID
			off := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: offDef}).ID

			lost := nodeName(t) + "-lost"
			kill := startCrashChild(t, cfg, lost)
			for _, id := range []int64{on, off} {
				j := waitJob(t, st, id, "running in the child", func(j models.Job) bool {
					return j.Status == models.JobRunning || j.Status.Finished()
				})
				require.Equal(t, models.JobRunning, j.Status)
			}
			kill()

			// What the reaper of a live node does once the lost one is declared dead.
			res, err := st.RecoverNode(context.Background(), &chimedb.RecoverNodeParams{NodeID: lost, Now: time.Now()})
			require.NoError(t, err)
			require.Equal(t, []int64{on}, res.Recovered)
			require.Equal(t, []int64{off}, res.Failed)
			j := testdb.GetJob(t, st, on)
			require.Equal(t, models.JobPending, j.Status)
			require.Equal(t, 0, j.Attempt, "no attempt used by the lost run")
			f := testdb.GetJob(t, st, off)
			require.Equal(t, models.JobFailed, f.Status)
			require.Contains(t, deref(f.Error), "node "+lost+" died during attempt 1 of 1; no attempts left (requests_recovery is off)")

			other := nodeName(t) + "-other"
			e := startEngine(t, st, testConfig(t, other))
			j = waitOutcome(t, e, st, on, models.JobSucceeded)
			require.Equal(t, other, j.NodeID)
			require.Equal(t, 1, j.Attempt, "the rerun is attempt 1 again")
			require.Equal(t, 1, j.Recoveries)
			requireLog(t, db, on, "node "+lost+" died during attempt 1 of 1; recovering (requests_recovery)")
			// The lost run's own lines may have died in the child's log buffer.
			requireLog(t, db, on, "running: attempt 1 of 1")
			require.Equal(t, models.JobFailed, testdb.GetJob(t, st, off).Status)
		})
	}
}

// With no attempt left, the job a dead process was running fails with the
// reason, and its queued jobs go back to pending unchanged.
func TestRecoveryFailsJobWithoutAttemptsLeft(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		node := nodeName(t)
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "once", DefaultParams: `{"duration":"0s"}`}).ID
		running := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def}).ID
		queued := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def}).ID
		now := store.DBTime(time.Now())
		require.NoError(t, db.Exec(`UPDATE jobs SET status = 'running', attempt = 1, node_id = ?, started_at = ? WHERE id = ?`, node, now, running).Error)
		require.NoError(t, db.Exec(`UPDATE jobs SET status = 'queued', node_id = ?, queued_at = ? WHERE id = ?`, node, now, queued).Error)
		res, err := st.RecoverNode(context.Background(), &chimedb.RecoverNodeParams{NodeID: node, Now: time.Now()})
		require.NoError(t, err)
		require.Equal(t, []int64{running}, res.Failed)
		require.Equal(t, []int64{queued}, res.Released)
		j := testdb.GetJob(t, st, running)
		require.Equal(t, models.JobFailed, j.Status)
		require.Contains(t, deref(j.Error), "died during attempt 1 of 1; no attempts left (requests_recovery is off)")
		q := testdb.GetJob(t, st, queued)
		require.Equal(t, models.JobPending, q.Status)
		require.Equal(t, 0, q.Attempt)
		// The queued one now runs normally, on the restarted node.
		e := startEngine(t, st, testConfig(t, node))
		waitOutcome(t, e, st, queued, models.JobSucceeded)
	})
}
