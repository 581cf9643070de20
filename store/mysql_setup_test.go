package store_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"testing"

	mysqldrv "github.com/go-sql-driver/mysql"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testdb"
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
	name := randomName("chime_new_")
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
// must run, not the driver's bare error.
func TestMySQLMissingDatabaseWithoutRights(t *testing.T) {
	t.Parallel()
	cfg, admin := serverAdmin(t)
	user, pass := randomName("cu_"), "pw-"+randomName("")
	if _, err := admin.Exec("CREATE USER '" + user + "'@'%' IDENTIFIED BY '" + pass + "'"); err != nil {
		t.Skipf("the test user may not create users: %v", err)
	}
	t.Cleanup(func() { _, _ = admin.Exec("DROP USER IF EXISTS '" + user + "'@'%'") })
	cfg.User, cfg.Passwd, cfg.DBName = user, pass, randomName("chime_none_")
	log, _ := logtest.NewNullLogger()
	_, err := store.Open(context.Background(), store.Config{Driver: store.MySQL, DSN: cfg.FormatDSN(), Logger: log})
	require.ErrorContains(t, err, "CREATE DATABASE `"+cfg.DBName+"`")
	require.ErrorContains(t, err, "GRANT ALL ON `"+cfg.DBName+"`.* TO '"+user+"'")
	require.NotContains(t, err.Error(), pass)
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
