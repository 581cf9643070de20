package store_test

import (
	"context"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// TestModelsMatchSchema proves that every GORM model names exactly the
// columns the migrations create, so a field added on one side only fails here.
func TestModelsMatchSchema(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		for _, m := range models.All() {
			stmt := &gorm.Statement{DB: db}
			require.NoError(t, stmt.Parse(m))
			var want []string
			for _, f := range stmt.Schema.Fields {
				if f.DBName != "" {
					want = append(want, f.DBName)
				}
			}
			cols, err := db.Migrator().ColumnTypes(m)
			require.NoError(t, err, stmt.Schema.Table)
			var got []string
			for _, c := range cols {
				got = append(got, c.Name())
			}
			sort.Strings(want)
			sort.Strings(got)
			require.Equal(t, want, got, "columns of %s", stmt.Schema.Table)
		}
	})
}

func TestMigrateIsIdempotentAndReversible(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		v1, err := st.SchemaVersion(ctx)
		require.NoError(t, err)
		require.Positive(t, v1)
		v2, err := st.Migrate(ctx)
		require.NoError(t, err)
		require.Equal(t, v1, v2)
		require.NoError(t, st.MigrateDown(ctx))
		require.False(t, st.DB().Migrator().HasTable("jobs"))
		v3, err := st.Migrate(ctx)
		require.NoError(t, err)
		require.Equal(t, v1, v3)
		require.True(t, st.DB().Migrator().HasTable("jobs"))
	})
}

// TestAdminSQLContract runs the minimal INSERTs the README promises admins,
// and checks the defaults every other column takes.
func TestAdminSQLContract(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		require.NoError(t, db.Exec(`INSERT INTO job_definitions (name, task_type) VALUES ('nightly', 'sleep')`).Error)
		var def models.JobDefinition
		require.NoError(t, db.Where("name = ?", "nightly").Take(&def).Error)
		require.Equal(t, 1, def.MaxAttempts)
		require.Equal(t, models.NotifyNever, def.NotifyOn)
		require.True(t, def.RequestsRecovery, "at-least-once after node loss unless an admin says otherwise")
		require.Nil(t, def.DefaultParams)
		require.WithinDuration(t, time.Now(), def.CreatedAt, time.Minute)
		require.Equal(t, time.UTC, def.CreatedAt.Location())

		require.NoError(t, db.Exec(`INSERT INTO schedules (name, job_definition_id, schedule_type, cron_expr) VALUES ('every-minute', ?, 'cron', '* * * * *')`, def.ID).Error)
		require.NoError(t, db.Exec(`INSERT INTO schedules (name, job_definition_id, schedule_type, interval_seconds) VALUES ('every-10s', ?, 'interval', 10)`, def.ID).Error)
		require.NoError(t, db.Exec(`INSERT INTO schedules (name, job_definition_id, schedule_type, run_at) VALUES ('once', ?, 'once', '2030-01-01 00:00:00')`, def.ID).Error)
		var sch models.Schedule
		require.NoError(t, db.Where("name = ?", "every-minute").Take(&sch).Error)
		require.Equal(t, models.ScheduleActive, sch.Status)
		require.Equal(t, "UTC", sch.Timezone)
		require.Equal(t, models.MisfireFireOnce, sch.MisfirePolicy)
		require.Equal(t, models.ConcurrencyAllow, sch.Concurrency)
		var once models.Schedule
		require.NoError(t, db.Where("name = ?", "once").Take(&once).Error)
		require.Equal(t, time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), once.RunAt.UTC())

		require.NoError(t, db.Exec(`INSERT INTO jobs (job_definition_id) VALUES (?)`, def.ID).Error)
		var job models.Job
		require.NoError(t, db.Take(&job).Error)
		require.Equal(t, models.JobPending, job.Status)
		require.Zero(t, job.Recoveries)
		require.Nil(t, job.ScheduleID)
		require.Nil(t, job.Params)
		require.WithinDuration(t, time.Now(), job.RunAt, time.Minute)
		require.WithinDuration(t, time.Now(), job.ScheduledAt, time.Minute)

		// Ad-hoc jobs have no schedule, so the unique fire key must not stop a second one.
		require.NoError(t, db.Exec(`INSERT INTO jobs (job_definition_id) VALUES (?)`, def.ID).Error)

		// A plain UPDATE moves updated_at on both dialects.
		before := sch.UpdatedAt
		time.Sleep(5 * time.Millisecond) // the real database's clock must move past before
		require.NoError(t, db.Exec(`UPDATE schedules SET status = 'paused' WHERE id = ?`, sch.ID).Error)
		require.NoError(t, db.Take(&sch, sch.ID).Error)
		require.True(t, sch.UpdatedAt.After(before), "updated_at %v not after %v", sch.UpdatedAt, before)
	})
}

func TestUniqueFireKey(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		at := store.DBTime(time.Now())
		sid := int64(7)
		j := models.Job{ScheduleID: &sid, JobDefinitionID: 1, ScheduledAt: at, RunAt: at, Status: models.JobPending}
		require.NoError(t, db.Create(&j).Error)
		j2 := models.Job{ScheduleID: &sid, JobDefinitionID: 1, ScheduledAt: at, RunAt: at, Status: models.JobPending}
		require.ErrorIs(t, db.Create(&j2).Error, gorm.ErrDuplicatedKey)
	})
}

