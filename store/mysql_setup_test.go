package store_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"testing"

	mysqldrv "github.com/go-sql-driver/mysql"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

func randomName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// serverAdmin opens the test server without a database, for setting up
// and cleaning after what a test creates.
func serverAdmin(t *testing.T) (*mysqldrv.Config, *sql.DB) {
	t.Helper()
	cfg, err := mysqldrv.ParseDSN(testdb.MySQLServerDSN(t))
	require.NoError(t, err)
	admin := cfg.Clone()
	admin.DBName = ""
	db, err := sql.Open("mysql", admin.FormatDSN())
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return cfg, db
}

// A first start on MySQL creates the database the DSN names when the user
// may (Error 1049 stopped it before), and says so in the log.
func TestMySQLCreatesMissingDatabase(t *testing.T) {
	t.Parallel()
	cfg, admin := serverAdmin(t)
	name := randomName("chime_t_new_")
	t.Cleanup(func() { _, _ = admin.Exec("DROP DATABASE IF EXISTS `" + name + "`") })
	cfg.DBName = name
	log, hook := logtest.NewNullLogger()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{Driver: store.MySQL, DSN: cfg.FormatDSN(), Logger: log})
	require.NoError(t, err)
	defer st.Close()
	_, err = st.Migrate(ctx)
	require.NoError(t, err)
	var got string
	require.NoError(t, admin.QueryRow("SELECT schema_name FROM information_schema.schemata WHERE schema_name = ?", name).Scan(&got))
	var logged bool
	for _, e := range hook.AllEntries() {
		logged = logged || (e.Message == "created the MySQL database the DSN names: it did not exist" && e.Data["database"] == name)
	}
	require.True(t, logged, "the creation is logged")
}

// A user who may not create the database gets the statements an admin
// must run, not the driver's bare error, and they work: the GRANT names
// the account the server matched (user@'127.0.0.1' is not user@'%', and a
// GRANT to an account that does not exist fails with ERROR 1133), and run
// by an admin, it lets chime start. The names match scripts/test.sh's grant
// (chime\_t%), under which the test user may create users and grant them
// rights on such databases.
func TestMySQLMissingDatabaseWithoutRights(t *testing.T) {
	t.Parallel()
	for _, host := range []string{"127.0.0.1", "%"} {
		t.Run(host, func(t *testing.T) {
			t.Parallel()
			cfg, admin := serverAdmin(t)
			user, pass := randomName("chime_t_ng"), "pw-"+randomName("")
			account := "'" + user + "'@'" + host + "'"
			if _, err := admin.Exec("CREATE USER " + account + " IDENTIFIED BY '" + pass + "'"); err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("the test user may not create users (scripts/test.sh grants CREATE USER): %v", err)
				}
				t.Skipf("the test user may not create users: %v", err)
			}
			t.Cleanup(func() { _, _ = admin.Exec("DROP USER IF EXISTS " + account) })
			cfg.User, cfg.Passwd, cfg.DBName = user, pass, randomName("chime_t_none_")
			t.Cleanup(func() { _, _ = admin.Exec("DROP DATABASE IF EXISTS `" + cfg.DBName + "`") })
			log, _ := logtest.NewNullLogger()
			ctx := context.Background()
			_, err := store.Open(ctx, store.Config{Driver: store.MySQL, DSN: cfg.FormatDSN(), Logger: log})
			require.Error(t, err)
			require.NotContains(t, err.Error(), pass)
			create := regexp.MustCompile("CREATE DATABASE `[^`]+`[^;]*").FindString(err.Error())
			require.Equal(t, "CREATE DATABASE `"+cfg.DBName+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", create, err.Error())
			grant := regexp.MustCompile("GRANT ALL ON [^;]*").FindString(err.Error())
			// _ in a database name of a GRANT is a wildcard unless escaped.
			escaped := strings.ReplaceAll(cfg.DBName, "_", `\_`)
			require.Equal(t, "GRANT ALL ON `"+escaped+"`.* TO "+account, grant, err.Error())

			for _, q := range []string{create, grant} {
				_, err := admin.Exec(q)
				require.NoError(t, err, q)
			}
			st, err := store.Open(ctx, store.Config{Driver: store.MySQL, DSN: cfg.FormatDSN(), Logger: log})
			require.NoError(t, err)
			defer st.Close()
			_, err = st.Migrate(ctx)
			require.NoError(t, err)
		})
	}
}

// A DSN written host:port without tcp(...) is told the form it needs.
func TestMySQLDSNWithoutNetwork(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{"root@127.0.0.1:3306/chime", "chime:s3cret@db.example.com:3306/chime?parseTime=true", "root@localhost/chime"} {
		_, err := store.Open(context.Background(), store.Config{Driver: store.MySQL, DSN: dsn})
		require.ErrorContains(t, err, "user:password@tcp(host:port)/dbname", dsn)
		require.NotContains(t, err.Error(), "s3cret")
	}
}
