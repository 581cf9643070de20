package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// chime migrate says which migrations it applied, or that none were
// needed: it printed the same "schema version N" either way.
func TestMigrateSaysWhatItApplied(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	config := filepath.Join(dir, "chime.yaml")
	require.NoError(t, os.WriteFile(config, []byte("database:\n  driver: sqlite\n  dsn: "+filepath.Join(dir, "chime.db")+"\nlog:\n  level: warn\n"), 0o600))

	out, errOut, code := runChime(t, "migrate", "--config", config)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "applied 00001_init\n")
	require.Regexp(t, regexp.MustCompile(`(?m)^schema version (\d+) \(sqlite\): applied \d+ migrations$`), out)

	out, errOut, code = runChime(t, "migrate", "--config", config)
	require.Equal(t, 0, code, errOut)
	require.NotContains(t, out, "applied 0")
	require.Regexp(t, regexp.MustCompile(`^schema version \d+ \(sqlite\): up to date, no migration needed\n$`), out)
}
