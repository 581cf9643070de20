package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/api"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/secrets"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/tasks/sleep"
)

const cliToken = "cli-test-token"

// startAPI runs a real API server on a free loopback port over a fresh
// SQLite database and returns its base URL.
func startAPI(t *testing.T) string {
	t.Helper()
	url, _ := startAPIStore(t)
	return url
}

// startAPIStore is startAPI that also returns the server's database, for
// tests that write rows the API only reads (log lines, a job's status).
func startAPIStore(t *testing.T) (string, *store.Store) {
	t.Helper()
	st := testdb.Open(t, store.SQLite)
	return startAPIOn(t, st), st
}

// startAPIOn runs a real API server over st and returns its base URL.
func startAPIOn(t *testing.T, st *store.Store) string {
	t.Helper()
	reg := tasks.NewRegistry()
	reg.MustRegister(sleep.Kind, sleep.New)
	log, _ := test.NewNullLogger()
	keys, err := secrets.NewKeyring(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{5}, secrets.KeySize)), nil)
	require.NoError(t, err)
	srv, err := api.New(st, &api.Config{Registry: reg, Token: cliToken, Addr: "127.0.0.1:0", Logger: log, Secrets: keys})
	require.NoError(t, err)
	require.NoError(t, srv.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, srv.Stop(ctx))
	})
	return "http://" + srv.Addr()
}

// chime runs one command line against url and returns its stdout.
func chime(t *testing.T, url string, args ...string) (string, error) {
	t.Helper()
	cmd := NewRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append(args, "--api-url", url, "--token", cliToken))
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func mustChime(t *testing.T, url string, args ...string) string {
	t.Helper()
	out, err := chime(t, url, args...)
	require.NoError(t, err, "chime %s: %s", strings.Join(args, " "), out)
	return out
}

