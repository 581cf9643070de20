package shell_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/tasks/shell"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type bundle struct {
	task *shell.Task
	job  *tasks.Job
	ctx  context.Context
	logs *logtest.Hook
}

func setup(t *testing.T, params string) *bundle {
	t.Helper()
	logger, hook := logtest.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	task := shell.New().(*shell.Task)
	job := &tasks.Job{ID: 7, TaskType: shell.Kind, Params: json.RawMessage(params), Logger: logrus.NewEntry(logger)}
	ctx, cancel := tasks.Prepare(context.Background(), task, job)
	t.Cleanup(cancel)
	return &bundle{task: task, job: job, ctx: ctx, logs: hook}
}

func (b *bundle) start() <-chan error {
	done := make(chan error, 1)
	go func() { done <- b.task.Execute(b.ctx, b.job) }()
	return done
}

// eventually polls cond: the kernel gives no signal to wait on for a
// process changing state.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond) // the poll step: a real process, whose state the kernel does not signal
	}
}

func waitDone(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Execute did not return")
		return nil
	}
}

// procStat returns a process's state letter and process group from
// /proc/<pid>/stat, or ok=false when it is gone.
func procStat(pid int) (state byte, pgrp int, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 3 {
		return 0, 0, false
	}
	pgrp, _ = strconv.Atoi(fields[2])
	return fields[0][0], pgrp, true
}

// groupMembers lists live (not zombie) processes in process group pgid.
// Zombies are left out: reaping orphans is init's business, not ours.
func groupMembers(t *testing.T, pgid int) map[int]byte {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	members := map[int]byte{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if state, pg, ok := procStat(pid); ok && pg == pgid && state != 'Z' {
			members[pid] = state
		}
	}
	return members
}

// startedPID reads the pid from the "started" log line, which outlives a
// child that exits at once (PID() is 0 by then).
func startedPID(t *testing.T, b *bundle) int {
	t.Helper()
	var pid int
	eventually(t, "the child to start", func() bool {
		for _, e := range b.logs.AllEntries() {
			if p, ok := e.Data["pid"].(int); ok && e.Message == "shell: started process" {
				pid = p
				return true
			}
		}
		return false
	})
	return pid
}

