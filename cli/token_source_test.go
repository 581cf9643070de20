package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/app"
)

// A refused token says where it came from, and a missing one names the
// file the CLI looked for: "invalid bearer token" alone left the user to
// guess which of five places held the stale token. Not parallel: it points
// the user configuration directory at a temporary one.
func TestTokenErrorsSayWhere(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir()) // macOS reads the directory from HOME
	url := startAPI(t)
	dir := t.TempDir()
	stale := filepath.Join(dir, "stale.token")
	require.NoError(t, os.WriteFile(stale, []byte("a-stale-token-0123456789\n"), 0o600))
	def, err := app.DefaultTokenFile()
	require.NoError(t, err)

	call := func(f *clientFlags, env map[string]string) error {
		t.Helper()
		f.apiURL, f.output = url, "table"
		cl, err := f.clientWith(fakeEnv(env))
		require.NoError(t, err)
		return cl.do(context.Background(), "GET", "/api/v1/nodes", nil, nil, nil)
	}
	for _, c := range []struct {
		name  string
		flags clientFlags
		env   map[string]string
		want  string
	}{
		{"flag", clientFlags{token: "wrong"}, nil, "invalid bearer token (the token came from --token)"},
		{"env", clientFlags{}, map[string]string{EnvAPIToken: "wrong"}, "invalid bearer token (the token came from " + EnvAPIToken + ")"},
		{"flag file", clientFlags{tokenFile: stale}, nil, "invalid bearer token (the token came from --token-file " + stale + ")"},
		{"env file", clientFlags{}, map[string]string{EnvAPITokenFile: stale}, "invalid bearer token (the token came from " + EnvAPITokenFile + "=" + stale + ")"},
		{"missing", clientFlags{}, nil, "missing bearer token: send Authorization: Bearer <CHIME_API_TOKEN> (no token: " +
			"--token, " + EnvAPIToken + " and " + EnvAPITokenFile + " are unset, and " + def + " does not exist"},
	} {
		err := call(&c.flags, c.env)
		require.ErrorContains(t, err, c.want, c.name)
	}

	// The file chime serve writes, when it holds another server's token.
	require.NoError(t, os.MkdirAll(filepath.Dir(def), 0o700))
	require.NoError(t, os.WriteFile(def, []byte("another-servers-token-0123\n"), 0o600))
	err = call(&clientFlags{}, nil)
	require.ErrorContains(t, err, "invalid bearer token (the token came from "+def+", the file chime serve writes)")

	// That file is never sent to another host, and the message says so.
	f := &clientFlags{apiURL: "https://chime.example.com", output: "table"}
	cl, err := f.clientWith(fakeEnv(nil))
	require.NoError(t, err)
	require.Empty(t, cl.token)
	require.Contains(t, cl.tokenSource, "("+def+") is sent only to a loopback --api-url")
}
