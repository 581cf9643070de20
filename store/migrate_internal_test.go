package store

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"
)

// TestSQLiteMigration3RewritesOldTimeText: rows an admin wrote before
// migration 00003 in another form than chime's are rewritten by it, so old
// and new rows compare as times; a row holding text that is not a time is
// left as it was rather than failing the upgrade. (Internal: testdb imports
// store, and only the migrator can stop at a version.)
func TestSQLiteMigration3RewritesOldTimeText(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	st, err := Open(ctx, Config{Driver: SQLite, DSN: filepath.Join(t.TempDir(), "chime.db"), Logger: log})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	p, err := st.migrator()
	require.NoError(t, err)
	_, err = p.UpTo(ctx, 2)
	require.NoError(t, err)

	for _, q := range []string{
		`INSERT INTO job_definitions (name, task_type) VALUES ('d', 'sleep')`,
		`INSERT INTO schedules (name, job_definition_id, schedule_type, run_at, end_at) VALUES ('t', 1, 'once', '2030-01-01T09:00:00+08:00', '2031-01-01 00:00:00.123456+00:00')`,
		`INSERT INTO schedules (name, job_definition_id, schedule_type, run_at) VALUES ('plain', 1, 'once', '2030-01-01 09:00:00')`,
		`INSERT INTO schedules (name, job_definition_id, schedule_type, run_at) VALUES ('junk', 1, 'once', 'soon')`,
		`INSERT INTO jobs (job_definition_id, run_at) VALUES (1, '2030-01-01 09:00:00Z')`,
	} {
		_, err := st.sqlDB.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	v, err := st.Migrate(ctx)
	require.NoError(t, err)
	require.GreaterOrEqual(t, v, int64(3))

	text := func(q string) string {
		var s string
		require.NoError(t, st.sqlDB.QueryRowContext(ctx, q).Scan(&s), q)
		return s
	}
	require.Equal(t, "2030-01-01 01:00:00.000+00:00", text(`SELECT run_at || '' FROM schedules WHERE name = 't'`))
	require.Equal(t, "2031-01-01 00:00:00.123456+00:00", text(`SELECT end_at || '' FROM schedules WHERE name = 't'`))
	require.Equal(t, "2030-01-01 09:00:00.000+00:00", text(`SELECT run_at || '' FROM schedules WHERE name = 'plain'`))
	require.Equal(t, "soon", text(`SELECT run_at || '' FROM schedules WHERE name = 'junk'`))
	require.Equal(t, "2030-01-01 09:00:00.000+00:00", text(`SELECT run_at || '' FROM jobs`))
}