// TestCLIEndToEnd drives a running server through the admin commands.
func TestCLIEndToEnd(t *testing.T) {
	t.Parallel()
	url := startAPI(t)

	out := mustChime(t, url, "definition", "add", "report", "--task-type", "sleep", "--params", `{"duration":"1s"}`, "--max-attempts", "2")
	require.Regexp(t, `(?m)^id:\s+1$`, out)
	require.Regexp(t, `(?m)^max_attempts:\s+2$`, out)

	out = mustChime(t, url, "definition", "list")
	require.Regexp(t, `(?m)^ID\s+NAME\s+TASK TYPE\s+MAX ATTEMPTS`, out)
	require.Regexp(t, `(?m)^1\s+report\s+sleep\s+2\s+0s`, out)

	// Dry run: fire times, nothing saved.
	out = mustChime(t, url, "schedule", "add", "nightly", "--definition", "report", "--cron", "0 2 * * *", "--timezone", "Asia/Tokyo", "--dry-run")
	require.Contains(t, out, `schedule "nightly" is valid (not saved)`)
	require.Len(t, regexp.MustCompile(`(?m)T17:00:00Z\s+\w{3} \d{4}-\d\d-\d\d 02:00:00 JST$`).FindAllString(out, -1), 5, out)
	require.NotContains(t, mustChime(t, url, "schedule", "list"), "nightly")

	out = mustChime(t, url, "schedule", "add", "nightly", "--definition", "report", "--cron", "0 2 * * *", "--timezone", "Asia/Tokyo", "--params", `{"fail":true}`)
	require.Regexp(t, `(?m)^name:\s+nightly$`, out)
	mustChime(t, url, "schedule", "add", "often", "--definition", "1", "--every", "90s")

	out = mustChime(t, url, "schedule", "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out)
	require.Regexp(t, `^ID\s+NAME\s+DEFINITION\s+TYPE\s+SPEC\s+TIMEZONE\s+STATUS\s+PRIORITY\s+NEXT FIRE$`, lines[0])
	require.Regexp(t, `^2\s+often\s+report\s+interval\s+every 1m30s\s+UTC\s+active\s+-\s+\d{4}-`, lines[1], "newest first")
	require.Regexp(t, `^1\s+nightly\s+report\s+cron\s+0 2 \* \* \*\s+Asia/Tokyo\s+active\s+-\s+\d{4}-\d\d-\d\dT17:00:00Z$`, lines[2])
	// Columns are aligned: every row's STATUS starts where the header's does.
	col := strings.Index(lines[0], "STATUS")
	for _, l := range lines[1:] {
		require.Equal(t, "active", l[col:col+6], out)
	}

	out = mustChime(t, url, "schedule", "pause", "nightly")
	require.Regexp(t, `(?m)^status:\s+paused$`, out)
	require.Contains(t, mustChime(t, url, "schedule", "list", "--status", "paused"), "nightly")
	mustChime(t, url, "schedule", "resume", "1")

	out = mustChime(t, url, "schedule", "trigger", "nightly")
	require.Regexp(t, `(?m)^status:\s+pending$`, out)
	require.Regexp(t, `(?m)^schedule_id:\s+1$`, out)
	require.Regexp(t, `(?m)^params:\s+\{"duration":"1s","fail":true\}$`, out)
	jobID := regexp.MustCompile(`(?m)^id:\s+(\d+)$`).FindStringSubmatch(out)[1]

	out = mustChime(t, url, "job", "show", jobID, "-o", "json")
	var job map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &job), out)
	require.Equal(t, "pending", job["status"])
	require.EqualValues(t, 2, job["max_attempts"])

	out = mustChime(t, url, "job", "list", "--schedule", "nightly")
	require.Regexp(t, `(?m)^`+jobID+`\s+nightly\s+report\s+pending\s+-\s+0/2\s`, out)
	out = mustChime(t, url, "job", "logs", jobID)
	require.Contains(t, out, "triggered through the API from schedule 1")

	out = mustChime(t, url, "job", "run", "report", "--params", `{"duration":"2s"}`)
	require.Regexp(t, `(?m)^params:\s+\{"duration":"2s"\}$`, out)
	adHocID := regexp.MustCompile(`(?m)^id:\s+(\d+)$`).FindStringSubmatch(out)[1]
	out = mustChime(t, url, "job", "reset", adHocID, "--force")
	require.Regexp(t, `(?m)^status:\s+pending$`, out, "a pending job is left as it is, and not canceled by the stop request")
	out = mustChime(t, url, "job", "stop", jobID)
	require.Regexp(t, `(?m)^status:\s+canceled$`, out)

	out = mustChime(t, url, "nodes")
	require.Regexp(t, `^ID\s+HOSTNAME`, out)
	out = mustChime(t, url, "definition", "list", "-o", "json")
	var page struct {
		Items      []map[string]any `json:"items"`
		NextCursor string           `json:"next_cursor"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &page))
	require.Len(t, page.Items, 1)

	// Failures exit non-zero with the API's message.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"schedule", "add", "bad", "--definition", "report", "--cron", "61 * * * *"}, "bad cron_expr"},
		{[]string{"schedule", "add", "bad", "--definition", "report", "--cron", "@daily", "--timezone", "Nowhere/City"}, `unknown timezone "Nowhere/City"`},
		{[]string{"schedule", "add", "nightly", "--definition", "report", "--cron", "@daily"}, "already exists"},
		{[]string{"schedule", "add", "bad", "--definition", "nope", "--cron", "@daily"}, `no job definition named "nope"`},
		{[]string{"schedule", "add", "bad", "--definition", "report"}, "exactly one of --cron, --every or --at"},
		{[]string{"definition", "add", "x", "--task-type", "nope"}, `unknown task_type "nope"`},
		{[]string{"definition", "delete", "report"}, "used by 2 schedule(s)"},
		{[]string{"job", "show", "999"}, "job 999 does not exist"},
		{[]string{"job", "pause", jobID}, "only a queued or running job can be paused"},
		{[]string{"job", "reset", jobID, "--force"}, "is canceled"},
		{[]string{"job", "run", "report", "--params", `{"duration":"x"}`}, "params.duration: "},
		{[]string{"schedule", "show", "ghost"}, `no schedule named "ghost"`},
		{[]string{"job", "list", "--status", "done"}, "unknown status"},
		{[]string{"nodes", "-o", "yaml"}, "want table or json"},
	} {
		out, err := chime(t, url, c.args...)
		require.Error(t, err, "chime %s: %s", strings.Join(c.args, " "), out)
		require.Contains(t, err.Error(), c.want)
	}

	// A wrong token is refused with the API's 401 message.
	cmd := NewRootCommand()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetArgs([]string{"nodes", "--api-url", url, "--token", "wrong"})
	require.ErrorContains(t, cmd.ExecuteContext(context.Background()), "invalid bearer token")

	mustChime(t, url, "schedule", "delete", "often")
	mustChime(t, url, "schedule", "delete", "nightly")
	_, err := chime(t, url, "definition", "delete", "report")
	require.ErrorContains(t, err, "used by 0 schedule(s) and 1 unfinished job(s)")
	mustChime(t, url, "job", "stop", adHocID)
	out = mustChime(t, url, "definition", "delete", "report")
	require.Contains(t, out, "deleted job definition 1")
}

func TestCLIUnreachable(t *testing.T) {
	t.Parallel()
	_, err := chime(t, "http://127.0.0.1:1", "nodes")
	require.ErrorContains(t, err, "cannot reach the chime API at http://127.0.0.1:1")
}

// TestCLIHelp checks that every command answers --help.
func TestCLIHelp(t *testing.T) {
	t.Parallel()
	root := NewRootCommand()
	var paths [][]string
	for _, g := range root.Commands() {
		paths = append(paths, []string{g.Name()})
		for _, c := range g.Commands() {
			paths = append(paths, []string{g.Name(), c.Name()})
		}
	}
	require.Greater(t, len(paths), 20)
	for _, p := range paths {
		cmd := NewRootCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetArgs(append(p, "--help"))
		require.NoError(t, cmd.Execute(), strings.Join(p, " "))
		require.Contains(t, out.String(), "Usage:", strings.Join(p, " "))
	}
}

// definition add sends requests_recovery only when the flag is given, so
// the server's default (on) applies otherwise.
func TestCLIDefinitionRequestsRecovery(t *testing.T) {
	t.Parallel()
	url := startAPI(t)
	out := mustChime(t, url, "definition", "add", "rerun", "--task-type", "sleep")
	require.Regexp(t, `(?m)^requests_recovery:\s+true$`, out)
	out = mustChime(t, url, "definition", "add", "once-only", "--task-type", "sleep", "--requests-recovery=false")
	require.Regexp(t, `(?m)^requests_recovery:\s+false$`, out)
	require.Regexp(t, `(?m)^requests_recovery:\s+false$`, mustChime(t, url, "definition", "show", "once-only"))
}
