package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"
)

// sqliteFile returns the file a SQLite DSN names, or "" for an in-memory
// database, which no other process can share.
func sqliteFile(dsn string) string {
	if dsn == "" {
		dsn = "chime.db"
	}
	path := strings.TrimPrefix(dsn, "file:")
	if i := strings.IndexByte(path, '?'); i >= 0 {
		if strings.Contains(path[i:], "mode=memory") {
			return ""
		}
		path = path[:i]
	}
	if path == "" || path == ":memory:" {
		return ""
	}
	return path
}

// checkSQLiteDir turns the driver's "out of memory (14)" for a file in a
// missing directory into a message that says what is wrong.
func checkSQLiteDir(file string) error {
	dir := filepath.Dir(file)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("database.dsn %q: directory %s does not exist; create it or choose another path", file, dir)
	case err != nil:
		return fmt.Errorf("database.dsn %q: %w", file, err)
	case !st.IsDir():
		return fmt.Errorf("database.dsn %q: %s is not a directory", file, dir)
	}
	return nil
}

// createSQLiteFile creates a missing database file empty (an empty file is
// an empty SQLite database) with mode 0600 before the driver opens it: the
// driver would create it 0644 less the umask, readable by every local user,
// and SQLite gives the -wal and -shm files the main file's mode. An
// existing file keeps its mode, which is its owner's choice; one that
// others may read gets a warning.
func createSQLiteFile(dsn, file string, log logrus.FieldLogger) error {
	if _, query, ok := strings.Cut(dsn, "?"); ok && strings.Contains(query, "mode=ro") {
		return nil // read-only: the driver refuses a missing file, as it should
	}
	f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		return f.Close()
	}
	if !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("database.dsn %q: %w", file, err)
	}
	if st, err := os.Stat(file); err == nil && runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		log.WithFields(logrus.Fields{"file": file, "mode": fmt.Sprintf("%#o", st.Mode().Perm())}).Warn(
			"the SQLite database file is open to group or others, who can read every definition and setting in it: " +
				"chmod 600 it (and its -wal and -shm files) unless that is meant")
	}
	return nil
}

// ErrSQLiteInUse says that another chime process already runs on a SQLite
// file. SQLite is the single-node default: a second node on the same file
// would claim jobs of task types only the first one registers, and two
// processes firing from one file is a cluster SQLite cannot lock safely.
var ErrSQLiteInUse = errors.New("SQLite database in use by another chime process")

// lockSQLite takes an exclusive advisory lock on file + ".lock" for the life
// of the process (the kernel drops it when the process dies, even by
// SIGKILL, so a crash never leaves a stale lock) and writes holder into it
// for the message the next process gets.
func lockSQLite(file, holder string) (release func(), err error) {
	lockPath := file + ".lock"
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("database.dsn %q: lock file: %w", file, err)
	}
	if err := flock(f); err != nil {
		owner, _ := os.ReadFile(lockPath)
		_ = f.Close()
		who := strings.TrimSpace(string(owner))
		if who == "" {
			who = "another process"
		}
		return nil, fmt.Errorf("%w: %s is held by %s (lock %s); stop that process, "+
			"or give this one its own file with CHIME_DATABASE_DSN; several nodes need PostgreSQL or MySQL/MariaDB",
			ErrSQLiteInUse, file, who, lockPath)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(holder+"\n"), 0)
	return func() {
		_ = f.Truncate(0)
		_ = funlock(f)
		_ = f.Close()
	}, nil
}

// lockHolder describes this process in the lock file.
func lockHolder(name string) string {
	if name == "" {
		name = "chime"
	}
	return name + " (pid " + strconv.Itoa(os.Getpid()) + ")"
}