func TestShellRuns(t *testing.T) {
	t.Parallel()

	t.Run("OutputInResultAndLog", func(t *testing.T) {
		t.Parallel()
		b := setup(t, `{"command":"echo hello; echo world; echo oops >&2"}`)
		require.NoError(t, b.task.Execute(b.ctx, b.job))
		require.Equal(t, "hello\nworld\n--- stderr ---\noops\n", b.job.Result())

		var info, warn []string
		for _, e := range b.logs.AllEntries() {
			switch e.Data["stream"] {
			case "stdout":
				require.Equal(t, logrus.InfoLevel, e.Level)
				info = append(info, e.Message)
			case "stderr":
				require.Equal(t, logrus.WarnLevel, e.Level)
				warn = append(warn, e.Message)
			}
		}
		require.Equal(t, []string{"hello", "world"}, info)
		require.Equal(t, []string{"oops"}, warn)
	})

	t.Run("ExitStatus", func(t *testing.T) {
		t.Parallel()
		b := setup(t, `{"command":"echo partial; echo broken pipe >&2; exit 3"}`)
		err := b.task.Execute(b.ctx, b.job)
		require.EqualError(t, err, "shell: command failed: exit status 3 (stderr: broken pipe)")
		require.Contains(t, b.job.Result(), "partial\n")
	})

	t.Run("Argv", func(t *testing.T) {
		t.Parallel()
		b := setup(t, `{"argv":["/bin/echo","a  b","$HOME"]}`)
		require.NoError(t, b.task.Execute(b.ctx, b.job))
		require.Equal(t, "a  b $HOME\n", b.job.Result(), "no shell: no splitting, no expansion")
	})

	t.Run("ArgvMissingProgram", func(t *testing.T) {
		t.Parallel()
		b := setup(t, `{"argv":["no-such-program-chime"]}`)
		require.ErrorContains(t, b.task.Execute(b.ctx, b.job), "shell: start:")
	})

	t.Run("EnvAndWorkdir", func(t *testing.T) {
		t.Parallel()
		dir, err := filepath.EvalSymlinks(t.TempDir())
		require.NoError(t, err)
		params, err := json.Marshal(map[string]any{
			"command": `echo "$JOB_A-$JOB_B"; pwd; test -n "$PATH" && echo has-path`,
			"env":     map[string]string{"JOB_A": "one", "JOB_B": "two"},
			"workdir": dir,
		})
		require.NoError(t, err)
		b := setup(t, string(params))
		require.NoError(t, b.task.Execute(b.ctx, b.job))
		require.Equal(t, "one-two\n"+dir+"\nhas-path\n", b.job.Result())
	})

	t.Run("BadWorkdir", func(t *testing.T) {
		t.Parallel()
		b := setup(t, `{"command":"true","workdir":"/no/such/dir/chime"}`)
		require.ErrorContains(t, b.task.Execute(b.ctx, b.job), `shell: start in workdir "/no/such/dir/chime"`)
	})

	t.Run("TailKeepsTheEnd", func(t *testing.T) {
		t.Parallel()
		b := setup(t, `{"command":"head -c 200000 /dev/zero | tr '\\0' x; echo; echo END"}`)
		require.NoError(t, b.task.Execute(b.ctx, b.job))
		res := b.job.Result()
		require.True(t, strings.HasPrefix(res, "[... "), res[:40])
		require.Contains(t, res, "bytes cut ...]\n")
		require.True(t, strings.HasSuffix(res, "x\nEND\n"))
		require.Less(t, len(res), 64<<10+100)
	})

	t.Run("LogLinesCapped", func(t *testing.T) {
		t.Parallel()
		b := setup(t, `{"command":"seq 1 1500"}`)
		require.NoError(t, b.task.Execute(b.ctx, b.job))
		var lines, notices int
		for _, e := range b.logs.AllEntries() {
			if e.Data["stream"] == "stdout" {
				if e.Level == logrus.InfoLevel {
					lines++
				} else {
					notices++
				}
			}
		}
		require.Equal(t, 1000, lines)
		require.Equal(t, 1, notices)
		require.True(t, strings.HasSuffix(b.job.Result(), "1499\n1500\n"))
	})

	t.Run("BackgroundChildDoesNotOutliveJob", func(t *testing.T) {
		t.Parallel()
		b := setup(t, `{"command":"sleep 30 & echo started"}`)
		done := b.start()
		pgid := startedPID(t, b)
		start := time.Now()
		require.NoError(t, waitDone(t, done))
		require.Less(t, time.Since(start), 5*time.Second, "the leftover sleep must not hold the job")
		eventually(t, "the group to be gone", func() bool { return len(groupMembers(t, pgid)) == 0 })
	})
}

