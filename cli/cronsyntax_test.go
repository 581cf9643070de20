package cli

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// "schedule add --cron" with a Quartz expression and no --cron-syntax is
// refused, --dry-run included, with the flag to add; it was accepted and
// previewed on Mondays ("Mon") where Quartz means Sundays.
func TestCLIScheduleAddQuartzWithoutSyntax(t *testing.T) {
	t.Parallel()
	url := startAPI(t)
	mustChime(t, url, "definition", "add", "report", "--task-type", "sleep", "--params", `{"duration":"1s"}`)
	for _, c := range []struct{ expr, what string }{
		{"0 0 12 ? * 1", `"?" in day-of-month is Quartz syntax`},
		{"0 15 10 ? * 6L", `"6L" in day-of-week is Quartz syntax`},
		{"0 0 12 ? * 1 2031", "7 fields (a year last) is Quartz syntax"},
	} {
		for _, extra := range [][]string{nil, {"--dry-run"}, {"--cron-syntax", "standard", "--dry-run"}} {
			args := append([]string{"schedule", "add", "noon", "--definition", "report", "--cron", c.expr}, extra...)
			out, err := chime(t, url, args...)
			require.Error(t, err, "%v: %s", args, out)
			require.ErrorContains(t, err, c.what, args)
			require.ErrorContains(t, err, "set cron_syntax to quartz (--cron-syntax quartz)", args)
			require.NotContains(t, err.Error(), "strconv", args)
			require.NotContains(t, out, "Mon ", args)
		}
	}
	out := mustChime(t, url, "schedule", "add", "noon", "--definition", "report", "--cron", "0 0 12 ? * 1", "--cron-syntax", "quartz", "--dry-run")
	require.Len(t, regexp.MustCompile(`(?m)T12:00:00Z\s+Sun \d{4}-\d\d-\d\d 12:00:00 UTC$`).FindAllString(out, -1), 5, out)

	// An edit to the standard syntax, or of a standard schedule's
	// expression, is refused likewise.
	mustChime(t, url, "schedule", "add", "noon", "--definition", "report", "--cron", "0 0 12 ? * 1", "--cron-syntax", "quartz")
	_, err := chime(t, url, "schedule", "edit", "noon", "--cron-syntax", "standard")
	require.ErrorContains(t, err, "set cron_syntax to quartz (--cron-syntax quartz)")
	mustChime(t, url, "schedule", "add", "mondays", "--definition", "report", "--cron", "0 12 * * 1")
	_, err = chime(t, url, "schedule", "edit", "mondays", "--cron", "0 15 10 * * 6L")
	require.ErrorContains(t, err, `"6L" in day-of-week is Quartz syntax`)
}
