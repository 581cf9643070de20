package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// cronNext runs "chime cron next" in-process: no server, no token.
func cronNext(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := NewRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(append([]string{"cron", "next"}, args...))
	err := cmd.ExecuteContext(context.Background())
	if err != nil {
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), exitCode(err)
}

func TestCronNext(t *testing.T) {
	t.Parallel()
	lines := func(s string) []string { return strings.Fields(s) }

	// Quartz: 1 is Sunday; standard: 1 is Monday, as before.
	out, _, code := cronNext(t, "0 0 0 ? * 1", "--syntax", "quartz", "--from", "2026-01-01T00:00:00Z", "--count", "3")
	require.Equal(t, 0, code)
	require.Equal(t, []string{"2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z", "2026-01-18T00:00:00Z"}, lines(out))
	out, _, code = cronNext(t, "0 0 * * 1", "--from", "2026-01-01T00:00:00Z", "--count", "1")
	require.Equal(t, 0, code)
	require.Equal(t, []string{"2026-01-05T00:00:00Z"}, lines(out))

	// Times print in the zone; Quartz skips 02:30 on the day Berlin
	// springs forward (what real Quartz computes).
	out, _, _ = cronNext(t, "0 30 2 * * ?", "--syntax", "quartz", "--timezone", "Europe/Berlin",
		"--from", "2026-03-28T00:00:00Z", "--count", "2")
	require.Equal(t, []string{"2026-03-28T02:30:00+01:00", "2026-03-30T02:30:00+02:00"}, lines(out))

	// The examples, and the year field.
	out, _, _ = cronNext(t, "0 15 10 ? * 6L", "--syntax", "quartz", "--from", "2026-01-01T00:00:00Z", "--count", "2")
	require.Equal(t, []string{"2026-01-30T10:15:00Z", "2026-02-27T10:15:00Z"}, lines(out))
	out, _, _ = cronNext(t, "0 0 9 LW * ? 2027", "--syntax", "quartz", "--from", "2026-01-01T00:00:00Z", "--count", "1")
	require.Equal(t, []string{"2027-01-29T09:00:00Z"}, lines(out))

	// No more fires: nothing on stdout, this line on stderr, success
	// (docs/quartz.md says so).
	out, errOut, code := cronNext(t, "0 0 0 1 1 ? 2020", "--syntax", "quartz", "--from", "2026-01-01T00:00:00Z")
	require.Equal(t, 0, code)
	require.Empty(t, out)
	require.Equal(t, "no fire time after 2026-01-01T00:00:00Z\n", errOut)
	out, errOut, code = cronNext(t, "0 0 30 2 *", "--timezone", "Europe/Berlin", "--from", "2026-01-01T00:00:00Z")
	require.Equal(t, 0, code)
	require.Empty(t, out)
	require.Equal(t, "no fire time after 2026-01-01T01:00:00+01:00\n", errOut)

	// Refusals exit with 2 and say why.
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"0 0 0 * * *", "--syntax", "quartz"}, "Support for specifying both a day-of-week AND a day-of-month parameter is not implemented."},
		{[]string{"0 0 0 ? * 8", "--syntax", "quartz"}, "Day-of-Week values must be between 1 and 7"},
		{[]string{"0 15 10 ? * 6L"}, `invalid standard cron expression "0 15 10 ? * 6L": "6L" in day-of-week is Quartz syntax, not standard: if the expression is Quartz's, add --syntax quartz`},
		{[]string{"0 0 12 ? * 1"}, `"?" in day-of-month is Quartz syntax, not standard: if the expression is Quartz's, add --syntax quartz; mind the days`},
		{[]string{"0 0 12 ? * 1 2026"}, "7 fields (a year last) is Quartz syntax"},
		{[]string{"x * * * *"}, `invalid standard cron expression: bad cron_expr "x * * * *": minute field "x": "x" is not a number`},
		{[]string{"* * * * *", "--timezone", "Mars/Olympus"}, `--timezone: unknown timezone "Mars/Olympus"`},
		// The zone rules of a schedule: nodes may differ on Local.
		{[]string{"* * * * *", "--timezone", "Local"}, `--timezone: timezone "Local" is not allowed`},
		{[]string{"* * * * *", "--from", "yesterday"}, "not an RFC3339 time"},
		{[]string{"* * * * *", "--syntax", "unix"}, `unknown --syntax "unix"`},
		{[]string{"* * * * *", "--count", "0"}, "--count must be between 1 and 1000"},
	} {
		out, errOut, code := cronNext(t, c.args...)
		require.Equal(t, 2, code, c.args)
		require.Empty(t, out, c.args)
		require.Contains(t, errOut, c.msg, c.args)
		require.NotContains(t, errOut, "strconv", c.args)
		require.NotContains(t, errOut, "--cron-syntax", "cron next's switch is --syntax: %v", c.args)
	}
}