func TestShellControl(t *testing.T) {
	t.Parallel()

	// Two children and a shell blocked in wait: every member sleeps
	// interruptibly, so each must show T when stopped. (A shell caught
	// inside vfork shows D instead, which is why no fork loop is used.)
	const family = `{"command":"sleep 30 & sleep 30 & wait","kill_grace":"2s"}`

	allInState := func(t *testing.T, pgid int, want func(byte) bool) func() bool {
		return func() bool {
			members := groupMembers(t, pgid)
			for _, s := range members {
				if !want(s) {
					return false
				}
			}
			return len(members) == 3
		}
	}
	stopped := func(s byte) bool { return s == 'T' }
	running := func(s byte) bool { return s != 'T' }

	t.Run("PauseResumeStop", func(t *testing.T) {
		t.Parallel()
		b := setup(t, family)
		done := b.start()
		pgid := startedPID(t, b)
		require.Equal(t, pgid, b.task.PID())
		eventually(t, "both children", allInState(t, pgid, running))

		require.True(t, b.task.Pause())
		require.False(t, b.task.Pause(), "already paused")
		eventually(t, "every group member in state T", allInState(t, pgid, stopped))

		require.True(t, b.task.Resume())
		require.False(t, b.task.Resume(), "already running")
		eventually(t, "every group member to continue", allInState(t, pgid, running))

		require.True(t, b.task.Stop())
		err := waitDone(t, done)
		require.ErrorIs(t, err, tasks.ErrStopped)
		require.ErrorIs(t, err, context.Canceled)
		eventually(t, "the group to be gone", func() bool { return len(groupMembers(t, pgid)) == 0 })
		require.Zero(t, b.task.PID())
	})

	t.Run("PauseHoldsProgress", func(t *testing.T) {
		t.Parallel()
		file := filepath.Join(t.TempDir(), "count")
		params, err := json.Marshal(map[string]any{
			"command": `i=0; while :; do i=$((i+1)); echo $i >> "$COUNT_FILE"; done`,
			"env":     map[string]string{"COUNT_FILE": file},
		})
		require.NoError(t, err)
		b := setup(t, string(params))
		done := b.start()
		size := func() int64 {
			fi, err := os.Stat(file)
			if err != nil {
				return 0
			}
			return fi.Size()
		}
		eventually(t, "progress", func() bool { return size() > 0 })

		require.True(t, b.task.Pause())
		pgid := startedPID(t, b)
		eventually(t, "the loop to stop", func() bool { s, _, _ := procStat(pgid); return s == 'T' })
		held := size()
		time.Sleep(30 * time.Millisecond) // real time in which the real loop, were it running, would write
		require.Equal(t, held, size(), "no progress while paused")

		require.True(t, b.task.Resume())
		eventually(t, "progress after resume", func() bool { return size() > held })
		require.True(t, b.task.Stop())
		require.ErrorIs(t, waitDone(t, done), tasks.ErrStopped)
	})

	t.Run("StopWhilePaused", func(t *testing.T) {
		t.Parallel()
		b := setup(t, family)
		done := b.start()
		pgid := startedPID(t, b)
		eventually(t, "both children", allInState(t, pgid, running))
		require.True(t, b.task.Pause())
		eventually(t, "every group member in state T", allInState(t, pgid, stopped))
		require.True(t, b.task.Stop())
		require.ErrorIs(t, waitDone(t, done), tasks.ErrStopped)
		eventually(t, "the group to be gone", func() bool { return len(groupMembers(t, pgid)) == 0 })
	})

	t.Run("KillAfterGrace", func(t *testing.T) {
		t.Parallel()
		// Ignores SIGTERM, and so does its background child.
		b := setup(t, `{"command":"trap '' TERM; sleep 30 & while :; do sleep 0.01; done","kill_grace":"30ms"}`)
		done := b.start()
		pgid := startedPID(t, b)
		eventually(t, "the background child", func() bool { return len(groupMembers(t, pgid)) >= 2 })
		require.True(t, b.task.Stop())
		require.ErrorIs(t, waitDone(t, done), tasks.ErrStopped)
		// SIGKILL is sent before Execute returns; dying takes the kernel a
		// moment longer.
		eventually(t, "the group to be gone", func() bool { return len(groupMembers(t, pgid)) == 0 })
		var killed bool
		for _, e := range b.logs.AllEntries() {
			killed = killed || strings.Contains(e.Message, "SIGKILL")
		}
		require.True(t, killed, "the grace period should have run out")
	})

	// Once the group is being stopped, or the child is gone, there is
	// nothing a pause could hold: Pause says no rather than report paused.
	t.Run("PauseRefusedWhileStopping", func(t *testing.T) {
		t.Parallel()
		b := setup(t, `{"command":"trap '' TERM; echo ready; while :; do sleep 0.01; done","kill_grace":"5s"}`)
		done := b.start()
		startedPID(t, b)
		// A SIGTERM before the shell has set its trap would end it, and
		// there would be nothing left for Kill (seen on a loaded machine).
		eventually(t, "the trap to be set", func() bool {
			for _, e := range b.logs.AllEntries() {
				if e.Data["stream"] == "stdout" && e.Message == "ready" {
					return true
				}
			}
			return false
		})
		require.True(t, b.task.Stop())
		eventually(t, "SIGTERM", func() bool {
			for _, e := range b.logs.AllEntries() {
				if strings.Contains(e.Message, "sending SIGTERM") {
					return true
				}
			}
			return false
		})
		require.False(t, b.task.Pause(), "stopping: a SIGSTOP now would only hold up the stop")
		require.False(t, b.job.Paused())
		require.True(t, b.task.Kill())
		require.ErrorIs(t, waitDone(t, done), tasks.ErrStopped)
	})

	t.Run("PauseRefusedAfterExit", func(t *testing.T) {
		t.Parallel()
		b := setup(t, `{"command":"true"}`)
		require.NoError(t, b.task.Execute(b.ctx, b.job))
		require.False(t, b.task.Pause())
		require.False(t, b.job.Paused())
	})

	// Kill cuts kill_grace short: the engine's way to make sure nothing a
	// job started outlives it.
	t.Run("KillSkipsGrace", func(t *testing.T) {
		t.Parallel()
		b := setup(t, `{"command":"trap '' TERM; sleep 30 & while :; do sleep 0.01; done","kill_grace":"1h"}`)
		done := b.start()
		pgid := startedPID(t, b)
		eventually(t, "the background child", func() bool { return len(groupMembers(t, pgid)) >= 2 })
		require.True(t, b.task.Stop())
		eventually(t, "SIGTERM", func() bool {
			for _, e := range b.logs.AllEntries() {
				if strings.Contains(e.Message, "sending SIGTERM") {
					return true
				}
			}
			return false
		})
		require.True(t, b.task.Kill())
		state, _, alive := procStat(pgid)
		require.False(t, alive && state != 'Z', "Kill returns once the child is reaped")
		require.ErrorIs(t, waitDone(t, done), tasks.ErrStopped)
		eventually(t, "the group to be gone", func() bool { return len(groupMembers(t, pgid)) == 0 })
		require.False(t, b.task.Kill(), "nothing left to kill")
	})

	t.Run("KillWithoutStop", func(t *testing.T) {
		t.Parallel()
		b := setup(t, `{"command":"sleep 30"}`)
		done := b.start()
		startedPID(t, b)
		require.True(t, b.task.Kill())
		require.ErrorContains(t, waitDone(t, done), "signal: killed")
	})

	t.Run("KillBeforeStart", func(t *testing.T) {
		t.Parallel()
		b := setup(t, `{"command":"echo ran"}`)
		require.False(t, b.task.Kill())
		require.ErrorContains(t, b.task.Execute(b.ctx, b.job), "killed before the process started")
		require.Empty(t, b.job.Result())
	})

	t.Run("Timeout", func(t *testing.T) {
		t.Parallel()
		b := setup(t, `{"command":"sleep 30"}`)
		ctx, cancel := tasks.WithActiveTimeout(b.ctx, b.job, 30*time.Millisecond)
		defer cancel()
		err := b.task.Execute(ctx, b.job)
		require.ErrorIs(t, err, tasks.ErrTimeout)
		require.Contains(t, err.Error(), "signal: terminated")
	})

	t.Run("PausedBeforeStart", func(t *testing.T) {
		t.Parallel()
		b := setup(t, `{"command":"echo ran"}`)
		require.True(t, b.task.Pause())
		done := b.start()
		select {
		case err := <-done:
			t.Fatalf("ran while paused: %v", err)
		case <-time.After(30 * time.Millisecond):
		}
		require.Zero(t, b.task.PID())
		require.True(t, b.task.Resume())
		require.NoError(t, waitDone(t, done))
		require.Equal(t, "ran\n", b.job.Result())
	})
}

