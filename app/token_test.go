package app

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/configs"
)

func tokenConfig(t *testing.T, file string) *configs.Config {
	t.Helper()
	cfg, err := configs.Load("", func(string) string { return "" })
	require.NoError(t, err)
	cfg.API.TokenFile = file
	return cfg
}

// TestEnsureTokenGeneratesOnce: a node without api.token gets a random
// token in a file only its owner can read, and keeps it across restarts.
func TestEnsureTokenGeneratesOnce(t *testing.T) {
	t.Parallel()
	log, _ := test.NewNullLogger()
	file := filepath.Join(t.TempDir(), "sub", "api.token")
	cfg := tokenConfig(t, file)
	require.NoError(t, EnsureToken(cfg, log))
	tok := cfg.API.Token
	require.GreaterOrEqual(t, len(tok), 40)
	st, err := os.Stat(file)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	dir, err := os.Stat(filepath.Dir(file))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), dir.Mode().Perm())

	again := tokenConfig(t, file)
	require.NoError(t, EnsureToken(again, log))
	require.Equal(t, tok, again.API.Token, "a restart reuses the file")
	got, err := ReadTokenFile(file)
	require.NoError(t, err)
	require.Equal(t, tok, got)

	// A configured token wins, and no file is written.
	other := filepath.Join(t.TempDir(), "api.token")
	set := tokenConfig(t, other)
	set.API.Token = "configured-token-0123"
	require.NoError(t, EnsureToken(set, log))
	require.Equal(t, "configured-token-0123", set.API.Token)
	require.NoFileExists(t, other)
}

func TestEnsureTokenRace(t *testing.T) {
	t.Parallel()
	log, _ := test.NewNullLogger()
	file := filepath.Join(t.TempDir(), "api.token")
	toks := make([]string, 8)
	var wg sync.WaitGroup
	for i := range toks {
		wg.Go(func() {
			cfg := tokenConfig(t, file)
			if err := EnsureToken(cfg, log); err == nil {
				toks[i] = cfg.API.Token
			}
		})
	}
	wg.Wait()
	for _, tok := range toks {
		require.Equal(t, toks[0], tok, "nodes starting together on one host share one token")
	}
	require.NotEmpty(t, toks[0])
}

func TestTokenFileRefused(t *testing.T) {
	t.Parallel()
	log, _ := test.NewNullLogger()
	dir := t.TempDir()
	for name, c := range map[string]struct {
		body string
		mode os.FileMode
		want string
	}{
		"readable by others": {"0123456789abcdef0123", 0o644, "readable by group or others"},
		"readable by group":  {"0123456789abcdef0123", 0o640, "chmod 600"},
		"short":              {"short\n", 0o600, "at least 16 characters"},
		"empty":              {"", 0o600, "at least 16 characters"},
		"two lines":          {"0123456789abcdef\n0123456789abcdef\n", 0o600, "one line"},
	} {
		file := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(file, []byte(c.body), c.mode))
		require.NoError(t, os.Chmod(file, c.mode))
		err := EnsureToken(tokenConfig(t, file), log)
		require.ErrorContains(t, err, c.want, name)
		require.ErrorContains(t, err, file, "the message names the file")
	}
	_, err := ReadTokenFile(filepath.Join(dir, "missing"))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "isdir"), 0o700))
	require.ErrorContains(t, EnsureToken(tokenConfig(t, filepath.Join(dir, "isdir")), log), "not a regular file")
}

// The console's login page names the token file the node uses, as an
// absolute path, and none when the configuration set the token.
func TestNodeTokenFileForTheConsole(t *testing.T) {
	cfg := tokenConfig(t, filepath.Join("conf", "api.token"))
	n := &node{base: cfg}
	wd, err := os.Getwd()
	require.NoError(t, err)
	require.Equal(t, filepath.Join(wd, "conf", "api.token"), n.tokenFile())
	cfg.API.Token = "set-in-the-configuration"
	require.Empty(t, n.tokenFile())
}
