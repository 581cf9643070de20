package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/syncbuf"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/taskengine"
	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/tasks/shell"
)

// chimeSplit runs one command line against url with its own context and
// returns stdout and stderr apart: the paging hint goes to stderr.
func chimeSplit(ctx context.Context, url string, args ...string) (string, string, error) {
	cmd := NewRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(append(args, "--api-url", url, "--token", cliToken))
	err := cmd.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

// addLines writes log lines "line from..to-1" of job.
func addLines(t *testing.T, st *store.Store, job int64, from, to int) {
	t.Helper()
	logs := make([]models.JobLog, 0, to-from)
	for i := from; i < to; i++ {
		logs = append(logs, models.JobLog{JobID: job, Level: "info", Message: fmt.Sprintf("line %d", i), CreatedAt: store.DBTime(time.Now())})
	}
	require.NoError(t, st.InsertJobLogs(context.Background(), logs))
}

var logLine = regexp.MustCompile(`(?m)^\S+Z  info   line (\d+)$`)

// numbers returns the line numbers printed, in order.
func numbers(out string) []string {
	var n []string
	for _, m := range logLine.FindAllStringSubmatch(out, -1) {
		n = append(n, m[1])
	}
	return n
}

func seq(from, to int) []string {
	var s []string
	for i := from; i < to; i++ {
		s = append(s, fmt.Sprint(i))
	}
	return s
}

// A chatty job's log is not cut at the first page without a word: the
// hint says how to go on, --cursor continues, --limit 0 prints it all and
// --tail shows its end.
func TestCLIJobLogsPaging(t *testing.T) {
	t.Parallel()
	url, st := startAPIStore(t)
	def := testdb.Definition(t, st, nil)
	job := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Status: models.JobSucceeded, Attempt: 1})
	id := fmt.Sprint(job.ID)
	addLines(t, st, job.ID, 0, 1203)
	ctx := context.Background()

	out, hint, err := chimeSplit(ctx, url, "job", "logs", id)
	require.NoError(t, err)
	require.Equal(t, seq(0, DefaultLogLimit), numbers(out))
	m := regexp.MustCompile(`^\(more lines: add --cursor (\S+) to go on, --tail N for the last N`).FindStringSubmatch(hint)
	require.NotNil(t, m, "stderr: %q", hint)

	out, hint, err = chimeSplit(ctx, url, "job", "logs", id, "--cursor", m[1], "--limit", "1000")
	require.NoError(t, err)
	require.Equal(t, seq(500, 1203), numbers(out), "the cursor continues after the last line shown")
	require.Empty(t, hint, "no hint at the end of the log")

	out, _, err = chimeSplit(ctx, url, "job", "logs", id, "--limit", "0")
	require.NoError(t, err)
	require.Equal(t, seq(0, 1203), numbers(out))

	out, hint, err = chimeSplit(ctx, url, "job", "logs", id, "--limit", "703")
	require.NoError(t, err)
	require.Equal(t, seq(0, 703), numbers(out), "a limit above one API page")
	require.Contains(t, hint, "more lines")

	out, _, err = chimeSplit(ctx, url, "job", "logs", id, "--tail", "3")
	require.NoError(t, err)
	require.Equal(t, seq(1200, 1203), numbers(out))

	out, _, err = chimeSplit(ctx, url, "job", "logs", id, "--tail", "2", "-o", "json")
	require.NoError(t, err)
	rows := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, rows, 2, "JSON Lines: one object per line")
	var l models.JobLog
	require.NoError(t, json.Unmarshal([]byte(rows[1]), &l))
	require.Equal(t, "line 1202", l.Message)

	_, _, err = chimeSplit(ctx, url, "job", "logs", id, "--tail", "2", "--limit", "5")
	require.ErrorContains(t, err, "none of the others can be")
}

// startFollow runs `chime job logs id` with flags on a goroutine of its
// own, printing to out; its error comes on the channel.
func startFollow(ctx context.Context, url string, id int64, out io.Writer, flags ...string) <-chan error {
	done := make(chan error, 1)
	go func() {
		cmd := NewRootCommand()
		cmd.SetOut(out)
		cmd.SetErr(out)
		cmd.SetArgs(append(append([]string{"job", "logs", fmt.Sprint(id)}, flags...), "--api-url", url, "--token", cliToken))
		done <- cmd.ExecuteContext(ctx)
	}()
	return done
}

