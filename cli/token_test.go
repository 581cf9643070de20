package cli

import (
	"bytes"
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTokenCommands: create prints the token once, and it works with its
// role; list shows it without the token; revoke ends it.
func TestTokenCommands(t *testing.T) {
	t.Parallel()
	url := startAPI(t)

	out := mustChime(t, url, "token", "create", "--name", "oncall", "--role", "viewer", "--expires", "720h")
	tok := regexp.MustCompile(`(?m)^(chime_\S+)$`).FindStringSubmatch(out)
	require.Len(t, tok, 2, out)
	require.Contains(t, out, "cannot show it again")

	out = mustChime(t, url, "token", "list")
	require.Regexp(t, `(?m)^NAME\s+ROLE\s+SCOPE\s+EXPIRES\s+STATE`, out)
	require.Regexp(t, `(?m)^oncall\s+viewer\s+\S+\s+live`, out)
	require.NotContains(t, out, tok[1])

	// The new token, as the CLI's own: it reads, it may not write.
	as := func(args ...string) (string, error) {
		cmd := NewRootCommand()
		var buf bytes.Buffer
		cmd.SetOut(&buf)
		cmd.SetErr(&buf)
		cmd.SetArgs(append(args, "--api-url", url, "--token", tok[1]))
		err := cmd.ExecuteContext(context.Background())
		return buf.String(), err
	}
	out, err := as("token", "whoami")
	require.NoError(t, err, out)
	require.Regexp(t, `(?m)^role:\s+viewer$`, out)
	_, err = as("definition", "list")
	require.NoError(t, err)
	out, err = as("definition", "add", "x", "--task-type", "sleep")
	require.Error(t, err)
	require.Contains(t, err.Error()+out, "role viewer may not")

	_, err = chime(t, url, "token", "create", "--name", "bad", "--role", "root")
	require.ErrorContains(t, err, "role must be")
	_, err = chime(t, url, "token", "create", "--name", "bad", "--role", "viewer", "--expires", "soon")
	require.ErrorContains(t, err, "--expires")

	out = mustChime(t, url, "token", "revoke", "oncall")
	require.Contains(t, out, "revoked token oncall")
	_, err = as("token", "whoami")
	require.ErrorContains(t, err, "invalid bearer token")
	require.Regexp(t, `(?m)^oncall\s+viewer\s+\S+\s+revoked `, mustChime(t, url, "token", "list"))
}

func TestExpiryOf(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	got, err := expiryOf("2h", now)
	require.NoError(t, err)
	require.Equal(t, now.Add(2*time.Hour), got)
	got, err = expiryOf("2031-05-01T00:00:00Z", now)
	require.NoError(t, err)
	require.Equal(t, 2031, got.Year())
	for _, bad := range []string{"-1h", "0s", "tomorrow", ""} {
		_, err := expiryOf(bad, now)
		require.Error(t, err, bad)
	}
}
