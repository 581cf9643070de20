package store_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/store"
)

// holderEnv makes the test binary, started again as a child, hold an
// exclusive SQLite store open until its standard input closes.
const holderEnv = "CHIME_TEST_SQLITE_HOLDER"

func TestMain(m *testing.M) {
	if path := os.Getenv(holderEnv); path != "" {
		os.Exit(holdSQLite(path))
	}
	os.Exit(m.Run())
}

func holdSQLite(path string) int {
	st, err := store.Open(context.Background(), store.Config{Driver: store.SQLite, DSN: path, Exclusive: true, Holder: "child"})
	if err != nil {
		os.Stdout.WriteString("error: " + err.Error() + "\n")
		return 1
	}
	defer st.Close()
	os.Stdout.WriteString("holding\n")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	return 0
}

// TestSecondProcessOnSQLiteFileRefused: a second chime process on the same
// SQLite file used to join silently as a second node.
func TestSecondProcessOnSQLiteFileRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chime.db")
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), holderEnv+"="+path)
	stdin, err := child.StdinPipe()
	require.NoError(t, err)
	out, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = stdin.Close(); _ = child.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "holding\n", line)

	ctx := context.Background()
	cfg := store.Config{Driver: store.SQLite, DSN: path, Exclusive: true, Holder: "parent"}
	_, err = store.Open(ctx, cfg)
	require.ErrorIs(t, err, store.ErrSQLiteInUse)
	require.Contains(t, err.Error(), "child (pid ")
	// Several nodes need a server database: either of the two.
	require.Contains(t, err.Error(), "PostgreSQL or MySQL/MariaDB")

	// A kill -9 of the holder frees the file: the kernel drops the lock.
	require.NoError(t, child.Process.Kill())
	_ = child.Wait()
	deadline := time.Now().Add(5 * time.Second)
	var st *store.Store
	for {
		st, err = store.Open(ctx, cfg)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // the child's exit is asynchronous to us
	}
	require.NoError(t, err)
	// Within one process too: a second Exclusive open waits for Close.
	_, err = store.Open(ctx, cfg)
	require.ErrorIs(t, err, store.ErrSQLiteInUse)
	require.NoError(t, st.Close())
	st, err = store.Open(ctx, cfg)
	require.NoError(t, err)
	require.NoError(t, st.Close())
}

func TestSQLiteFileInMissingDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "dir", "chime.db")
	_, err := store.Open(context.Background(), store.Config{Driver: store.SQLite, DSN: path})
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "does not exist"), err.Error())
	require.NotContains(t, err.Error(), "out of memory")
}