// --follow prints new lines as they come and returns once the job has
// finished, with the lines written up to then; Ctrl-C ends it cleanly.
func TestCLIJobLogsFollow(t *testing.T) {
	t.Parallel()
	url, st := startAPIStore(t)
	def := testdb.Definition(t, st, nil)
	job := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Status: models.JobRunning, NodeID: "n1", Attempt: 1})
	addLines(t, st, job.ID, 0, 3)

	var out syncbuf.Buffer
	done := startFollow(context.Background(), url, job.ID, &out, "--follow", "--interval", "20ms")
	require.Eventually(t, func() bool { return len(numbers(out.String())) == 3 }, 10*time.Second, 10*time.Millisecond)
	addLines(t, st, job.ID, 3, 5)
	require.Eventually(t, func() bool { return len(numbers(out.String())) == 5 }, 10*time.Second, 10*time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("follow ended while the job runs: %v", err)
	default:
	}
	require.NoError(t, st.DB().Model(&models.Job{}).Where("id = ?", job.ID).Update("status", models.JobSucceeded).Error)
	// A line written just after the end (a notification's, say): the
	// follow polls once more an interval after it saw the final state.
	addLines(t, st, job.ID, 5, 6)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("follow did not end after the job finished")
	}
	require.Equal(t, seq(0, 6), numbers(out.String()))

	// Ctrl-C: the context ends, the command returns without an error.
	running := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Status: models.JobRunning, NodeID: "n1", Attempt: 1})
	addLines(t, st, running.ID, 0, 1)
	ctx, cancel := context.WithCancel(context.Background())
	var out2 syncbuf.Buffer
	done = startFollow(ctx, url, running.ID, &out2, "-f", "--interval", "20ms")
	require.Eventually(t, func() bool { return len(numbers(out2.String())) == 1 }, 10*time.Second, 10*time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("follow did not end on cancel")
	}
}

// chattyShell is the real shell task with an OnComplete that logs: output
// that comes after Execute, before the outcome.
type chattyShell struct{ *shell.Task }

func (c *chattyShell) OnComplete(ctx context.Context, job *tasks.Job, res tasks.Result) error {
	job.Log().Infof("on_complete: %s", res.Status)
	return c.Task.OnComplete(ctx, job, res)
}

// printedMessage matches a line of `job logs` as text: time, level, message.
var printedMessage = regexp.MustCompile(`(?m)^\S+Z  \S+\s+(.*)$`)

// `chime job logs N --follow` prints every line a real job wrote, in
// order, through to its last: a shell job's output, its OnComplete's line
// and the outcome (a success or a failure), each run followed from before
// it starts, some also while they run. The
// README's walk-through is this, once; here it runs 20 times a database.
func TestCLIFollowPrintsEveryLineOfRealJobs(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		url := startAPIOn(t, st)
		reg := tasks.NewRegistry()
		reg.MustRegister("shell-chatty", func() tasks.Task { return &chattyShell{Task: shell.New().(*shell.Task)} })
		log, _ := test.NewNullLogger()
		eng, err := taskengine.New(st, &taskengine.Config{NodeID: "follow-node", Registry: reg, Logger: log, PoolSize: 4})
		require.NoError(t, err)
		require.NoError(t, eng.Start(context.Background()))
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			require.NoError(t, eng.Stop(ctx))
		})
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{TaskType: "shell-chatty"})
		for run := range 20 {
			cmd := "echo start; echo middle; echo the-end"
			if run%5 == 0 { // followed while it runs: the cursor moves on mid-run
				cmd = "echo start; sleep 0.2; echo middle; echo the-end"
			}
			want := []string{"shell: started process", "start", "middle", "the-end", "on_complete: succeeded", "succeeded (attempt 1,"}
			if run%4 == 3 {
				cmd += "; exit 3"
				want[4], want[5] = "on_complete: failed", "failed (attempt 1 of 1): shell: command failed: exit status 3"
			}
			job := models.Job{JobDefinitionID: def.ID, Params: models.JSON(`{"command":"` + cmd + `"}`), ScheduledAt: store.DBTime(time.Now()),
				RunAt: store.DBTime(time.Now()), Status: models.JobPending}
			require.NoError(t, st.DB().Create(&job).Error)
			var out syncbuf.Buffer
			done := startFollow(context.Background(), url, job.ID, &out, "--follow", "--interval", "10ms")
			eng.Wake()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(30 * time.Second):
				t.Fatalf("run %d: the follow did not end", run)
			}
			var got []string
			for _, m := range printedMessage.FindAllStringSubmatch(out.String(), -1) {
				got = append(got, m[1])
			}
			require.Len(t, got, len(want), "run %d printed:\n%s", run, out.String())
			for i := range want {
				require.True(t, strings.HasPrefix(got[i], want[i]), "run %d line %d: %q, want %q…\n%s", run, i, got[i], want[i], out.String())
			}
		}
	})
}
