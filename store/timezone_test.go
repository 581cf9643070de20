package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// adminZones are the session time zones of the report: east of UTC
// (a fire 8 hours late) and west of it (a catch-up of phantom fires).
var adminZones = []string{"+08:00", "-05:00"}

// pgZoneNames are zones without daylight saving at adminZones' offsets:
// PostgreSQL would read '+08:00' as a POSIX zone, eight hours west.
var pgZoneNames = map[string]string{"+08:00": "Asia/Shanghai", "-05:00": "America/Bogota"}

// openWithConfig returns a fresh migrated database of dialect d with the
// config that reaches it, so a test can open an admin's connection beside
// chime's pool.
func openWithConfig(t *testing.T, d store.Dialect) (*store.Store, store.Config) {
	t.Helper()
	cfg := testdb.Config(t, d)
	st, err := store.Open(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, err = st.Migrate(context.Background())
	require.NoError(t, err)
	return st, cfg
}

// adminSession is an admin's own connection to chime's database, as a
// mysql client would open one: on MySQL with the session time zone zone,
// on SQLite (which has no session zones) a plain connection to the file.
func adminSession(t *testing.T, cfg store.Config, zone string) *sql.DB {
	t.Helper()
	var db *sql.DB
	var err error
	switch cfg.Driver {
	case store.Postgres:
		return pgAdminSession(t, cfg.DSN, pgZoneNames[zone])
	case store.MySQL:
		c, perr := mysqldrv.ParseDSN(cfg.DSN)
		require.NoError(t, perr)
		if c.Params == nil {
			c.Params = map[string]string{}
		}
		c.Params["time_zone"] = "'" + zone + "'"
		db, err = sql.Open("mysql", c.FormatDSN())
	default:
		db, err = sql.Open("sqlite", cfg.DSN+"?_pragma=busy_timeout(15000)")
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	if cfg.Driver == store.MySQL {
		var got string
		require.NoError(t, db.QueryRow("SELECT @@session.time_zone").Scan(&got))
		require.Equal(t, zone, got)
	}
	return db
}

func fixedZone(t *testing.T, zone string) *time.Location {
	t.Helper()
	z, err := time.Parse("-07:00", zone)
	require.NoError(t, err)
	_, off := z.Zone()
	return time.FixedZone(zone, off)
}

// requireNow checks that got is the database's now: an hour-sized error is
// a time zone taken for UTC; the tolerance covers a slow test machine.
func requireNow(t *testing.T, st *store.Store, got time.Time, what string) {
	t.Helper()
	now, err := st.DBNow(context.Background())
	require.NoError(t, err)
	require.WithinDuration(t, now, got, 10*time.Second, "%s is not the database's now", what)
}

// TestStoreSessionIsUTC pins what chime's own MySQL connections use, whatever
// the configured DSN asks for: every DATETIME chime reads or writes is UTC,
// and the conversion triggers leave a '+00:00' session's values alone.
func TestStoreSessionIsUTC(t *testing.T) {
	t.Parallel()
	cfg := testdb.Config(t, store.MySQL)
	c, err := mysqldrv.ParseDSN(cfg.DSN)
	require.NoError(t, err)
	c.Params = map[string]string{"time_zone": "'+08:00'"}
	c.Loc = time.Local
	cfg.DSN = c.FormatDSN()
	st, err := store.Open(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	var zone string
	require.NoError(t, st.SQL().QueryRow("SELECT @@session.time_zone").Scan(&zone))
	require.Equal(t, "+00:00", zone)
	var now time.Time
	require.NoError(t, st.SQL().QueryRow("SELECT NOW(6)").Scan(&now))
	require.Equal(t, time.UTC, now.Location())
	require.WithinDuration(t, time.Now(), now, time.Minute)
}

// TestAdminSessionTimeZoneMySQL writes the README's minimal INSERTs and a few
// UPDATEs from admin sessions east and west of UTC, and reads them back
// through chime's store: defaults are the current instant, a typed literal
// is the session's local time, and updates convert only what they change.
func TestAdminSessionTimeZoneMySQL(t *testing.T) {
	t.Parallel()
	for _, zone := range adminZones {
		t.Run(zone, func(t *testing.T) {
			t.Parallel()
			st, cfg := openWithConfig(t, store.MySQL)
			admin := adminSession(t, cfg, zone)
			loc := fixedZone(t, zone)
			db := st.DB()
			ctx := context.Background()

			_, err := admin.Exec(`INSERT INTO job_definitions (name, task_type) VALUES ('hello', 'sleep')`)
			require.NoError(t, err)
			var def models.JobDefinition
			require.NoError(t, db.Where("name = ?", "hello").Take(&def).Error)
			requireNow(t, st, def.CreatedAt, "job_definitions.created_at")
			requireNow(t, st, def.UpdatedAt, "job_definitions.updated_at")

			// An ad-hoc run: due now, so the next claim takes it.
			_, err = admin.Exec(`INSERT INTO jobs (job_definition_id) VALUES ((SELECT id FROM job_definitions WHERE name = 'hello'))`)
			require.NoError(t, err)
			var job models.Job
			require.NoError(t, db.Take(&job).Error)
			requireNow(t, st, job.RunAt, "jobs.run_at")
			requireNow(t, st, job.ScheduledAt, "jobs.scheduled_at")
			requireNow(t, st, job.CreatedAt, "jobs.created_at")
			now, err := st.DBNow(ctx)
			require.NoError(t, err)
			res, err := st.ClaimJobs(ctx, &chimedb.ClaimParams{NodeID: "n1", Now: now, Limit: 10})
			require.NoError(t, err)
			require.Len(t, res.Jobs, 1, "an ad-hoc job inserted from a %s session is not due", zone)

			// NOW() typed by the admin is the current instant as well.
			_, err = admin.Exec(`UPDATE jobs SET status = 'pending', run_at = NOW(6) WHERE id = ?`, job.ID)
			require.NoError(t, err)
			require.NoError(t, db.Take(&job, job.ID).Error)
			requireNow(t, st, job.RunAt, "jobs.run_at set to NOW(6)")
			require.Nil(t, job.FinishedAt)

			// Typed literals are the session's local time, also past 2038
			// and before 1970, where MySQL's own conversions stop.
			_, err = admin.Exec(`INSERT INTO schedules (name, job_definition_id, schedule_type, run_at, start_at, end_at)
				VALUES ('once', ?, 'once', '2030-01-01 09:00:00', '1969-07-20 20:17:40.5', '2040-07-01 09:00:00.123456')`, def.ID)
			require.NoError(t, err)
			var sch models.Schedule
			require.NoError(t, db.Where("name = ?", "once").Take(&sch).Error)
			require.Equal(t, time.Date(2030, 1, 1, 9, 0, 0, 0, loc).UTC(), sch.RunAt.UTC())
			require.Equal(t, time.Date(1969, 7, 20, 20, 17, 40, 5e8, loc).UTC(), sch.StartAt.UTC())
			require.Equal(t, time.Date(2040, 7, 1, 9, 0, 0, 123456000, loc).UTC(), sch.EndAt.UTC())
			requireNow(t, st, sch.CreatedAt, "schedules.created_at")

			// "Never" west of UTC stays within DATETIME's range.
			_, err = admin.Exec(`INSERT INTO schedules (name, job_definition_id, schedule_type, cron_expr, end_at)
				VALUES ('forever', ?, 'cron', '@daily', '9999-12-31 23:59:59')`, def.ID)
			require.NoError(t, err)
			var forever models.Schedule
			require.NoError(t, db.Where("name = ?", "forever").Take(&forever).Error)
			wantEnd := time.Date(9999, 12, 31, 23, 59, 59, 0, loc).UTC()
			if wantEnd.Year() > 9999 {
				wantEnd = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
			}
			require.Equal(t, wantEnd, forever.EndAt.UTC())

			// An UPDATE converts the columns it changes and leaves the others.
			before := sch
			_, err = admin.Exec(`UPDATE schedules SET status = 'paused' WHERE id = ?`, sch.ID)
			require.NoError(t, err)
			require.NoError(t, db.Take(&sch, sch.ID).Error)
			require.Equal(t, before.RunAt.UTC(), sch.RunAt.UTC())
			require.Equal(t, before.StartAt.UTC(), sch.StartAt.UTC())
			require.Equal(t, before.EndAt.UTC(), sch.EndAt.UTC())
			require.Equal(t, before.CreatedAt.UTC(), sch.CreatedAt.UTC())
			requireNow(t, st, sch.UpdatedAt, "schedules.updated_at after an UPDATE")
			_, err = admin.Exec(`UPDATE schedules SET end_at = '2031-01-01 08:00:00', start_at = NULL WHERE id = ?`, sch.ID)
			require.NoError(t, err)
			sch = models.Schedule{} // GORM leaves a pointer field set when it reads NULL into it
			require.NoError(t, db.Take(&sch, before.ID).Error)
			require.Equal(t, time.Date(2031, 1, 1, 8, 0, 0, 0, loc).UTC(), sch.EndAt.UTC())
			require.Nil(t, sch.StartAt)
			require.Equal(t, before.RunAt.UTC(), sch.RunAt.UTC())

			// A lease an admin expires by hand is expired now, not hours off.
			require.NoError(t, db.Exec(`INSERT INTO leases (name, holder, expires_at) VALUES ('scheduler', 'n9', UTC_TIMESTAMP(6) + INTERVAL 1 HOUR)`).Error)
			_, err = admin.Exec(`UPDATE leases SET expires_at = NOW(6) WHERE name = 'scheduler'`)
			require.NoError(t, err)
			var lease struct{ ExpiresAt time.Time }
			require.NoError(t, db.Raw(`SELECT expires_at FROM leases WHERE name = 'scheduler'`).Scan(&lease).Error)
			requireNow(t, st, lease.ExpiresAt, "leases.expires_at set to NOW(6)")
		})
	}
}

// TestChimeWritesUntouched checks that the conversion is for other sessions
// only: what chime writes through its UTC connections, far-future and
// pre-1970 values included, reads back unchanged.
func TestChimeWritesUntouched(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		def := testdb.Definition(t, st, nil)
		runAt := time.Date(2030, 1, 1, 9, 0, 0, 123456000, time.UTC)
		start := time.Date(1969, 7, 20, 20, 17, 40, 0, time.UTC)
		end := time.Date(2099, 12, 31, 23, 59, 59, 999999000, time.UTC)
		s := models.Schedule{Name: "s", JobDefinitionID: def.ID, ScheduleType: models.ScheduleOnce, RunAt: &runAt,
			StartAt: &start, EndAt: &end, Timezone: "UTC", MisfirePolicy: models.MisfireFireOnce,
			Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive}
		require.NoError(t, db.Create(&s).Error)
		var got models.Schedule
		require.NoError(t, db.Take(&got, s.ID).Error)
		require.Equal(t, runAt, got.RunAt.UTC())
		require.Equal(t, start, got.StartAt.UTC())
		require.Equal(t, end, got.EndAt.UTC())
		require.Equal(t, store.DBTime(s.CreatedAt), got.CreatedAt.UTC())
	})
}

// TestSQLiteTimeLiterals: SQLite has no session zones, so a literal without
// an offset is UTC and one with an offset (or Z) is that instant. Whatever
// form an admin types is stored in chime's one sortable form, so text
// comparisons in queries (run_at <= now) are time comparisons; text that is
// not a time is refused with a message naming the column.
func TestSQLiteTimeLiterals(t *testing.T) {
	t.Parallel()
	st, cfg := openWithConfig(t, store.SQLite)
	admin := adminSession(t, cfg, "")
	db := st.DB()
	def := testdb.Definition(t, st, nil)
	cases := []struct {
		lit  string
		want time.Time
		raw  string // the stored text
	}{
		{"2030-01-01 09:00:00", time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC), "2030-01-01 09:00:00.000+00:00"},
		{"2030-01-01T09:00:00", time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC), "2030-01-01 09:00:00.000+00:00"},
		{"2030-01-01 09:00:00Z", time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC), "2030-01-01 09:00:00.000+00:00"},
		{"2030-01-01T09:00:00.123456Z", time.Date(2030, 1, 1, 9, 0, 0, 123e6, time.UTC), "2030-01-01 09:00:00.123+00:00"},
		{"2030-01-01 09:00:00+08:00", time.Date(2030, 1, 1, 1, 0, 0, 0, time.UTC), "2030-01-01 01:00:00.000+00:00"},
		{"2030-01-01T09:00:00.500-05:00", time.Date(2030, 1, 1, 14, 0, 0, 5e8, time.UTC), "2030-01-01 14:00:00.500+00:00"},
		{"2030-01-01 09:00:00.25 +01:00", time.Date(2030, 1, 1, 8, 0, 0, 25e7, time.UTC), "2030-01-01 08:00:00.250+00:00"},
		{"2030-01-01 23:30:00-01:00", time.Date(2030, 1, 2, 0, 30, 0, 0, time.UTC), "2030-01-02 00:30:00.000+00:00"},
		{"2030-01-01 09:00", time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC), "2030-01-01 09:00:00.000+00:00"},
		{"2030-01-01", time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), "2030-01-01 00:00:00.000+00:00"},
		// SQLite's own reading of a day past the month's end, in any form.
		{"2030-02-30 00:00:00", time.Date(2030, 3, 2, 0, 0, 0, 0, time.UTC), "2030-03-02 00:00:00.000+00:00"},
		{"2030-02-30 00:00:00+00:00", time.Date(2030, 3, 2, 0, 0, 0, 0, time.UTC), "2030-03-02 00:00:00.000+00:00"},
		// Already in the form: kept as written, microseconds included.
		{"2030-01-01 09:00:00+00:00", time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC), "2030-01-01 09:00:00+00:00"},
		{"2030-01-01 09:00:00.000+00:00", time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC), "2030-01-01 09:00:00.000+00:00"},
		{"2040-07-01 09:00:00.123456+00:00", time.Date(2040, 7, 1, 9, 0, 0, 123456000, time.UTC), "2040-07-01 09:00:00.123456+00:00"},
	}
	for i, c := range cases {
		name := fmt.Sprintf("lit%d", i)
		_, err := admin.Exec(`INSERT INTO schedules (name, job_definition_id, schedule_type, run_at) VALUES (?, ?, 'once', ?)`, name, def.ID, c.lit)
		require.NoError(t, err, c.lit)
		var sch models.Schedule
		require.NoError(t, db.Where("name = ?", name).Take(&sch).Error, c.lit)
		require.Equal(t, c.want, sch.RunAt.UTC(), c.lit)
		var raw string
		require.NoError(t, admin.QueryRow(`SELECT run_at || '' FROM schedules WHERE name = ?`, name).Scan(&raw))
		require.Equal(t, c.raw, raw, "stored form of %q", c.lit)

		// The same literal in an UPDATE.
		_, err = admin.Exec(`UPDATE schedules SET end_at = ? WHERE name = ?`, c.lit, name)
		require.NoError(t, err, c.lit)
		require.NoError(t, admin.QueryRow(`SELECT end_at || '' FROM schedules WHERE name = ?`, name).Scan(&raw))
		require.Equal(t, c.raw, raw, "stored form of %q", c.lit)
	}

	for _, bad := range []any{"tomorrow", "now", "2030-13-01 00:00:00", "2030-01-01 25:00:00", "2030-01-01 09:00:00.5x",
		"2030-01-01t09:00:00", "1893456000", 1893456000, 2462503.5} {
		_, err := admin.Exec(`INSERT INTO schedules (name, job_definition_id, schedule_type, run_at) VALUES ('bad', ?, 'once', ?)`, def.ID, bad)
		require.ErrorContains(t, err, "chime: schedules.run_at is not a time", "%v", bad)
		_, err = admin.Exec(`UPDATE schedules SET start_at = ? WHERE name = 'lit0'`, bad)
		require.ErrorContains(t, err, "chime: schedules.start_at is not a time", "%v", bad)
		_, err = admin.Exec(`INSERT INTO jobs (job_definition_id, run_at) VALUES (?, ?)`, def.ID, bad)
		require.ErrorContains(t, err, "chime: jobs.run_at is not a time", "%v", bad)
	}
	var n int64
	require.NoError(t, db.Model(&models.Job{}).Count(&n).Error)
	require.Zero(t, n, "a refused INSERT left a row")
}

