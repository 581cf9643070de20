package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCLIWorkflows: create from a YAML file with edges as lines, show,
// chain (child jobs in one command), run with params, runs, status,
// pause, resume, cancel, rerun.
func TestCLIWorkflows(t *testing.T) {
	t.Parallel()
	url := startAPI(t)
	mustChime(t, url, "definition", "add", "extract", "--task-type", "sleep", "--params", `{"duration":"1s"}`)
	mustChime(t, url, "definition", "add", "load", "--task-type", "sleep", "--params", `{"duration":"1s"}`)
	file := filepath.Join(t.TempDir(), "etl.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`name: etl
failure_policy: continue
notify_on: failure
notify_emails: ops@example.com
steps:
  - {name: extract, definition: extract}
  - {name: load, definition: load, max_attempts: 2}
  - name: cleanup
    definition: load
    params: {duration: 2s}
edges:
  - extract -> load
  - extract -failure-> cleanup
`), 0o600))
	out := mustChime(t, url, "workflow", "create", file)
	require.Regexp(t, `(?m)^name:\s+etl$`, out)
	out = mustChime(t, url, "workflow", "show", "etl")
	require.Contains(t, out, "extract -success-> load")
	require.Contains(t, out, "extract -failure-> cleanup")
	require.Contains(t, out, "emails a run's final state (failure) to ops@example.com")
	require.Regexp(t, `(?m)^cleanup\s+\d+\s+all\s+\{"duration":"2s"\}`, out)

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("name: loop\nsteps: [{name: a, definition: load}]\nedges: [a -> a]\n"), 0o600))
	_, err := chime(t, url, "workflow", "create", bad)
	require.ErrorContains(t, err, "to itself")
	require.NoError(t, os.WriteFile(bad, []byte("name: x\nsteps: [{name: a, definition: load}]\nedges: [a => b]\n"), 0o600))
	_, err = chime(t, url, "workflow", "create", bad)
	require.ErrorContains(t, err, "a -> b")

	out = mustChime(t, url, "workflow", "chain", "then", "extract", "load")
	require.Regexp(t, `(?m)^name:\s+then$`, out)
	require.Contains(t, mustChime(t, url, "workflow", "show", "then"), "extract -success-> load")
	require.Regexp(t, `(?m)^\d+\s+etl\s+continue`, mustChime(t, url, "workflow", "list"))

	out = mustChime(t, url, "workflow", "run", "etl", "--params", `{"day":"mon"}`)
	require.Regexp(t, `(?m)^status:\s+running$`, out)
	out = mustChime(t, url, "workflow", "status", "1")
	require.Regexp(t, `(?m)^extract\s+pending\s+\d+$`, out)
	require.Regexp(t, `(?m)^load\s+waiting\s+-$`, out)
	require.Regexp(t, `(?m)^status:\s+paused$`, mustChime(t, url, "workflow", "pause", "1"))
	require.Regexp(t, `(?m)^status:\s+running$`, mustChime(t, url, "workflow", "resume", "1"))
	require.Regexp(t, `(?m)^status:\s+canceled$`, mustChime(t, url, "workflow", "cancel", "1"))
	_, err = chime(t, url, "workflow", "cancel", "1")
	require.ErrorContains(t, err, "already canceled")
	require.Regexp(t, `(?m)^generation:\s+2$`, mustChime(t, url, "workflow", "rerun", "1"))
	require.Regexp(t, `(?m)^1\s+1\s+running\s+2\s+cli`, mustChime(t, url, "workflow", "runs", "etl"))
}

// TestCLIScheduleWorkflow: chime schedule add --workflow writes a schedule
// that starts runs; --definition and --workflow together are refused.
func TestCLIScheduleWorkflow(t *testing.T) {
	t.Parallel()
	url := startAPI(t)
	mustChime(t, url, "definition", "add", "extract", "--task-type", "sleep", "--params", `{"duration":"1s"}`)
	mustChime(t, url, "definition", "add", "load", "--task-type", "sleep", "--params", `{"duration":"1s"}`)
	mustChime(t, url, "workflow", "chain", "etl", "extract", "load")
	_, err := chime(t, url, "schedule", "add", "both", "--definition", "extract", "--workflow", "etl", "--every", "1m")
	require.ErrorContains(t, err, "exactly one of --definition or --workflow")
	_, err = chime(t, url, "schedule", "add", "ghost", "--workflow", "nope", "--every", "1m")
	require.ErrorContains(t, err, `workflow "nope" does not exist`)
	out := mustChime(t, url, "schedule", "add", "nightly-etl", "--workflow", "etl", "--cron", "0 2 * * *", "--concurrency", "forbid",
		"--params", `{"day":"yesterday"}`)
	require.Regexp(t, `(?m)^workflow_id:\s+1$`, out)
	require.Regexp(t, `(?m)^\d+\s+nightly-etl\s+workflow 1\s+cron`, mustChime(t, url, "schedule", "list"))
}
