package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/models"
)

// What a newcomer reads: names instead of ids in job list, the
// definition's max_attempts for a job inserted with plain SQL (0 there),
// no next fire for a paused schedule, a multi-line result on lines of its
// own, and an error that names its field once.
func TestCLIDisplay(t *testing.T) {
	t.Parallel()
	url, st := startAPIStore(t)
	mustChime(t, url, "definition", "add", "report", "--task-type", "sleep", "--max-attempts", "3")
	mustChime(t, url, "schedule", "add", "nightly", "--definition", "report", "--cron", "0 2 * * *")
	mustChime(t, url, "schedule", "trigger", "nightly")
	// An ad hoc job as an admin writes it with plain SQL: max_attempts 0
	// means the definition's.
	require.NoError(t, st.DB().Exec("INSERT INTO jobs (job_definition_id) VALUES (1)").Error)
	res := "first line\nsecond line\n\tindented"
	require.NoError(t, st.DB().Model(&models.Job{}).Where("id = 2").Updates(map[string]any{"status": models.JobSucceeded, "result": res}).Error)

	out := mustChime(t, url, "job", "list")
	require.Regexp(t, `(?m)^2\s+-\s+report\s+succeeded\s+-\s+0/3\s`, out)
	require.Regexp(t, `(?m)^1\s+nightly\s+report\s+pending\s+-\s+0/3\s`, out)

	out = mustChime(t, url, "schedule", "list")
	require.Regexp(t, `(?m)^1\s+nightly\s+report\s+cron\s+0 2 \* \* \*\s+UTC\s+active\s+-\s+\d{4}-`, out)
	mustChime(t, url, "schedule", "pause", "nightly")
	out = mustChime(t, url, "schedule", "list")
	require.Regexp(t, `(?m)^1\s+nightly\s+report\s+cron\s+0 2 \* \* \*\s+UTC\s+paused\s+-\s+- \(paused\)$`, out)

	out = mustChime(t, url, "job", "show", "2")
	lines := strings.Split(out, "\n")
	var at int
	for i, l := range lines {
		if strings.HasPrefix(l, "result:") {
			at = i
		}
	}
	require.NotZero(t, at, out)
	col := strings.Index(lines[at], "first line")
	require.Positive(t, col, out)
	require.Equal(t, strings.Repeat(" ", col)+"second line", lines[at+1], out)
	require.Equal(t, strings.Repeat(" ", col)+`\tindented`, lines[at+2], out)

	// A typed outcome the task chose: in the list beside the status, in
	// show as its own field.
	require.NoError(t, st.DB().Model(&models.Job{}).Where("id = 2").Updates(map[string]any{
		"status": models.JobFailed, "outcome": models.OutcomeSkipRetry, "snoozes": 2}).Error)
	require.Regexp(t, `(?m)^2\s+-\s+report\s+failed \(skip_retry\)\s`, mustChime(t, url, "job", "list"))
	out = mustChime(t, url, "job", "show", "2")
	require.Regexp(t, `(?m)^outcome:\s+skip_retry$`, out)
	require.Regexp(t, `(?m)^snoozes:\s+2$`, out)

	_, err := chime(t, url, "schedule", "add", "bad", "--definition", "report", "--cron", "61 * * * *")
	require.Error(t, err)
	require.Equal(t, 1, strings.Count(err.Error(), "cron_expr"), "the field is named once: %s", err)
}