func TestTailLogs(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		at := store.DBTime(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
		var logs []models.JobLog
		for i, m := range []string{"queued", "running", "hello", "succeeded"} {
			logs = append(logs, models.JobLog{JobID: 7, Level: "info", Message: m, CreatedAt: at.Add(time.Duration(i) * time.Millisecond)})
		}
		logs = append(logs, models.JobLog{JobID: 8, Level: "info", Message: "other job", CreatedAt: at})
		require.NoError(t, st.InsertJobLogs(context.Background(), logs))
		got, err := st.TailLogs(context.Background(), 7, 2)
		require.NoError(t, err)
		require.Equal(t, []string{"12:00:00.002 info  hello", "12:00:00.003 info  succeeded"}, got)
	})
}

// sqliteWatched are the timestamp columns SQLite's triggers of migrations
// 00003, 00007 and 00011 watch: those admins write. chime alone writes the others, on its hot
// paths (see sql/generate_test.go).
var sqliteWatched = map[string]bool{
	"job_definitions.created_at": true, "job_definitions.updated_at": true,
	"schedules.run_at": true, "schedules.start_at": true, "schedules.end_at": true,
	"schedules.created_at": true, "schedules.updated_at": true,
	"jobs.scheduled_at": true, "jobs.run_at": true,
	"configurations.updated_at":     true,
	"notifications.next_attempt_at": true,
	"calendars.created_at":          true, "calendars.updated_at": true,
}

// TestTimeColumnsHaveTriggers: on MySQL every timestamp column of every
// model has the triggers of migration 00003 (README, "Time zones"), so a
// column added later without them fails here rather than taking an admin's
// local time for UTC; on SQLite the columns admins write have them.
func TestTimeColumnsHaveTriggers(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		bodies := map[string]string{}
		var rows []struct{ Name, Body string }
		if st.Dialect() == store.Postgres {
			checkPostgresTimeColumns(t, db)
			return
		}
		if st.Dialect() == store.MySQL {
			require.NoError(t, db.Raw(`SELECT TRIGGER_NAME AS name, ACTION_STATEMENT AS body FROM information_schema.TRIGGERS
				WHERE TRIGGER_SCHEMA = DATABASE()`).Scan(&rows).Error)
		} else {
			require.NoError(t, db.Raw(`SELECT name, sql AS body FROM sqlite_master WHERE type = 'trigger'`).Scan(&rows).Error)
		}
		for _, r := range rows {
			bodies[r.Name] = r.Body
		}
		timeType := reflect.TypeOf(time.Time{})
		seen := map[string]bool{}
		for _, m := range models.All() {
			stmt := &gorm.Statement{DB: db}
			require.NoError(t, stmt.Parse(m))
			table := stmt.Schema.Table
			for _, f := range stmt.Schema.Fields {
				if f.DBName == "" || f.IndirectFieldType != timeType {
					continue
				}
				c := f.DBName
				if st.Dialect() == store.MySQL {
					require.Contains(t, bodies["chime_"+table+"_utc_insert"], "NEW."+c+" = chime_session_to_utc(NEW."+c+")", "%s.%s", table, c)
					require.Contains(t, bodies["chime_"+table+"_utc_update"], "IF NOT (NEW."+c+" <=> OLD."+c+")", "%s.%s", table, c)
					continue
				}
				if !sqliteWatched[table+"."+c] {
					require.NotContains(t, bodies, "chime_"+table+"_"+c+"_update")
					continue
				}
				seen[table+"."+c] = true
				require.Contains(t, bodies["chime_"+table+"_"+c+"_update"], "AFTER UPDATE OF "+c+" ON "+table, "%s.%s", table, c)
				require.Contains(t, bodies["chime_"+table+"_time_insert"], "NEW."+c, "%s.%s", table, c)
			}
		}
		if st.Dialect() == store.SQLite {
			require.Len(t, seen, len(sqliteWatched), "a watched column is not a timestamp of a model")
		}
	})
}

// checkPostgresTimeColumns: on PostgreSQL every timestamp column of every
// model is a TIMESTAMPTZ, an instant, which is the time-zone rule there
// (README, "Time zones"), and every updated_at has its trigger.
func checkPostgresTimeColumns(t *testing.T, db *gorm.DB) {
	timeType := reflect.TypeOf(time.Time{})
	for _, m := range models.All() {
		stmt := &gorm.Statement{DB: db}
		require.NoError(t, stmt.Parse(m))
		table := stmt.Schema.Table
		for _, f := range stmt.Schema.Fields {
			if f.DBName == "" || f.IndirectFieldType != timeType {
				continue
			}
			var typ string
			require.NoError(t, db.Raw(`SELECT data_type FROM information_schema.columns
				WHERE table_schema = current_schema() AND table_name = ? AND column_name = ?`, table, f.DBName).Scan(&typ).Error)
			require.Equal(t, "timestamp with time zone", typ, "%s.%s", table, f.DBName)
			if f.DBName == "updated_at" {
				var n int
				require.NoError(t, db.Raw(`SELECT count(*) FROM pg_trigger WHERE tgname = ? AND tgrelid = CAST(? AS regclass)`,
					"chime_"+table+"_updated_at", table).Scan(&n).Error)
				require.Equal(t, 1, n, "updated_at trigger of %s", table)
			}
		}
	}
}
