package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCLICalendars: calendar add/list/show/delete, a schedule naming one
// with the Quartz syntax, and its preview skipping the excluded days.
func TestCLICalendars(t *testing.T) {
	t.Parallel()
	url := startAPI(t)
	mustChime(t, url, "definition", "add", "report", "--task-type", "sleep", "--params", `{"duration":"1s"}`)

	out := mustChime(t, url, "calendar", "add", "weekends", "--kind", "weekly", "--definition", `{"days": ["sat", "sun"]}`, "--timezone", "Europe/Berlin")
	require.Regexp(t, `(?m)^kind:\s+weekly$`, out)
	out = mustChime(t, url, "calendar", "list")
	require.Regexp(t, `(?m)^ID\s+NAME\s+KIND\s+TIMEZONE`, out)
	require.Regexp(t, `(?m)^1\s+weekends\s+weekly\s+Europe/Berlin`, out)
	require.Contains(t, mustChime(t, url, "calendar", "show", "weekends"), "sat")
	_, err := chime(t, url, "calendar", "add", "bad", "--kind", "weekly", "--definition", `{"days": ["someday"]}`)
	require.ErrorContains(t, err, "not a weekday")

	// Quartz 6L (the last Friday) at 10:15, weekends excluded (none are, a
	// Friday never is one), and a dry run of a daily one that skips them.
	out = mustChime(t, url, "schedule", "add", "month-end", "--definition", "report", "--cron", "0 15 10 ? * 6L", "--cron-syntax", "quartz",
		"--calendar", "weekends", "--timezone", "Europe/Berlin", "--start-at", "2030-01-01T00:00:00Z")
	require.Regexp(t, `(?m)^cron_syntax:\s+quartz$`, out)
	require.Regexp(t, `(?m)^calendar_id:\s+1$`, out)
	out = mustChime(t, url, "schedule", "add", "daily", "--definition", "report", "--cron", "0 9 * * *", "--calendar", "weekends",
		"--start-at", "2030-01-04T00:00:00Z", "--dst-policy", "skip", "--dry-run")
	require.Contains(t, out, "2030-01-04T09:00:00Z")
	require.NotContains(t, out, "2030-01-05", "Saturday is excluded")
	require.NotContains(t, out, "2030-01-06", "Sunday is excluded")
	require.Contains(t, out, "2030-01-07T09:00:00Z")

	out = mustChime(t, url, "schedule", "edit", "month-end", "--calendar", "")
	require.Regexp(t, `(?m)^calendar_id:\s+-?$`, out)
	require.Contains(t, mustChime(t, url, "calendar", "delete", "weekends"), "deleted calendar 1")
}

// TestCronNextCalendarFile: cron next skips what a calendar file excludes,
// and --dst picks the standard syntax's policy.
func TestCronNextCalendarFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "cal.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"kind": "holiday", "definition": {"dates": ["2030-01-02"]}, "timezone": "UTC"}`), 0o600))
	out, _, code := cronNext(t, "0 9 * * *", "--from", "2030-01-01T00:00:00Z", "--count", "2", "--calendar-file", file)
	require.Equal(t, 0, code)
	require.Equal(t, []string{"2030-01-01T09:00:00Z", "2030-01-03T09:00:00Z"}, strings.Fields(out))

	require.NoError(t, os.WriteFile(file, []byte(`{"kind": "holiday", "definition": {"dates": ["soon"]}}`), 0o600))
	_, errOut, code := cronNext(t, "0 9 * * *", "--calendar-file", file)
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "YYYY-MM-DD")

	// Berlin springs forward on 31 March 2030: 02:30 fires at 03:00 CEST by
	// default, not at all with --dst skip.
	out, _, _ = cronNext(t, "30 2 * * *", "--timezone", "Europe/Berlin", "--from", "2030-03-30T12:00:00Z", "--count", "1")
	require.Equal(t, "2030-03-31T03:00:00+02:00", strings.TrimSpace(out))
	out, _, _ = cronNext(t, "30 2 * * *", "--timezone", "Europe/Berlin", "--from", "2030-03-30T12:00:00Z", "--count", "1", "--dst", "skip")
	require.Equal(t, "2030-04-01T02:30:00+02:00", strings.TrimSpace(out))
	_, _, code = cronNext(t, "0 0 0 ? * 1", "--syntax", "quartz", "--dst", "skip")
	require.Equal(t, 2, code)
}

// TestCLIQueues: queue set/list/pause/resume/delete, a definition put in
// a queue with a max_running, and the API refusing an unknown queue and
// bad limits.
func TestCLIQueues(t *testing.T) {
	t.Parallel()
	url := startAPI(t)
	out := mustChime(t, url, "queue", "set", "erp", "--max-running", "2", "--rate", "100", "--period-ms", "60000")
	require.Regexp(t, `(?m)^max_running:\s+2$`, out)
	mustChime(t, url, "definition", "add", "export", "--task-type", "sleep", "--params", `{"duration":"1s"}`, "--queue", "erp", "--max-running", "1")
	out = mustChime(t, url, "definition", "show", "export")
	require.Regexp(t, `(?m)^queue:\s+erp$`, out)
	require.Regexp(t, `(?m)^max_running:\s+1$`, out)
	out = mustChime(t, url, "queue", "list")
	require.Regexp(t, `(?m)^NAME\s+RUNNING\s+LIMIT\s+RATE\s+WAITING\s+STATE`, out)
	require.Regexp(t, `(?m)^erp\s+0\s+2\s+100/60000ms\s+0\s+open`, out)
	require.Contains(t, mustChime(t, url, "queue", "pause", "erp"), "paused:")
	require.Regexp(t, `(?m)^erp\s.*paused`, mustChime(t, url, "queue", "list"))
	mustChime(t, url, "queue", "resume", "erp")

	_, err := chime(t, url, "definition", "add", "lost", "--task-type", "sleep", "--params", `{"duration":"1s"}`, "--queue", "nope")
	require.ErrorContains(t, err, `queue "nope" does not exist`)
	_, err = chime(t, url, "queue", "set", "bad", "--max-running", "-1")
	require.ErrorContains(t, err, "max_running -1 is out of")
	_, err = chime(t, url, "queue", "set", "fast", "--rate", "1000000", "--period-ms", "1")
	require.ErrorContains(t, err, "more than one start per microsecond")
	_, err = chime(t, url, "queue", "set", "has space")
	require.Error(t, err)
	_, err = chime(t, url, "queue", "delete", "erp")
	require.ErrorContains(t, err, "named by 1 definition")
	_, err = chime(t, url, "queue", "delete", "default")
	require.Error(t, err)
	mustChime(t, url, "queue", "set", "spare")
	require.Contains(t, mustChime(t, url, "queue", "delete", "spare"), "deleted queue spare")
}
