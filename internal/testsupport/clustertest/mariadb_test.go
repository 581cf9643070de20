package clustertest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the private server is reached through database/sql
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/syncbuf"
)

// mariaDB is a private mariadbd the test can stop and start: its own data
// directory, port and socket, so taking it away disturbs nobody else.
type mariaDB struct {
	bin, dir, user string
	port           int
	proc           *exec.Cmd
	done           chan struct{}
	out            *syncbuf.Buffer
}

// findTool looks on PATH, then in the sbin directories Debian uses for mariadbd.
func findTool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/usr/local/sbin"} {
		if p := filepath.Join(dir, name); fileExists(p) {
			return p
		}
	}
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// startMariaDB initialises a data directory in t.TempDir() and starts
// mariadbd on a free port. Without the binaries the test is skipped, unless
// CI=true.
func startMariaDB(t *testing.T) *mariaDB {
	t.Helper()
	bin, install := findTool("mariadbd"), findTool("mariadb-install-db")
	if bin == "" || install == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("mariadbd and mariadb-install-db are needed for the outage test")
		}
		t.Skip("mariadbd or mariadb-install-db not found; skipping the outage test")
	}
	u, err := user.Current()
	require.NoError(t, err)
	m := &mariaDB{bin: bin, dir: t.TempDir(), user: u.Username}
	out, err := exec.Command(install, "--no-defaults", "--datadir="+filepath.Join(m.dir, "data"), "--user="+m.user,
		"--auth-root-authentication-method=normal", "--skip-test-db").CombinedOutput()
	require.NoError(t, err, "mariadb-install-db: %s", out)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	m.port = l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	m.start(t)
	t.Cleanup(func() {
		m.stop(t)
		if t.Failed() {
			t.Logf("mariadbd output (last 2 KiB):\n%s", tail(m.out.String(), 2048))
		}
	})
	return m
}

// dsn reaches database db on the private server as root, which
// --auth-root-authentication-method=normal lets in over TCP without a password.
func (m *mariaDB) dsn(db string) string {
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s", m.port, db)
}

func (m *mariaDB) start(t *testing.T) {
	t.Helper()
	m.out = &syncbuf.Buffer{}
	m.done = make(chan struct{})
	m.proc = exec.Command(m.bin, "--no-defaults", "--datadir="+filepath.Join(m.dir, "data"), fmt.Sprint("--port=", m.port),
		"--bind-address=127.0.0.1", "--socket="+filepath.Join(m.dir, "mysqld.sock"), "--pid-file="+filepath.Join(m.dir, "mysqld.pid"),
		"--user="+m.user, "--skip-log-bin", "--skip-name-resolve", "--innodb-buffer-pool-size=64M", "--max-connections=500")
	m.proc.Stdout, m.proc.Stderr = m.out, m.out
	require.NoError(t, m.proc.Start())
	go func(p *exec.Cmd, done chan struct{}) {
		_ = p.Wait()
		close(done)
	}(m.proc, m.done)
	db, err := sql.Open("mysql", m.dsn(""))
	require.NoError(t, err)
	defer db.Close()
	waitFor(t, 30*time.Second, "the private mariadbd to accept connections", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return db.PingContext(ctx) == nil
	})
}

// stop shuts the server down with SIGTERM, as an operator or a package
// upgrade would, and waits for it to exit.
func (m *mariaDB) stop(t *testing.T) {
	t.Helper()
	select {
	case <-m.done:
		return
	default:
	}
	_ = m.proc.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		_ = m.proc.Process.Kill()
		<-m.done
		t.Error("mariadbd did not stop within 30s of SIGTERM")
	}
}

func (m *mariaDB) createDatabase(t *testing.T, name string) {
	t.Helper()
	db, err := sql.Open("mysql", m.dsn(""))
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec("CREATE DATABASE `" + name + "` CHARACTER SET utf8mb4")
	require.NoError(t, err)
}
