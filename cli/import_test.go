package cli

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
)

// runChime runs the command line in-process and returns its output and
// the exit code Main would return.
func runChime(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := NewRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	if err != nil {
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), exitCode(err)
}

// quartzStore loads quartzimport's Quartz-written dump into a fresh
// MariaDB database and returns its DSN.
func quartzStore(t *testing.T) string {
	t.Helper()
	dump, err := os.ReadFile("../quartzimport/testdata/quartz_store.sql")
	require.NoError(t, err)
	dsn := testdb.CreateMySQLDatabase(t)
	cfg, err := mysqldrv.ParseDSN(dsn)
	require.NoError(t, err)
	cfg.MultiStatements = true
	db, err := sql.Open("mysql", cfg.FormatDSN())
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(string(dump))
	require.NoError(t, err)
	return dsn
}

func TestImportQuartz(t *testing.T) {
	t.Parallel()
	dsn := quartzStore(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "chime.yaml")
	require.NoError(t, os.WriteFile(config, []byte("database:\n  driver: sqlite\n  dsn: "+filepath.Join(dir, "chime.db")+"\nlog:\n  level: warn\n"), 0o600))
	mapFile := filepath.Join(dir, "classes.yaml")
	require.NoError(t, os.WriteFile(mapFile, []byte("com.acme.ReportJob: shell\ncom.acme.CleanupJob: sleep\n"), 0o600))
	base := []string{"import", "quartz", "--config", config, "--dsn", dsn, "--map", mapFile, "--default-task", "sleep"}

	// A dry run writes nothing, not even the schema.
	_, errOut, code := runChime(t, append(base, "--dry-run")...)
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "has no schema yet")
	_, errOut, code = runChime(t, "migrate", "--config", config)
	require.Equal(t, 0, code, errOut)

	// The fixture has objects chime cannot map: the report says which, exit 1.
	out, errOut, code := runChime(t, append(base, "--dry-run")...)
	require.Equal(t, 1, code, errOut)
	require.Contains(t, out, "dry run, nothing written: would create 35, unchanged 0, conflict 0, not mapped 7")
	require.Contains(t, errOut, "7 object(s) not mapped and 0 conflict(s)")

	out, _, code = runChime(t, base...)
	require.Equal(t, 1, code)
	require.Contains(t, out, "created 35, unchanged 0, conflict 0, not mapped 7")
	// The import writes to the database itself; the audit log names it.
	db, err := sql.Open("sqlite", filepath.Join(dir, "chime.db"))
	require.NoError(t, err)
	var doors []string
	rows, err := db.Query(`SELECT DISTINCT actor || ' ' || door FROM audit_log`)
	require.NoError(t, err)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		doors = append(doors, s)
	}
	require.NoError(t, rows.Err())
	require.NoError(t, db.Close())
	require.Equal(t, []string{"chime import quartz cli"}, doors)
	out, _, code = runChime(t, base...)
	require.Equal(t, 1, code)
	require.Contains(t, out, "unchanged 35, conflict 0, not mapped 7")

	// Bad usage: exit 2, nothing read.
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("com.acme.ReportJob: shell\ncom.acme.CleanupJob: cron\n"), 0o600))
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"import", "quartz", "--config", config}, "--dsn is required"},
		{[]string{"import", "quartz", "--config", config, "--dsn", "not a dsn"}, "bad DSN"},
		{[]string{"import", "quartz", "--config", config, "--dsn", dsn, "--table-prefix", "Q;DROP"}, "only letters, digits and _"},
		{[]string{"import", "quartz", "--config", config, "--dsn", dsn, "--table-prefix", "NOPE_"}, "is the table prefix right?"},
		{[]string{"import", "quartz", "--config", config, "--dsn", dsn, "--map", filepath.Join(dir, "missing.yaml")}, "--map: open"},
		{[]string{"import", "quartz", "--config", config, "--dsn", dsn, "--map", bad}, `map file line 2: unknown task type "cron"`},
		{[]string{"import", "quartz", "--config", config, "--dsn", dsn, "--default-task", "nope"}, "--default-task"},
		{[]string{"import", "quartz", "--config", config, "--dsn", dsn, "--scheduler", "nobody"}, `no scheduler "nobody" in the store (it has: chimeImport)`},
	} {
		_, errOut, code := runChime(t, c.args...)
		require.Equal(t, 2, code, strings.Join(c.args, " "))
		require.Contains(t, errOut, c.msg, strings.Join(c.args, " "))
	}
}