func TestShellParams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, params, wantErr string
	}{
		{"Missing", `{}`, `shell: params: field "command": one of "command" or "argv" is required`},
		{"Both", `{"command":"ls","argv":["ls"]}`, `shell: params: field "argv": give "command" or "argv", not both`},
		{"Blank", `{"command":"  "}`, `shell: params: field "command": must not be blank`},
		{"EmptyProgram", `{"argv":[""]}`, `shell: params: field "argv": the first element`},
		{"Unknown", `{"comand":"ls"}`, `shell: params: unknown field "comand"`},
		{"BadEnv", `{"command":"ls","env":{"A=B":"c"}}`, `shell: params: field "env": invalid variable name "A=B"`},
		{"ChimeEnv", `{"command":"ls","env":{"CHIME_API_TOKEN":"x"}}`, `shell: params: field "env": "CHIME_API_TOKEN": CHIME_* variables are the server's configuration`},
		{"ChimeEnvLower", `{"command":"ls","env":{"chime_smtp_password":"x"}}`, `field "env": "chime_smtp_password": CHIME_*`},
		{"NulInValue", `{"command":"ls","env":{"A":"b\u0000c"}}`, `field "env": the value of "A" contains a NUL byte`},
		{"BadGrace", `{"command":"ls","kill_grace":"soon"}`, `shell: params: field "kill_grace"`},
		{"ArgvNotList", `{"argv":"ls -l"}`, `shell: params: field "argv": expected a list`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tt.params)
			require.ErrorContains(t, b.task.Validate(json.RawMessage(tt.params)), tt.wantErr)
			require.ErrorContains(t, b.task.Execute(b.ctx, b.job), tt.wantErr)
			require.Zero(t, b.task.PID(), "nothing started")
		})
	}
	require.NoError(t, shell.New().(tasks.Validator).Validate(json.RawMessage(`{"argv":["ls","-l"],"kill_grace":"1s"}`)))
}

