package cli

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The CLI shows secrets as the API does, redacted, and passes on the
// API's refusals, naming the key.
func TestConfigCommand(t *testing.T) {
	t.Parallel()
	url := startAPI(t)
	const secret = "hunter2-cli"
	mustChime(t, url, "config", "set", "smtp.username", "chime")
	out := mustChime(t, url, "config", "set", "smtp.password", secret, "--description", "relay login")
	require.NotContains(t, out, secret)
	mustChime(t, url, "config", "set", "taskengine.pool_size", "8")
	for _, args := range [][]string{
		{"config", "list"}, {"config", "list", "-o", "json"},
		{"config", "get", "smtp.password"}, {"config", "get", "smtp.password", "-o", "json"},
	} {
		out := mustChime(t, url, args...)
		require.NotContains(t, out, secret, args)
		require.Contains(t, out, "********", args)
	}
	require.Contains(t, mustChime(t, url, "config", "list"), "taskengine.pool_size")
	_, err := chime(t, url, "config", "set", "taskengine.poolsize", "8")
	require.ErrorContains(t, err, "did you mean taskengine.pool_size?")
	_, err = chime(t, url, "config", "set", "api.token", "x")
	require.ErrorContains(t, err, "CHIME_API_TOKEN")
}
