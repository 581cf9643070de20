package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func helpOf(t *testing.T, args ...string) string {
	t.Helper()
	cmd := NewRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs(append(args, "--help"))
	require.NoError(t, cmd.Execute())
	return out.String()
}

// --help says what a newcomer needs: serve names its variables, client
// commands list only the flags they use, pause says what resuming writes.
func TestHelpTexts(t *testing.T) {
	t.Parallel()
	serve := helpOf(t, "serve")
	for _, v := range []string{"CHIME_API_ADDR", "CHIME_DATABASE_DSN", "CHIME_NODE_ID", "--config", "--log-level"} {
		require.Contains(t, serve, v)
	}
	for _, args := range [][]string{{"job", "list"}, {"nodes"}, {"schedule", "add"}, {"config", "set"}} {
		h := helpOf(t, args...)
		for _, f := range []string{"--config", "--log-level", "--log-format"} {
			require.NotContains(t, h, f, strings.Join(args, " "))
		}
	}
	require.Contains(t, helpOf(t, "migrate"), "--config")
	pause := helpOf(t, "schedule", "pause")
	require.Contains(t, pause, "catch-up job")
	require.Contains(t, pause, "fire_once")
}
