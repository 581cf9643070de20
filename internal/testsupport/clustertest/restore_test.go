package clustertest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
)

// A backup taken with the database's own tool while a node runs under
// load (mariadb-dump --single-transaction, pg_dump: docs/operations.md),
// restored into a fresh database that a new node then starts on: every
// schedule resumes with one catch-up job for the seconds between the dump
// and the start, no second is fired twice, and the jobs the dump caught
// running end as after a node loss (the dumped node is dead to the new
// one), none left live.
func TestRestoreDumpUnderLoad(t *testing.T) {
	t.Run("mysql", func(t *testing.T) {
		restoreUnderLoad(t, testdb.CreateMySQLDatabase(t), testdb.CreateMySQLDatabase(t), mysqlDump, mysqlRestore)
	})
	t.Run("postgres", func(t *testing.T) {
		restoreUnderLoad(t, testdb.CreatePostgresDatabase(t), testdb.CreatePostgresDatabase(t), pgDump, pgRestore)
	})
}

type dumpFunc func(t *testing.T, dsn, file string)

func restoreUnderLoad(t *testing.T, dsn, freshDSN string, dump, restore dumpFunc) {
	ctx := context.Background()
	bin := chimeBinary(t)
	migrate(t, bin, dsn)
	st := openStore(t, dsn)
	ids := seedSchedules(t, st, schedules, "2s")
	node := startNode(t, bin, dsn, "before")
	waitFor(t, 30*time.Second, "the node to run and finish jobs", func() bool {
		return count(t, st, "SELECT COUNT(*) FROM jobs WHERE status = ?", models.JobSucceeded) > 0 &&
			count(t, st, "SELECT COUNT(*) FROM jobs WHERE status = ?", models.JobRunning) > 0
	})
	file := filepath.Join(t.TempDir(), "chime.dump")
	dump(t, dsn, file)
	dumped, err := st.DBNow(ctx)
	require.NoError(t, err)
	// The original is lost with its node: only the dump is left.
	node.kill()

	restore(t, freshDSN, file)
	rst := openStore(t, freshDSN)
	var at time.Time
	require.NoError(t, rst.DB().Raw("SELECT MAX(created_at) FROM jobs").Row().Scan(&at))
	running := count(t, rst, "SELECT COUNT(*) FROM jobs WHERE status IN ?", []models.JobStatus{models.JobQueued, models.JobRunning})
	t.Logf("dump: %d jobs, the last written %s before the dump ended; %d queued or running in it",
		count(t, rst, "SELECT COUNT(*) FROM jobs"), dumped.Sub(at).Round(time.Millisecond), running)
	require.Positive(t, running, "the dump caught no job running: it was not taken under load")
	// Past the misfire threshold (5 s): the seconds since the dump are a
	// misfire, written as one catch-up job per schedule.
	for {
		now, err := rst.DBNow(ctx)
		require.NoError(t, err)
		if now.Sub(at) > 6*time.Second {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	after := startNode(t, bin, freshDSN, "after")
	live := func() int64 {
		return count(t, rst, "SELECT COUNT(*) FROM jobs WHERE created_at <= ? AND status NOT IN ?", at,
			[]models.JobStatus{models.JobSucceeded, models.JobFailed})
	}
	caughtUp := func() int64 {
		return count(t, rst, "SELECT COUNT(DISTINCT schedule_id) FROM jobs WHERE catch_up = ? AND scheduled_at > ?", true, at)
	}
	waitForOr(t, failover+60*time.Second, "the dumped jobs to end and each schedule's catch-up", func() bool {
		return live() == 0 && caughtUp() == int64(len(ids))
	}, func() string {
		return fmt.Sprintf("%d dumped jobs still live, %d of %d schedules caught up\n%s", live(), caughtUp(), len(ids), unfinished(t, rst, at.Add(time.Second)))
	})
	time.Sleep(2 * time.Second) // a few on-time fires after the catch-ups
	after.stop(t, 15*time.Second)
	var reasons []string
	require.NoError(t, rst.DB().Raw("SELECT error FROM jobs WHERE status = ? AND created_at <= ?", models.JobFailed, at).Scan(&reasons).Error)
	for _, r := range reasons {
		require.Regexp(t, "node before died|no heartbeat from node before", r)
	}
	t.Logf("after the restore: %d dumped jobs failed as after a node loss, the rest succeeded", len(reasons))
	checkFires(t, rst, ids, at, 1)
}

func mysqlDump(t *testing.T, dsn, file string) {
	t.Helper()
	c, err := mysqldrv.ParseDSN(dsn)
	require.NoError(t, err)
	host, port, err := net.SplitHostPort(c.Addr)
	require.NoError(t, err)
	cmd := exec.Command("mariadb-dump", "--single-transaction", "--routines", "--triggers", "--no-tablespaces",
		"-h", host, "-P", port, "-u", c.User, "--result-file="+file, c.DBName)
	cmd.Env = append(os.Environ(), "MYSQL_PWD="+c.Passwd)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "mariadb-dump: %s", out)
}

func mysqlRestore(t *testing.T, dsn, file string) {
	t.Helper()
	c, err := mysqldrv.ParseDSN(dsn)
	require.NoError(t, err)
	host, port, err := net.SplitHostPort(c.Addr)
	require.NoError(t, err)
	in, err := os.Open(file)
	require.NoError(t, err)
	defer in.Close()
	cmd := exec.Command("mariadb", "-h", host, "-P", port, "-u", c.User, c.DBName)
	cmd.Env = append(os.Environ(), "MYSQL_PWD="+c.Passwd)
	cmd.Stdin = in
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "mariadb < dump: %s", out)
}

func pgDump(t *testing.T, dsn, file string) {
	t.Helper()
	out, err := exec.Command("pg_dump", "--format=custom", "--no-owner", "--file="+file, "--dbname="+dsn).CombinedOutput()
	require.NoError(t, err, "pg_dump: %s", out)
}

func pgRestore(t *testing.T, dsn, file string) {
	t.Helper()
	out, err := exec.Command("pg_restore", "--no-owner", "--exit-on-error", "--dbname="+dsn, file).CombinedOutput()
	require.NoError(t, err, "pg_restore: %s", out)
}
