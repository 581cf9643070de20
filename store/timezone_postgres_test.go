package store_test

import (
	"context"
	"database/sql"
	"net/url"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the admin's connection: "pgx"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// pgAdminSession is an admin's psql-like connection with the session
// TimeZone zone. (PostgreSQL reads '+08:00' as a POSIX zone, eight hours
// west; admins name zones, and so do these tests.)
func pgAdminSession(t *testing.T, dsn, zone string) *sql.DB {
	t.Helper()
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	q := u.Query()
	q.Set("timezone", zone)
	u.RawQuery = q.Encode()
	db, err := sql.Open("pgx", u.String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	var got string
	require.NoError(t, db.QueryRow("SHOW TimeZone").Scan(&got))
	require.Equal(t, zone, got)
	return db
}

// On PostgreSQL every timestamp is a TIMESTAMPTZ: what an admin writes
// without an offset is read in the admin's session zone, what chime writes
// and reads is UTC whatever its DSN asks for, and defaults are the instant
// now. So an admin east or west of UTC schedules at the wall time they
// typed, as on MySQL.
func TestAdminSessionTimeZonePostgres(t *testing.T) {
	t.Parallel()
	for zone, offset := range map[string]int{"Asia/Shanghai": 8, "America/Bogota": -5} {
		t.Run(zone, func(t *testing.T) {
			t.Parallel()
			cfg := testdb.Config(t, store.Postgres)
			// chime's own sessions stay UTC even when the DSN asks for a zone.
			u, err := url.Parse(cfg.DSN)
			require.NoError(t, err)
			q := u.Query()
			q.Set("timezone", zone)
			u.RawQuery = q.Encode()
			cfg.DSN = u.String()
			st, err := store.Open(context.Background(), cfg)
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			_, err = st.Migrate(context.Background())
			require.NoError(t, err)
			var tz string
			require.NoError(t, st.SQL().QueryRow("SHOW TimeZone").Scan(&tz))
			require.Equal(t, "UTC", tz)

			admin := pgAdminSession(t, cfg.DSN, zone)
			db := st.DB()
			_, err = admin.Exec(`INSERT INTO job_definitions (name, task_type) VALUES ('hello', 'sleep')`)
			require.NoError(t, err)
			var def models.JobDefinition
			require.NoError(t, db.Where("name = ?", "hello").Take(&def).Error)
			requireNow(t, st, def.CreatedAt, "job_definitions.created_at")
			require.Equal(t, time.UTC, def.CreatedAt.Location())

			_, err = admin.Exec(`INSERT INTO schedules (name, job_definition_id, schedule_type, run_at)
				VALUES ('once', (SELECT id FROM job_definitions), 'once', '2030-01-01 09:00:00'),
				       ('once-utc', (SELECT id FROM job_definitions), 'once', '2030-01-01 09:00:00+00')`)
			require.NoError(t, err)
			var once, utc models.Schedule
			require.NoError(t, db.Where("name = ?", "once").Take(&once).Error)
			require.NoError(t, db.Where("name = ?", "once-utc").Take(&utc).Error)
			want := time.Date(2030, 1, 1, 9, 0, 0, 0, time.FixedZone(zone, offset*3600))
			require.True(t, want.Equal(*once.RunAt), "%s typed 09:00 and got %s", zone, once.RunAt)
			require.Equal(t, time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC), utc.RunAt.UTC())

			// An ad-hoc run inserted by the admin is due now: the claim takes it.
			_, err = admin.Exec(`INSERT INTO jobs (job_definition_id) SELECT id FROM job_definitions`)
			require.NoError(t, err)
			var job models.Job
			require.NoError(t, db.Take(&job).Error)
			requireNow(t, st, job.RunAt, "jobs.run_at")

			// An UPDATE from the admin's zone moves updated_at to now, not
			// to a wall time read as UTC.
			before := once.UpdatedAt
			_, err = admin.Exec(`UPDATE schedules SET status = 'paused' WHERE name = 'once'`)
			require.NoError(t, err)
			require.NoError(t, db.Take(&once, once.ID).Error)
			require.True(t, once.UpdatedAt.After(before))
			requireNow(t, st, once.UpdatedAt, "schedules.updated_at")
		})
	}
}
