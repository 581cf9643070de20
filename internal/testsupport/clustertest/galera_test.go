package clustertest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// galeraScript is the script that runs the Galera cluster, from this package.
const galeraScript = "../../../scripts/ha/galera.sh"

// TestGaleraFailover is TestPatroniFailover on MariaDB Galera used
// single-writer (scripts/ha/galera.sh: three nodes from Debian's galera-4,
// HAProxy sending every connection to the first node up): the writer is
// killed with SIGKILL three times, so that HAProxy moves the nodes to the
// next one, and started again each time, so that HAProxy moves them back
// and cuts the sessions on the node they had moved to. It runs only when
// CHIME_TEST_GALERA=1 (scripts/ha/failover-test.sh galera); never in CI.
func TestGaleraFailover(t *testing.T) {
	if os.Getenv("CHIME_TEST_GALERA") != "1" {
		t.Skip("CHIME_TEST_GALERA=1 runs it (scripts/ha/failover-test.sh galera): it needs galera-4 and haproxy and takes minutes")
	}
	dir, err := os.MkdirTemp("", "chime-galera-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() {
		if out, err := exec.Command(galeraScript, "down", dir).CombinedOutput(); err != nil {
			t.Logf("galera.sh down: %v\n%s", err, out)
		}
		if t.Failed() {
			t.Logf("the Galera cluster's data and logs: %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	t.Logf("starting the Galera cluster in %s", dir)
	_, err = haRun(galeraScript, "up", dir)
	require.NoError(t, err)
	var killed string
	var rounds []haRound
	for range 3 {
		rounds = append(rounds, haRound{"kill -9 of the writer", func() error {
			var err error
			killed, err = haRun(galeraScript, "kill-writer", dir)
			return err
		}}, haRound{"the killed writer back (fail-back)", func() error {
			_, err := haRun(galeraScript, "start", dir, killed)
			return err
		}})
	}
	dsn, err := haRun(galeraScript, "dsn", dir)
	require.NoError(t, err)
	failoverUnderLoad(t, dsn, rounds, galeraWriter, func() {
		_, err := haRun(galeraScript, "wait-synced", dir)
		require.NoError(t, err)
	})
}

// galeraWriter is the node a new connection through HAProxy reaches, when
// that node takes writes; "" when none does.
func galeraWriter() string {
	port := 13400
	if v, err := strconv.Atoi(os.Getenv("CHIME_GALERA_PROXY_PORT")); err == nil {
		port = v
	}
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/?timeout=500ms&readTimeout=1s", port))
	if err != nil {
		return ""
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var name, ready string
	err = db.QueryRowContext(ctx, `SELECT @@wsrep_node_name,
		(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_READY')`).Scan(&name, &ready)
	if err != nil || ready != "ON" {
		return ""
	}
	return name
}
