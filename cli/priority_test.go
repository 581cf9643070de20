package cli

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// --priority on definitions, schedules, triggers and runs, through a real
// server: what is sent is stored, 0 on a schedule means the definition's,
// and out-of-range values come back as the API's error.
func TestCLIPriorities(t *testing.T) {
	t.Parallel()
	url := startAPI(t)

	out := mustChime(t, url, "definition", "add", "urgent", "--task-type", "sleep", "--priority", "8")
	require.Regexp(t, `(?m)^priority:\s+8$`, out)
	require.Regexp(t, `(?m)^priority:\s+5$`, mustChime(t, url, "definition", "add", "plain", "--task-type", "sleep"))
	require.Regexp(t, `(?m)^priority:\s+7$`, mustChime(t, url, "definition", "edit", "urgent", "--priority", "7"))
	require.Regexp(t, `(?m)^2\s+plain\s+sleep\s+1\s+0s\s+never\s+5\s`, mustChime(t, url, "definition", "list"))

	out = mustChime(t, url, "schedule", "add", "low", "--definition", "urgent", "--every", "1h", "--priority", "2")
	require.Regexp(t, `(?m)^priority:\s+2$`, out)
	require.Regexp(t, `(?m)^1\s+low\s+urgent\s+interval\s+every 1h0m0s\s+UTC\s+active\s+2\s`, mustChime(t, url, "schedule", "list"))
	require.Regexp(t, `(?m)^priority:\s+2$`, mustChime(t, url, "schedule", "trigger", "low"))
	require.Regexp(t, `(?m)^priority:\s+10$`, mustChime(t, url, "schedule", "trigger", "low", "--priority", "10"))
	out = mustChime(t, url, "schedule", "edit", "low", "--priority", "0")
	require.Regexp(t, `(?m)^priority:\s+(-|null)?$`, out, "the definition's")
	require.Regexp(t, `(?m)^priority:\s+7$`, mustChime(t, url, "schedule", "trigger", "low"))

	require.Regexp(t, `(?m)^priority:\s+7$`, mustChime(t, url, "job", "run", "urgent"))
	out = mustChime(t, url, "job", "run", "urgent", "--priority", "1")
	require.Regexp(t, `(?m)^priority:\s+1$`, out)
	id := regexp.MustCompile(`(?m)^id:\s+(\d+)$`).FindStringSubmatch(out)[1]
	require.Regexp(t, `(?m)^priority:\s+1$`, mustChime(t, url, "job", "show", id))

	for _, args := range [][]string{
		{"definition", "add", "bad", "--task-type", "sleep", "--priority", "11"},
		{"definition", "edit", "urgent", "--priority", "-1"},
		{"schedule", "add", "bad", "--definition", "urgent", "--every", "1h", "--priority", "42"},
		{"job", "run", "urgent", "--priority", "11"},
	} {
		out, err := chime(t, url, args...)
		require.Error(t, err, "%v: %s", args, out)
		require.Contains(t, err.Error(), "priority must be from 1", args)
	}
}
