package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A misspelt CHIME_* variable is reported at start with the variable meant,
// as a warning: the command still runs. Not parallel: it sets the process's
// environment.
func TestMisspeltVariableWarned(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "chime.yaml")
	require.NoError(t, os.WriteFile(config, []byte("database:\n  driver: sqlite\n  dsn: "+filepath.Join(dir, "chime.db")+"\n"), 0o600))
	t.Setenv("CHIME_TASKENGINE_POOLSIZE", "4")
	t.Setenv("CHIME_API_URL", "http://127.0.0.1:1")

	_, errOut, code := runChime(t, "migrate", "--config", config)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "CHIME_TASKENGINE_POOLSIZE is not a variable chime reads: ignored; did you mean CHIME_TASKENGINE_POOL_SIZE?")
	require.Contains(t, errOut, "level=warning")
	require.NotContains(t, errOut, "CHIME_API_URL is not")
}
