package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCLIListsInvalidRows: a row whose JSON column plain SQL filled with
// text that is not JSON is listed, marked invalid with the API's reason,
// beside the good rows (every list failed with "decode list: unexpected
// end of JSON input" before).
func TestCLIListsInvalidRows(t *testing.T) {
	t.Parallel()
	url, st := startAPIStore(t)
	mustChime(t, url, "definition", "add", "good", "--task-type", "sleep", "--params", `{"duration":"1s"}`)
	mustChime(t, url, "definition", "add", "bad", "--task-type", "sleep", "--params", `{"duration":"1s"}`)
	mustChime(t, url, "schedule", "add", "good", "--definition", "good", "--every", "1m")
	mustChime(t, url, "schedule", "add", "bad", "--definition", "good", "--every", "1m")
	mustChime(t, url, "calendar", "add", "good", "--kind", "weekly", "--definition", `{"days":["sun"]}`)
	mustChime(t, url, "calendar", "add", "bad", "--kind", "weekly", "--definition", `{"days":["sun"]}`)
	mustChime(t, url, "job", "run", "good")
	mustChime(t, url, "job", "run", "good")
	for _, q := range []string{
		"UPDATE job_definitions SET default_params = 'not json' WHERE name = 'bad'",
		"UPDATE schedules SET params = 'not json' WHERE name = 'bad'",
		"UPDATE calendars SET definition = 'not json' WHERE name = 'bad'",
		"UPDATE jobs SET params = 'not json' WHERE id = 2",
	} {
		require.NoError(t, st.DB().Exec(q).Error, q)
	}
	for _, c := range []struct{ what, column, bad string }{
		{"definition", "default_params", "bad"},
		{"schedule", "params", "bad"},
		{"calendar", "definition", "bad"},
		{"job", "params", "2"},
	} {
		out := mustChime(t, url, c.what, "list")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.Regexp(t, `^2 \(invalid\)\s`, lines[1], "%s list marks the row: %s", c.what, out)
		require.Regexp(t, `(?m)^1\s`, out, "%s list shows the good row: %s", c.what, out)
		require.Contains(t, out, "invalid row 2: "+c.column+" ", out)

		out = mustChime(t, url, c.what, "show", c.bad)
		require.Regexp(t, `(?m)^invalid:\s+true$`, out)
		require.Regexp(t, `(?m)^invalid_reason:\s+`+c.column+` `, out)
	}
}