// The child's environment is an allowlist of the server's plus params.env:
// the server's secrets (CHIME_SMTP_PASSWORD, CHIME_API_TOKEN,
// CHIME_DATABASE_DSN, ...) and anything else it happens to hold must not
// reach a job's result, job_logs or completion email. Not parallel:
// t.Setenv changes this process's environment.
func TestShellEnvironment(t *testing.T) {
	t.Setenv("CHIME_SMTP_PASSWORD", "smtp-secret")
	t.Setenv("CHIME_API_TOKEN", "api-secret")
	t.Setenv("CHIME_DATABASE_DSN", "root:db-secret@tcp(db:3306)/chime")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("LC_TIME", "C")
	t.Setenv("TZ", "Europe/Berlin")

	params, err := json.Marshal(map[string]any{
		"command": "env",
		"env":     map[string]string{"REPORT_DIR": "/srv/reports", "TZ": "UTC"},
	})
	require.NoError(t, err)
	b := setup(t, string(params))
	require.NoError(t, b.task.Execute(b.ctx, b.job))

	env := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(b.job.Result()), "\n") {
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}
	for k := range env {
		require.False(t, strings.HasPrefix(strings.ToUpper(k), "CHIME_"), "the job sees %s", k)
	}
	for _, secret := range []string{"smtp-secret", "api-secret", "db-secret", "aws-secret"} {
		require.NotContains(t, b.job.Result(), secret)
		for _, e := range b.logs.AllEntries() {
			require.NotContains(t, e.Message, secret)
		}
	}
	require.NotContains(t, env, "AWS_SECRET_ACCESS_KEY", "only allowlisted variables pass")
	require.Equal(t, os.Getenv("PATH"), env["PATH"])
	require.Equal(t, "C.UTF-8", env["LANG"])
	require.Equal(t, "C", env["LC_TIME"])
	require.Equal(t, "/srv/reports", env["REPORT_DIR"], "params.env is added")
	require.Equal(t, "UTC", env["TZ"], "params.env wins over the server's value")
}

// A broadcast's shard learns which of how many it is from its
// environment; params.env cannot say otherwise (CHIME_* is refused), and
// a job that is not a shard gets neither variable.
func TestShellShardEnvironment(t *testing.T) {
	t.Parallel()
	b := setup(t, `{"command":"echo \"${CHIME_SHARD_INDEX-none}/${CHIME_SHARD_TOTAL-none}\""}`)
	b.job.ShardIndex, b.job.ShardTotal = 2, 3
	require.NoError(t, b.task.Execute(b.ctx, b.job))
	require.Equal(t, "2/3", strings.TrimSpace(b.job.Result()))

	b = setup(t, `{"command":"echo \"${CHIME_SHARD_INDEX-none}/${CHIME_SHARD_TOTAL-none}\""}`)
	require.NoError(t, b.task.Execute(b.ctx, b.job))
	require.Equal(t, "none/none", strings.TrimSpace(b.job.Result()))
}
