//go:build unix

package store_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/store"
)

// TestSQLiteFilesAreOwnerOnly is finding 6 of issue 22: under umask 022
// chime.db and its -wal and -shm were created 0644, so every local user
// could read the definitions and whatever secrets they hold. Not
// parallel: the umask is the process's.
func TestSQLiteFilesAreOwnerOnly(t *testing.T) {
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })
	path := filepath.Join(t.TempDir(), "chime.db")
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{Driver: store.SQLite, DSN: path, Exclusive: true})
	require.NoError(t, err)
	_, err = st.Migrate(ctx)
	require.NoError(t, err)
	require.NoError(t, st.DB().Exec(`INSERT INTO job_definitions (name, task_type) VALUES ('nightly', 'sleep')`).Error)
	for _, f := range []string{path, path + "-wal", path + "-shm", path + ".lock"} {
		fi, err := os.Stat(f)
		require.NoError(t, err, "%s while the store is open", filepath.Base(f))
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), filepath.Base(f))
	}
	require.NoError(t, st.Close())

	// A file of an older chime, or one an admin made, keeps its mode: it
	// is theirs to decide; the node warns.
	shared := filepath.Join(t.TempDir(), "shared.db")
	require.NoError(t, os.WriteFile(shared, nil, 0o640))
	log, hook := logtest.NewNullLogger()
	st, err = store.Open(ctx, store.Config{Driver: store.SQLite, DSN: shared, Logger: log})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	fi, err := os.Stat(shared)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
	require.NotNil(t, hook.LastEntry())
	require.Contains(t, hook.LastEntry().Message, "open to group or others")
	require.Equal(t, "0640", hook.LastEntry().Data["mode"])
}