// TestSQLiteAdHocJobDueWithAnyLiteral: a job an admin makes due now, in any
// accepted form, is claimed by the next claim. Before the forms were
// normalized, '2026-11-23T10:00:00' sorted after every '2026-11-23 ...' time
// and '...+08:00' was compared as if it were UTC.
func TestSQLiteAdHocJobDueWithAnyLiteral(t *testing.T) {
	t.Parallel()
	st, cfg := openWithConfig(t, store.SQLite)
	admin := adminSession(t, cfg, "")
	def := testdb.Definition(t, st, nil)
	ctx := context.Background()
	now, err := st.DBNow(ctx)
	require.NoError(t, err)
	past := now.Add(-2 * time.Second)
	for _, lit := range []string{
		past.Format("2006-01-02T15:04:05"),
		past.In(time.FixedZone("", 8*3600)).Format("2006-01-02 15:04:05-07:00"),
		past.In(time.FixedZone("", -5*3600)).Format("2006-01-02T15:04:05.000-07:00"),
		past.Format("2006-01-02T15:04:05Z"),
	} {
		_, err := admin.Exec(`INSERT INTO jobs (job_definition_id, run_at) VALUES (?, ?)`, def.ID, lit)
		require.NoError(t, err, lit)
		res, err := st.ClaimJobs(ctx, &chimedb.ClaimParams{NodeID: "n1", Now: now, Limit: 10})
		require.NoError(t, err)
		require.Len(t, res.Jobs, 1, "a job with run_at %q is not due at %s", lit, now)
	}
	// And a job due later in the same minute is not claimed early.
	later := now.Add(30 * time.Second).In(time.FixedZone("", 8*3600)).Format("2006-01-02 15:04:05-07:00")
	_, err = admin.Exec(`INSERT INTO jobs (job_definition_id, run_at) VALUES (?, ?)`, def.ID, later)
	require.NoError(t, err)
	res, err := st.ClaimJobs(ctx, &chimedb.ClaimParams{NodeID: "n1", Now: now, Limit: 10})
	require.NoError(t, err)
	require.Empty(t, res.Jobs, "a job with run_at %q is due at %s", later, now)
}
