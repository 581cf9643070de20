package taskengine

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testdb"
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
	e, err := New(st, Config{
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

// syncBuffer is written by exec's copying goroutine and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A node process killed mid-run: after a restart with the same node id the
// job runs again, as attempt 2, and succeeds.
func TestProcessKilledMidRun(t *testing.T) {
	t.Parallel()
	for _, d := range testdb.Dialects {
		t.Run(string(d), func(t *testing.T) {
			cfg := testdb.Config(t, d)
			ctx := context.Background()
			st, err := store.Open(ctx, cfg)
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			_, err = st.Migrate(ctx)
			require.NoError(t, err)
			db := st.DB()
			id := insertJob(t, db, createDef(t, db, "crashy", defOpts{Params: `{"duration":"1500ms"}`, MaxAttempts: 2}), "")

			node := nodeName(t)
			child := exec.Command(os.Args[0], "-test.run=^$")
			child.Env = append(os.Environ(), envCrashChild+"="+node, envCrashDriver+"="+string(cfg.Driver), envCrashDSN+"="+cfg.DSN)
			out := &syncBuffer{}
			child.Stdout, child.Stderr = out, out
			require.NoError(t, child.Start())
			t.Cleanup(func() {
				_ = child.Process.Kill()
				if t.Failed() {
					t.Logf("child output:\n%s", out.String())
				}
			})
			j := waitJob(t, db, id, "running in the child", func(j models.Job) bool {
				return j.Status == models.JobRunning || j.Status.Finished()
			})
			require.Equal(t, models.JobRunning, j.Status)
			require.NoError(t, child.Process.Kill()) // SIGKILL: no graceful stop
			_ = child.Wait()
			j = getJob(t, db, id)
			require.Equal(t, models.JobRunning, j.Status, "the dead process left it running")
			require.Equal(t, 1, j.Attempt)

			startEngine(t, st, testConfig(t, node))
			j = waitStatus(t, db, id, models.JobSucceeded)
			require.Equal(t, 2, j.Attempt)
			waitLog(t, db, id, "died during attempt 1 of 2; retrying")
			waitLog(t, db, id, "running: attempt 2 of 2")
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
		def := createDef(t, db, "once", defOpts{Params: `{"duration":"0s"}`})
		running := insertJob(t, db, def, "")
		queued := insertJob(t, db, def, "")
		now := store.DBTime(time.Now())
		require.NoError(t, db.Exec(`UPDATE jobs SET status = 'running', attempt = 1, node_id = ?, started_at = ? WHERE id = ?`, node, now, running).Error)
		require.NoError(t, db.Exec(`UPDATE jobs SET status = 'queued', node_id = ?, queued_at = ? WHERE id = ?`, node, now, queued).Error)
		res, err := st.RecoverNode(context.Background(), &store.RecoverNodeParams{NodeID: node, Now: time.Now()})
		require.NoError(t, err)
		require.Equal(t, []int64{running}, res.Failed)
		require.Equal(t, []int64{queued}, res.Released)
		j := getJob(t, db, running)
		require.Equal(t, models.JobFailed, j.Status)
		require.Contains(t, deref(j.Error), "no attempts left")
		q := getJob(t, db, queued)
		require.Equal(t, models.JobPending, q.Status)
		require.Equal(t, 0, q.Attempt)
		// The queued one now runs normally, on the restarted node.
		startEngine(t, st, testConfig(t, node))
		waitStatus(t, db, queued, models.JobSucceeded)
	})
}
