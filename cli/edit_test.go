package cli

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Definitions and schedules are edited from the CLI: only the flags given
// change, a kind switch clears the old spec, and an empty edit is refused.
func TestCLIEdit(t *testing.T) {
	t.Parallel()
	url := startAPI(t)
	mustChime(t, url, "definition", "add", "hello", "--task-type", "sleep", "--params", `{"duration":"1s"}`, "--description", "keep me")
	out := mustChime(t, url, "definition", "edit", "hello", "--params", `{"duration":"2s"}`, "--max-attempts", "3")
	require.Regexp(t, `(?m)^default_params:\s+\{"duration":"2s"\}$`, out)
	require.Regexp(t, `(?m)^max_attempts:\s+3$`, out)
	require.Regexp(t, `(?m)^description:\s+keep me$`, out, "a flag not given keeps its value")
	out = mustChime(t, url, "definition", "edit", "1", "--name", "hi")
	require.Regexp(t, `(?m)^name:\s+hi$`, out)

	mustChime(t, url, "schedule", "add", "tick", "--definition", "hi", "--cron", "*/10 * * * * *", "--timezone", "Asia/Tokyo", "--max-runs", "5")
	mustChime(t, url, "schedule", "pause", "tick")
	out = mustChime(t, url, "schedule", "edit", "tick", "--every", "90s", "--max-runs", "0")
	require.Regexp(t, `(?m)^schedule_type:\s+interval$`, out)
	require.Regexp(t, `(?m)^interval_seconds:\s+90$`, out)
	require.Regexp(t, `(?m)^cron_expr:\s+-$`, out, "the old spec is cleared")
	require.Regexp(t, `(?m)^max_runs:\s+-$`, out)
	require.Regexp(t, `(?m)^timezone:\s+Asia/Tokyo$`, out)
	require.Regexp(t, `(?m)^status:\s+paused$`, out, "an edit does not resume")
	out = mustChime(t, url, "schedule", "edit", "tick", "--cron", "0 9 * * *", "--name", "morning")
	require.Regexp(t, `(?m)^name:\s+morning$`, out)
	require.Regexp(t, `(?m)^interval_seconds:\s+-$`, out)

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"schedule", "edit", "morning"}, "nothing to change"},
		{[]string{"definition", "edit", "hi"}, "nothing to change"},
		{[]string{"schedule", "edit", "morning", "--cron", "@daily", "--every", "1m"}, "at most one of"},
		{[]string{"schedule", "edit", "morning", "--cron", "61 * * * *"}, "bad cron_expr"},
		{[]string{"definition", "edit", "ghost", "--max-attempts", "2"}, `no job definition named "ghost"`},
	} {
		_, err := chime(t, url, c.args...)
		require.ErrorContains(t, err, c.want, c.args)
	}
}
