package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
