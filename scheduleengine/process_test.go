package scheduleengine

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// Environment of the child process TestKilledAndRestarted starts and kills.
const (
	envChildNode   = "CHIME_SCHEDULEENGINE_CHILD_NODE"
	envChildDriver = "CHIME_SCHEDULEENGINE_CHILD_DRIVER"
	envChildDSN    = "CHIME_SCHEDULEENGINE_CHILD_DSN"
)

// TestHelperEngineProcess is not a test: it is the body of the child
// process TestKilledAndRestarted runs (the test binary started again with
// -test.run pointing here), an engine that fires until it is killed.
func TestHelperEngineProcess(t *testing.T) {
	node := os.Getenv(envChildNode)
	if node == "" {
		t.Skip("only runs as the child of TestKilledAndRestarted")
	}
	ctx := context.Background()
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	st, err := store.Open(ctx, store.Config{Driver: store.Dialect(os.Getenv(envChildDriver)), DSN: os.Getenv(envChildDSN), Logger: log})
	if err == nil {
		var e *Engine
		if e, err = New(st, &Config{NodeID: node, Leadership: leading(), Logger: log, SyncInterval: 200 * time.Millisecond}); err == nil {
			err = e.Start(ctx)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "engine child:", err)
		os.Exit(2)
	}
	select {} // until kill -9
}

// A schedule inserted by plain SQL fires once per second, one job per
// second; the engine's process is then killed without any stop, and an
// engine started 7 s later writes exactly one catch-up job for the gap
// before the cadence resumes (the paper's restore rule, figure 4).
func TestKilledAndRestarted(t *testing.T) {
	t.Parallel()
	for _, d := range testdb.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			cfg := testdb.MigratedConfig(t, d)
			ctx := context.Background()
			st, err := store.Open(ctx, cfg)
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			_, err = st.Migrate(ctx)
			require.NoError(t, err)
			db := st.DB()
			require.NoError(t, db.Exec(`INSERT INTO job_definitions (name, task_type) VALUES ('tick', 'sleep')`).Error)
			require.NoError(t, db.Exec(`INSERT INTO schedules (name, job_definition_id, schedule_type, cron_expr)
				VALUES ('every-second', (SELECT id FROM job_definitions WHERE name = 'tick'), 'cron', '* * * * * *')`).Error)

			child := startChild(t, cfg)

			jobs := func() []models.Job {
				var js []models.Job
				require.NoError(t, db.Order("scheduled_at").Find(&js).Error)
				return js
			}
			require.Eventually(t, func() bool { return len(jobs()) >= 4 }, 15*time.Second, 50*time.Millisecond)
			child.kill(t) // SIGKILL: no stop, no lease release
			// The child may have started late enough to miss its first
			// occurrence (a slow -race start): count misfires from here.
			var trBefore models.TimeTrigger
			require.NoError(t, db.Take(&trBefore).Error)
			before := jobs()
			last := before[len(before)-1].ScheduledAt
			requireOnePerSecond(t, before)

			// The downtime itself: the killed child fired on the real clock
			// against a real database, so the occurrences it misses must
			// pass in real time; nothing runs meanwhile that could signal.
			time.Sleep(7 * time.Second)
			log := logrus.New()
			log.SetLevel(logrus.WarnLevel)
			e, err := New(st, &Config{NodeID: "n1", Leadership: leading(), Logger: log})
			require.NoError(t, err)
			e.testSignals.fired.Init(t)
			e.testSignals.synced.Init(t)
			require.NoError(t, e.Start(ctx))
			restore := e.testSignals.synced.WaitOrTimeout()
			require.True(t, restore.full, "a start reads every schedule")
			require.NoError(t, restore.err)
			waitFired(t, e, func() bool {
				js := jobs()
				return js[len(js)-1].ScheduledAt.After(last.Add(9 * time.Second))
			}, "fires resume after the restart")
			require.NoError(t, e.Stop(ctx))

			after := jobs()[len(before):]
			var catchUps []models.Job
			for _, j := range after {
				if j.CatchUp {
					catchUps = append(catchUps, j)
				}
			}
			require.Len(t, catchUps, 1, "one catch-up job for the whole gap")
			c := catchUps[0]
			require.Equal(t, c.ID, after[0].ID, "the catch-up comes first")
			require.GreaterOrEqual(t, c.MissedFires, 7, "at least the 7 s the engine was down")
			require.True(t, c.ScheduledAt.Equal(last.Add(time.Duration(c.MissedFires)*time.Second)),
				"the catch-up carries the latest missed time: last %v + %d s, got %v", last, c.MissedFires, c.ScheduledAt)
			requireOnePerSecond(t, after)

			var tr models.TimeTrigger
			require.NoError(t, db.Take(&tr).Error)
			require.EqualValues(t, c.MissedFires, tr.MisfiredCount-trBefore.MisfiredCount, "every missed fire is counted, the one written for them included")
		})
	}
}

// child is TestHelperEngineProcess run as a process of its own.
type child struct {
	cmd    *exec.Cmd
	killed bool
}

// startChild starts an engine process on cfg's database; it is killed at
// the end of the test, unless kill has killed it.
func startChild(t *testing.T, cfg store.Config) *child {
	t.Helper()
	c := &child{cmd: exec.Command(os.Args[0], "-test.run=^TestHelperEngineProcess$")}
	c.cmd.Env = append(os.Environ(), envChildNode+"=n1", envChildDriver+"="+string(cfg.Driver), envChildDSN+"="+cfg.DSN)
	c.cmd.Stderr = os.Stderr
	require.NoError(t, c.cmd.Start())
	t.Cleanup(func() {
		if !c.killed {
			_ = c.cmd.Process.Kill()
			_ = c.cmd.Wait()
		}
	})
	return c
}

// kill kills the process without a word.
func (c *child) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, c.cmd.Process.Kill())
	_ = c.cmd.Wait()
	c.killed = true
}

// requireOnePerSecond checks that jobs, in scheduled_at order, are on whole
// seconds, one second apart: no fire missed, none written twice.
func requireOnePerSecond(t *testing.T, jobs []models.Job) {
	t.Helper()
	for i, j := range jobs {
		require.True(t, j.ScheduledAt.Equal(j.ScheduledAt.Truncate(time.Second)), "job %d at %v is not on a whole second", j.ID, j.ScheduledAt)
		if i > 0 {
			require.Equal(t, time.Second, j.ScheduledAt.Sub(jobs[i-1].ScheduledAt), "between job %d and %d", jobs[i-1].ID, j.ID)
		}
	}
}
