package taskengine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/tasks/shell"
)

// chattyKind is the real shell task with an OnComplete that logs: output
// that comes after Execute and before the outcome.
const chattyKind = "shell-chatty"

type chattyShell struct{ *shell.Task }

func newChattyShell() tasks.Task { return &chattyShell{Task: shell.New().(*shell.Task)} }

func (c *chattyShell) OnComplete(ctx context.Context, job *tasks.Job, res tasks.Result) error {
	job.Log().Infof("on_complete: %s", res.Status)
	return c.Task.OnComplete(ctx, job, res)
}

// A job's final state is never visible before the lines it logged up to
// then: its task's output, what its OnComplete logged and the line of its
// outcome are written in or before the transaction that finishes it. So a
// reader that has seen the final state and then lists the log has every
// line, in order (docs/api.md, "Job logs"). Real shell jobs, one after
// another, each read the moment its row says it has finished.
func TestFinalStateAfterItsLines(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		cfg := testConfig(t, nodeName(t))
		cfg.Registry = builtinRegistry(nil)
		cfg.Registry.MustRegister(chattyKind, newChattyShell)
		e := startEngine(t, st, cfg)
		db := st.DB()
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "chatty", TaskType: chattyKind}).ID
		ctx := context.Background()
		for run := range 20 {
			cmd := "echo start; echo middle; echo the-end"
			want := []string{"shell: started process", "start", "middle", "the-end", "on_complete: succeeded", "succeeded (attempt 1,"}
			if run%4 == 3 {
				cmd += "; exit 3"
				want[4], want[5] = "on_complete: failed", "failed (attempt 1 of 1): shell: command failed: exit status 3"
			}
			id := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def, Params: mustJSON(t, map[string]any{"command": cmd})}).ID
			e.Wake()
			waitFinishedTight(t, db, id)
			lines, err := st.Admin().ListJobLogs(ctx, id, 0, 100)
			require.NoError(t, err)
			var got []string
			for _, l := range lines {
				got = append(got, l.Message)
			}
			require.Len(t, got, len(want), "run %d: the log as read once the job had finished:\n%s", run, strings.Join(got, "\n"))
			for i := range want {
				require.True(t, strings.HasPrefix(got[i], want[i]), "run %d line %d: %q, want %q…\n%s", run, i, got[i], want[i], strings.Join(got, "\n"))
			}
		}
	})
}

// waitFinishedTight reads job id's status every millisecond until it has
// finished: a reader that looks the moment the final state is visible.
func waitFinishedTight(t testing.TB, db *gorm.DB, id int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var status []string
		require.NoError(t, db.Raw(`SELECT status FROM jobs WHERE id = ?`, id).Scan(&status).Error)
		if len(status) == 1 && models.JobStatus(status[0]).Finished() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d did not finish; status %v", id, status)
		}
		time.Sleep(time.Millisecond) // the poll step of a wait with a deadline: the row is all there is to watch
	}
}
