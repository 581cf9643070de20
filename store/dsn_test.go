package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/store"
)

// A DSN in another driver's form is named as such, with the driver to set,
// instead of failing on something else (a SQLite directory named
// root@tcp(127.0.0.1:3306), a MySQL DSN form for a PostgreSQL URL). No
// message repeats the DSN, which may hold a password.
func TestDSNOfAnotherDriver(t *testing.T) {
	t.Parallel()
	mysqlWant := []string{"looks like a MySQL DSN", "CHIME_DATABASE_DRIVER=mysql"}
	pgWant := []string{"looks like a PostgreSQL DSN", "CHIME_DATABASE_DRIVER=postgres"}
	sqliteWant := []string{"looks like a SQLite DSN", "CHIME_DATABASE_DRIVER=sqlite"}
	for _, c := range []struct {
		driver store.Dialect
		dsn    string
		want   []string
	}{
		{store.SQLite, "root:s3cret@tcp(127.0.0.1:3306)/chime", mysqlWant},
		{store.SQLite, "chime:s3cret@unix(/run/mysqld/mysqld.sock)/chime?parseTime=true", mysqlWant},
		{store.SQLite, "root:s3cret@127.0.0.1:3306/chime", mysqlWant},
		{store.SQLite, "mysql://root:s3cret@127.0.0.1:3306/chime", mysqlWant},
		{store.SQLite, "postgres://chime:s3cret@127.0.0.1:5432/chime?sslmode=disable", pgWant},
		{store.SQLite, "postgresql://chime:s3cret@db.example.com/chime", pgWant},
		{store.SQLite, "host=127.0.0.1 user=chime password=s3cret dbname=chime sslmode=disable", pgWant},
		{store.SQLite, "sqlite:///var/lib/chime/chime.db", []string{"not a sqlite:// URL", "file path"}},
		{store.SQLite, "sqlite://chime.db", []string{"not a sqlite:// URL", "file path"}},
		{store.MySQL, "postgres://chime:s3cret@127.0.0.1:5432/chime?sslmode=disable", pgWant},
		{store.MySQL, "POSTGRESQL://chime:s3cret@127.0.0.1/chime", pgWant},
		{store.MySQL, "host=127.0.0.1 user=chime password=s3cret dbname=chime", pgWant},
		{store.MySQL, "chime.db", sqliteWant},
		{store.MySQL, "/var/lib/chime/chime.sqlite3", sqliteWant},
		{store.MySQL, "file:/var/lib/chime/chime.db?_pragma=busy_timeout(5000)", sqliteWant},
		{store.MySQL, "sqlite:///var/lib/chime/chime.db", sqliteWant},
		{store.MySQL, ":memory:", sqliteWant},
		{store.Postgres, "root:s3cret@tcp(127.0.0.1:3306)/chime", mysqlWant},
		{store.Postgres, "mysql://root:s3cret@127.0.0.1:3306/chime", mysqlWant},
		{store.Postgres, "mariadb://root:s3cret@127.0.0.1:3306/chime", mysqlWant},
		{store.Postgres, "chime.db", sqliteWant},
		{store.Postgres, "file:chime.db", sqliteWant},
		{store.Postgres, "sqlite3:///tmp/chime.db", sqliteWant},
	} {
		_, err := store.Open(context.Background(), store.Config{Driver: c.driver, DSN: c.dsn})
		require.Error(t, err, "%s %s", c.driver, c.dsn)
		for _, w := range c.want {
			require.ErrorContains(t, err, w, "%s %s", c.driver, c.dsn)
		}
		require.NotContains(t, err.Error(), "s3cret", "%s %s", c.driver, c.dsn)
	}
}

// The forms a driver takes are not mistaken for another's.
func TestDSNOfItsOwnDriver(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, dsn := range []string{
		filepath.Join(dir, "a.db"),
		"file:" + filepath.Join(dir, "b.db"),
		"file:" + filepath.Join(dir, "c.db") + "?_pragma=busy_timeout(5000)",
		":memory:",
		"file::memory:?cache=shared",
	} {
		st, err := store.Open(context.Background(), store.Config{Driver: store.SQLite, DSN: dsn})
		require.NoError(t, err, dsn)
		require.NoError(t, st.Close())
	}
}
