package quartzimport_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/quartzimport"
	"github.com/chimesched/chime/scheduleengine"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/tasks/builtin"
	"github.com/chimesched/chime/trigger"
)

// loadStore loads testdata/quartz_store.sql (written by Quartz itself, see
// testdata/gen) into a fresh MariaDB database and returns it open, with its
// DSN. edit, when given, runs on it after the load (a corrupted copy).
func loadStore(t *testing.T, edit ...string) (*sql.DB, string) {
	t.Helper()
	dump, err := os.ReadFile("testdata/quartz_store.sql")
	require.NoError(t, err)
	dsn := testdb.CreateMySQLDatabase(t)
	cfg, err := mysqldrv.ParseDSN(dsn)
	require.NoError(t, err)
	cfg.MultiStatements = true
	loader, err := sql.Open("mysql", cfg.FormatDSN())
	require.NoError(t, err)
	defer loader.Close()
	_, err = loader.Exec(string(dump))
	require.NoError(t, err, "load the dump")
	for _, e := range edit {
		_, err = loader.Exec(e)
		require.NoError(t, err, e)
	}
	db, err := quartzimport.OpenSource(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db, dsn
}

// quartzFires is testdata/quartz_fires.json: per trigger, Quartz's stored
// NEXT_FIRE_TIME and the next fire times Quartz itself would fire.
type quartzFires struct {
	Group, Name, Class, State string
	NextFireTime              *int64  `json:"next_fire_time"`
	Fires                     []int64 `json:"fires"`
}

func readFires(t *testing.T) map[string]quartzFires {
	t.Helper()
	b, err := os.ReadFile("testdata/quartz_fires.json")
	require.NoError(t, err)
	var list []quartzFires
	require.NoError(t, json.Unmarshal(b, &list))
	out := map[string]quartzFires{}
	for _, f := range list {
		out[f.Group+"."+f.Name] = f
	}
	return out
}

func registry(t *testing.T) *tasks.Registry {
	t.Helper()
	reg := tasks.NewRegistry()
	require.NoError(t, builtin.Register(reg))
	return reg
}

func options(t *testing.T) quartzimport.Options {
	reg := registry(t)
	classes, err := quartzimport.ParseClassMap(strings.NewReader("# job classes\ncom.acme.ReportJob: shell\ncom.acme.CleanupJob: 'sleep'\n"), reg)
	require.NoError(t, err)
	return quartzimport.Options{ClassMap: classes, DefaultTask: "sleep", Registry: reg}
}

// want is every object of the fixture and what the first import does.
var want = map[string]quartzimport.Outcome{
	"calendar annual": quartzimport.Created, "calendar cron": quartzimport.Created, "calendar daily": quartzimport.Created,
	"calendar daily-inverted": quartzimport.Created, "calendar holidays": quartzimport.Created,
	"calendar monthly": quartzimport.Created, "calendar weekly": quartzimport.Created,
	"calendar holidays-on-weekly": quartzimport.NotMapped, // a base calendar

	"definition ops.audit": quartzimport.Created, "definition ops.cleanup": quartzimport.Created,
	"definition ops.exclusive": quartzimport.Created, "schedule ops.exclusive-minutely": quartzimport.Created,
	"definition reports.daily-report":  quartzimport.Created,
	"definition reports.legacy-report": quartzimport.NotMapped, // its data is no shell params

	"schedule batch.nightly": quartzimport.Created, "schedule cal.annual-days": quartzimport.Created,
	"schedule cal.monthly-days": quartzimport.Created, "schedule cal.mornings-only": quartzimport.Created,
	"schedule cal.not-at-night": quartzimport.Created, "schedule cal.outside-office-hours": quartzimport.Created,
	"schedule cal.weekdays": quartzimport.Created, "schedule cal.chained-calendar": quartzimport.NotMapped,
	"schedule ops.daily-until": quartzimport.Created, "schedule ops.every-5m-next-existing": quartzimport.Created,
	"schedule ops.every-5m-now-remaining": quartzimport.Created, "schedule ops.every-90s": quartzimport.Created,
	"schedule ops.fired-cron": quartzimport.Created, "schedule ops.fired-simple": quartzimport.Created,
	"schedule ops.hourly-forever": quartzimport.Created, "schedule ops.ignore-misfires": quartzimport.Created,
	"schedule ops.new-year": quartzimport.Created, "schedule ops.once": quartzimport.Created,
	"schedule ops.overdue": quartzimport.Created, "schedule ops.overdue-skip": quartzimport.Created,
	"schedule other.every-1500ms": quartzimport.NotMapped, "schedule other.every-3-months": quartzimport.NotMapped,
	"schedule other.office-hours":       quartzimport.NotMapped,
	"schedule reports.holiday-mornings": quartzimport.Created, "schedule reports.last-weekday": quartzimport.Created,
	"schedule reports.month-end": quartzimport.Created, "schedule reports.paused-cron": quartzimport.Created,
	"schedule reports.legacy": quartzimport.NotMapped,
}

func outcomes(r *quartzimport.Report) map[string]quartzimport.Outcome {
	out := map[string]quartzimport.Outcome{}
	for _, l := range r.Lines {
		out[l.Kind+" "+l.Name] = l.Outcome
	}
	return out
}

func line(t *testing.T, r *quartzimport.Report, kindName string) quartzimport.Line {
	t.Helper()
	for _, l := range r.Lines {
		if l.Kind+" "+l.Name == kindName {
			return l
		}
	}
	t.Fatalf("no report line for %s", kindName)
	return quartzimport.Line{}
}

func TestImport(t *testing.T) {
	src, _ := loadStore(t)
	fires := readFires(t)
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		o := options(t)
		rep, err := quartzimport.Import(ctx, src, st.Admin(), o)
		require.NoError(t, err)
		var buf bytes.Buffer
		require.NoError(t, rep.Print(&buf))
		t.Log("\n" + buf.String())
		require.Regexp(t, `\nschedule reports\.month-end +created  \[CRON trigger reports\.month-end of job reports\.daily-report\]\n`, buf.String())
		require.Contains(t, buf.String(), "note: misfire instruction 5 RESCHEDULE_NEXT_WITH_EXISTING_COUNT -> skip")
		require.Contains(t, buf.String(), "\ncreated 35, unchanged 0, conflict 0, not mapped 7\n")
		require.Equal(t, want, outcomes(rep))
		require.False(t, rep.Complete())

		// Why the others were left out, in words an admin can act on.
		for name, words := range map[string]string{
			"calendar holidays-on-weekly":      "base calendar",
			"definition reports.legacy-report": "unknown field",
			"schedule reports.legacy":          "reports.legacy-report was not mapped",
			"schedule cal.chained-calendar":    `calendar "holidays-on-weekly" was not mapped`,
			"schedule other.every-1500ms":      "1500 ms is not a whole number of seconds",
			"schedule other.every-3-months":    "CalendarIntervalTrigger",
			"schedule other.office-hours":      "DailyTimeIntervalTrigger",
		} {
			require.Contains(t, line(t, rep, name).Detail, words, name)
		}

		admin := st.Admin()
		defs := map[string]models.JobDefinition{}
		list, err := admin.ListDefinitions(ctx, &chimedb.AdminListParams{Limit: 100})
		require.NoError(t, err)
		for _, d := range list {
			defs[d.Name] = d
		}
		require.Len(t, defs, 4)
		require.Equal(t, "shell", defs["reports.daily-report"].TaskType) // the map
		require.JSONEq(t, `{"command": "echo report for $DAY"}`, string(defs["reports.daily-report"].DefaultParams))
		require.Equal(t, "the daily sales report", defs["reports.daily-report"].Description)
		require.True(t, defs["reports.daily-report"].RequestsRecovery)
		require.Equal(t, "sleep", defs["ops.cleanup"].TaskType) // the map, quoted
		require.JSONEq(t, `{"duration": "1s", "fail": false}`, string(defs["ops.cleanup"].DefaultParams))
		require.False(t, defs["ops.cleanup"].RequestsRecovery)
		require.Equal(t, "sleep", defs["ops.audit"].TaskType) // --default-task
		require.JSONEq(t, `{"duration": "2s"}`, string(defs["ops.audit"].DefaultParams))

		cals, err := admin.ListCalendars(ctx)
		require.NoError(t, err)
		calByID := map[int64]*models.Calendar{}
		calByName := map[string]*models.Calendar{}
		for i := range cals {
			calByID[cals[i].ID], calByName[cals[i].Name] = &cals[i], &cals[i]
		}
		require.Len(t, cals, 7)
		hol := calByName["holidays"]
		require.Equal(t, models.CalendarHoliday, hol.Kind)
		require.Equal(t, "Europe/Berlin", hol.Timezone)
		require.Equal(t, "Christmas and New Year", hol.Description)
		require.JSONEq(t, `{"dates": ["2030-12-25", "2030-12-26", "2031-01-01"]}`, string(hol.Definition))
		for name, kind := range map[string]models.CalendarKind{"annual": models.CalendarAnnual, "monthly": models.CalendarMonthly,
			"weekly": models.CalendarWeekly, "daily": models.CalendarDaily, "daily-inverted": models.CalendarDaily, "cron": models.CalendarCron} {
			require.Equal(t, kind, calByName[name].Kind, name)
		}

		scheds, err := admin.ListSchedules(ctx, &chimedb.AdminListParams{Limit: 100})
		require.NoError(t, err)
		byName := map[string]models.Schedule{}
		for _, s := range scheds {
			byName[s.Name] = s
		}
		require.Len(t, byName, 24)
		ptime := func(s string) *time.Time {
			v, err := time.Parse(time.RFC3339, s)
			require.NoError(t, err)
			return &v
		}
		utc := func(p *time.Time) *time.Time {
			if p == nil {
				return nil
			}
			v := p.UTC()
			return &v
		}

		me := byName["reports.month-end"]
		require.Equal(t, models.ScheduleCron, me.ScheduleType)
		require.Equal(t, models.SyntaxQuartz, me.CronSyntax)
		require.Equal(t, "0 15 10 ? * 6L", *me.CronExpr)
		require.Equal(t, "Europe/Berlin", me.Timezone)
		require.Equal(t, models.MisfireSkip, me.MisfirePolicy) // do nothing
		require.Equal(t, 7, *me.Priority)
		require.Equal(t, models.ScheduleActive, me.Status)
		require.Equal(t, defs["reports.daily-report"].ID, me.JobDefinitionID)
		require.Equal(t, ptime("2030-01-01T00:00:00Z"), utc(me.StartAt))
		require.Nil(t, me.EndAt)

		require.Contains(t, line(t, rep, "schedule reports.month-end").Notes, "its description is not carried over: chime's schedules have none")

		lw := byName["reports.last-weekday"]
		require.Equal(t, "UTC", lw.Timezone) // the generator's JVM zone
		require.Equal(t, ptime("2031-06-30T00:00:00Z"), utc(lw.EndAt))
		require.Equal(t, models.MisfireFireOnce, lw.MisfirePolicy) // smart

		ny := byName["ops.new-year"]
		require.Equal(t, "0 0 12 1 JAN ? 2031-2033", *ny.CronExpr)
		require.Equal(t, "Asia/Kolkata", ny.Timezone)
		require.Equal(t, models.MisfireFireOnce, ny.MisfirePolicy)
		require.Equal(t, 1, *ny.Priority)
		require.Equal(t, models.MisfireFireAll, byName["ops.ignore-misfires"].MisfirePolicy)

		e90 := byName["ops.every-90s"]
		require.Equal(t, models.ScheduleInterval, e90.ScheduleType)
		require.Equal(t, 90, *e90.IntervalSeconds)
		require.Equal(t, 9, *e90.Priority)
		require.Nil(t, byName["reports.last-weekday"].Priority) // Quartz's default 5: the definition's
		require.Equal(t, models.PriorityDefault, defs["reports.daily-report"].Priority)
		require.Equal(t, 10, *e90.MaxRuns) // repeat count 9 + 1
		require.Equal(t, ptime("2030-03-01T00:00:00Z"), utc(e90.StartAt))
		require.Equal(t, ptime("2030-03-01T00:13:30Z"), utc(e90.EndAt)) // the 9th interval
		require.Equal(t, models.MisfireSkip, e90.MisfirePolicy)         // next with remaining count

		hf := byName["ops.hourly-forever"]
		require.Nil(t, hf.MaxRuns)
		require.Nil(t, hf.EndAt)
		require.Equal(t, hol.ID, *hf.CalendarID)
		require.Equal(t, models.MisfireFireAll, hf.MisfirePolicy)

		// @DisallowConcurrentExecution: forbid; @PersistJobDataAfterExecution: said.
		require.Equal(t, models.ConcurrencyForbid, byName["ops.exclusive-minutely"].Concurrency)
		require.Equal(t, models.ConcurrencyAllow, byName["ops.every-90s"].Concurrency)
		// Quartz's rule holds across a JobDetail's triggers: max_running 1.
		require.NotNil(t, defs["ops.exclusive"].MaxRunning)
		require.EqualValues(t, 1, *defs["ops.exclusive"].MaxRunning)
		require.Nil(t, defs["reports.daily-report"].MaxRunning)
		require.Contains(t, strings.Join(line(t, rep, "definition ops.exclusive").Notes, " "), "@PersistJobDataAfterExecution")

		once := byName["ops.once"]
		require.Equal(t, models.ScheduleOnce, once.ScheduleType)
		require.Equal(t, ptime("2030-06-01T06:30:00Z"), utc(once.RunAt))

		// Fired before: chime goes on where Quartz is, without the fires
		// Quartz made.
		fs := byName["ops.fired-simple"]
		require.Equal(t, 18, *fs.MaxRuns) // 20 + 1 - 3 fired
		require.Equal(t, ptime("2030-01-01T00:30:00Z"), utc(fs.StartAt))
		require.Equal(t, ptime("2030-01-01T03:20:00Z"), utc(fs.EndAt))
		require.Equal(t, ptime("2030-01-03T10:00:00Z"), utc(byName["ops.fired-cron"].StartAt)) // Tue 1, Wed 2 fired

		// Paused: the trigger, and the group.
		require.Equal(t, models.SchedulePaused, byName["reports.paused-cron"].Status)
		require.Equal(t, models.SchedulePaused, byName["batch.nightly"].Status)

		hm := byName["reports.holiday-mornings"]
		require.JSONEq(t, `{"command": "echo holiday run"}`, string(hm.Params)) // the trigger's JobDataMap
		require.Equal(t, hol.ID, *hm.CalendarID)

		// Overdue: counted from Quartz's next fire time, so the engine
		// sees the fires Quartz missed and applies misfire_policy.
		od := byName["ops.overdue"]
		require.Equal(t, ptime("2020-01-01T00:00:00Z"), utc(&od.CreatedAt))
		require.Equal(t, models.MisfireFireOnce, od.MisfirePolicy)
		require.Contains(t, strings.Join(line(t, rep, "schedule ops.overdue").Notes, " "), "is past")

		// The point: chime fires what Quartz would, from its next fire time on.
		for name, s := range byName {
			q, ok := fires[name]
			require.True(t, ok, name)
			var cal *models.Calendar
			if s.CalendarID != nil {
				cal = calByID[*s.CalendarID]
			}
			trig, err := trigger.New(&s, cal)
			require.NoError(t, err, name)
			var got []int64
			// From where the engine starts a new schedule: its created_at.
			at := s.CreatedAt.UTC().Add(-time.Nanosecond)
			for len(got) < len(q.Fires)+1 && (s.MaxRuns == nil || len(got) < *s.MaxRuns) {
				at = trig.Next(at)
				if at.IsZero() {
					break
				}
				got = append(got, at.UnixMilli())
			}
			require.NotNil(t, q.NextFireTime, name)
			require.NotEmpty(t, got, name)
			require.Equal(t, *q.NextFireTime, got[0], "%s: chime's first fire is Quartz's NEXT_FIRE_TIME", name)
			if len(q.Fires) < 10 {
				require.Equal(t, q.Fires, got, "%s: Quartz stops after %d fires", name, len(q.Fires))
			} else {
				require.Equal(t, q.Fires, got[:10], "%s: the following fires are Quartz's", name)
			}
		}

		// Again: nothing changes.
		counts := rowCounts(t, st)
		stamps := updatedAts(t, st)
		rep2, err := quartzimport.Import(ctx, src, st.Admin(), o)
		require.NoError(t, err)
		for k, v := range want {
			if v == quartzimport.Created {
				want := quartzimport.Unchanged
				require.Equal(t, want, outcomes(rep2)[k], k)
			} else {
				require.Equal(t, v, outcomes(rep2)[k], k)
			}
		}
		require.Equal(t, counts, rowCounts(t, st))
		require.Equal(t, stamps, updatedAts(t, st))

		// An object that differs is left alone, and said so.
		require.NoError(t, st.DB().Exec("UPDATE schedules SET timezone = 'Asia/Tokyo' WHERE name = 'reports.month-end'").Error)
		rep3, err := quartzimport.Import(ctx, src, st.Admin(), o)
		require.NoError(t, err)
		l := line(t, rep3, "schedule reports.month-end")
		require.Equal(t, quartzimport.Conflict, l.Outcome)
		require.Contains(t, l.Detail, "timezone")
		// So is a definition, and its schedules wait for it.
		require.NoError(t, st.DB().Exec(`UPDATE job_definitions SET default_params = '{"duration": "9s"}' WHERE name = 'ops.audit'`).Error)
		rep4, err := quartzimport.Import(ctx, src, st.Admin(), o)
		require.NoError(t, err)
		l = line(t, rep4, "definition ops.audit")
		require.Equal(t, quartzimport.Conflict, l.Outcome)
		require.Equal(t, "chime's job definition of that name differs: default_params", l.Detail)
		l = line(t, rep4, "schedule ops.once")
		require.Equal(t, quartzimport.NotMapped, l.Outcome)
		require.Contains(t, l.Detail, "its job ops.audit was not mapped (chime's job definition of that name differs)")
		require.Equal(t, counts, rowCounts(t, st))
	})
}

func rowCounts(t *testing.T, st *store.Store) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, table := range []string{"job_definitions", "schedules", "calendars", "time_triggers", "jobs"} {
		var n int64
		require.NoError(t, st.DB().Table(table).Count(&n).Error)
		out[table] = n
	}
	return out
}

func updatedAts(t *testing.T, st *store.Store) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	for _, table := range []string{"job_definitions", "schedules", "calendars"} {
		var rows []struct {
			Name      string
			UpdatedAt time.Time
		}
		require.NoError(t, st.DB().Table(table).Select("name, updated_at").Scan(&rows).Error)
		for _, r := range rows {
			out[table+" "+r.Name] = r.UpdatedAt
		}
	}
	return out
}

func TestImportDryRun(t *testing.T) {
	src, _ := loadStore(t)
	st := testdb.Open(t, store.SQLite)
	o := options(t)
	o.DryRun = true
	rep, err := quartzimport.Import(context.Background(), src, st.Admin(), o)
	require.NoError(t, err)
	for k, v := range want {
		if v == quartzimport.Created {
			v = quartzimport.WouldCreate
		}
		require.Equal(t, v, outcomes(rep)[k], k)
	}
	require.Equal(t, map[string]int64{"job_definitions": 0, "schedules": 0, "calendars": 0, "time_triggers": 0, "jobs": 0}, rowCounts(t, st))
	var buf bytes.Buffer
	require.NoError(t, rep.Print(&buf))
	require.Contains(t, buf.String(), "dry run, nothing written")
}

func TestImportBadStore(t *testing.T) {
	ctx := context.Background()
	st := testdb.Open(t, store.SQLite)
	hostile := quartzimport.HostileJobData()
	src, _ := loadStore(t,
		// Job data that would take gigabytes to convert (issue 22): an
		// array that holds itself, and shared arrays saying 6.5×10^10
		// values.
		"UPDATE QRTZ_JOB_DETAILS SET JOB_DATA = 0x"+hex.EncodeToString(hostile["self-array"])+" WHERE JOB_NAME = 'legacy-report'",
		"UPDATE QRTZ_TRIGGERS SET JOB_DATA = 0x"+hex.EncodeToString(hostile["shared-arrays"])+" WHERE TRIGGER_NAME = 'overdue'",
		// A corrupted calendar, job data that is no Java stream, and a
		// trigger row without its CRON_TRIGGERS row.
		"UPDATE QRTZ_CALENDARS SET CALENDAR = 0xACED0005DEADBEEF WHERE CALENDAR_NAME = 'holidays'",
		"UPDATE QRTZ_JOB_DETAILS SET JOB_DATA = 0xACED0005737200FF WHERE JOB_NAME = 'audit'",
		"DELETE FROM QRTZ_CRON_TRIGGERS WHERE TRIGGER_NAME = 'month-end'",
		// Misfire instruction Quartz does not define.
		"UPDATE QRTZ_TRIGGERS SET MISFIRE_INSTR = 9 WHERE TRIGGER_NAME = 'new-year'",
		// No zone (Quartz then used its JVM's), and one Go does not know.
		"UPDATE QRTZ_CRON_TRIGGERS SET TIME_ZONE_ID = NULL WHERE TRIGGER_NAME = 'last-weekday'",
		"UPDATE QRTZ_CRON_TRIGGERS SET TIME_ZONE_ID = 'Mars/Olympus' WHERE TRIGGER_NAME = 'paused-cron'",
		// Java's own zone IDs, on expressions whose times do not depend
		// on the zone.
		"UPDATE QRTZ_CRON_TRIGGERS SET TIME_ZONE_ID = 'GMT+05:00' WHERE TRIGGER_NAME = 'ignore-misfires'",
		"UPDATE QRTZ_CRON_TRIGGERS SET TIME_ZONE_ID = 'PST' WHERE TRIGGER_NAME = 'exclusive-minutely'",
		"UPDATE QRTZ_CRON_TRIGGERS SET TIME_ZONE_ID = 'GMT+05:30' WHERE TRIGGER_NAME = 'nightly'",
		// A zone changed behind Quartz's back: NEXT_FIRE_TIME no longer
		// follows from the row.
		"UPDATE QRTZ_CRON_TRIGGERS SET TIME_ZONE_ID = 'Asia/Tokyo' WHERE TRIGGER_NAME = 'fired-cron'",
		// A repeat count Quartz does not write, and a grid whose last
		// time would overflow.
		"UPDATE QRTZ_SIMPLE_TRIGGERS SET REPEAT_COUNT = -5 WHERE TRIGGER_NAME = 'fired-simple'",
		"UPDATE QRTZ_SIMPLE_TRIGGERS SET REPEAT_COUNT = 9999999, REPEAT_INTERVAL = 2147483647000 WHERE TRIGGER_NAME = 'every-90s'",
		// A name that would rewrite the terminal.
		"INSERT INTO QRTZ_CALENDARS SELECT SCHED_NAME, CONCAT('evil', CHAR(27), '[2J'), CALENDAR FROM QRTZ_CALENDARS WHERE CALENDAR_NAME = 'weekly'",
	)
	o := options(t)
	rep, err := quartzimport.Import(ctx, src, st.Admin(), o)
	require.NoError(t, err)
	got := outcomes(rep)
	require.Equal(t, quartzimport.NotMapped, got["calendar holidays"])
	require.Contains(t, line(t, rep, "calendar holidays").Detail, "cannot read its blob")
	require.Equal(t, quartzimport.NotMapped, got["schedule ops.hourly-forever"]) // names holidays
	require.Equal(t, quartzimport.NotMapped, got["definition ops.audit"])
	require.Contains(t, line(t, rep, "definition ops.audit").Detail, "cannot read its JobDataMap")
	require.Equal(t, quartzimport.NotMapped, got["schedule ops.once"]) // audit's
	require.Equal(t, quartzimport.NotMapped, got["definition reports.legacy-report"])
	require.Contains(t, line(t, rep, "definition reports.legacy-report").Detail, `cannot read its JobDataMap: quartz job data: key "a"[0]: an array that contains itself`)
	require.Equal(t, quartzimport.NotMapped, got["schedule ops.overdue"])
	require.Contains(t, line(t, rep, "schedule ops.overdue").Detail, "the budget of a blob of 56533 bytes")
	require.Contains(t, line(t, rep, "schedule reports.month-end").Detail, "CRON_TRIGGERS row is missing")
	require.Contains(t, line(t, rep, "schedule ops.new-year").Detail, "unknown misfire instruction 9")
	require.Equal(t, quartzimport.Created, got["schedule ops.every-90s"]) // the rest goes on
	rows, err := st.Admin().ListSchedules(ctx, &chimedb.AdminListParams{Name: "ops.every-90s", Limit: 1})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Nil(t, rows[0].EndAt) // its last time is after the year 9999
	require.Equal(t, 10_000_000, *rows[0].MaxRuns)
	require.Equal(t, quartzimport.Created, got["schedule reports.last-weekday"])
	require.Contains(t, strings.Join(line(t, rep, "schedule reports.last-weekday").Notes, " "), "no time zone in Quartz")
	require.Contains(t, line(t, rep, "schedule reports.paused-cron").Detail, `unknown timezone "Mars/Olympus"`)
	require.Contains(t, line(t, rep, "schedule batch.nightly").Detail, "GMT+05:30 has no IANA name")
	require.Contains(t, line(t, rep, "schedule ops.fired-simple").Detail, "repeat count -5 is not valid")
	require.Contains(t, line(t, rep, "schedule ops.fired-cron").Detail,
		"chime would fire it first at 2030-01-04T01:00:00Z, Quartz next at 2030-01-03T10:00:00Z")
	for name, zone := range map[string]string{"ops.ignore-misfires": "Etc/GMT-5", "ops.exclusive-minutely": "America/Los_Angeles"} {
		rows, err := st.Admin().ListSchedules(ctx, &chimedb.AdminListParams{Name: name, Limit: 1})
		require.NoError(t, err)
		require.Len(t, rows, 1, name)
		require.Equal(t, zone, rows[0].Timezone, name)
	}
	var buf bytes.Buffer
	require.NoError(t, rep.Print(&buf))
	require.NotContains(t, buf.String(), "\x1b")
	require.Contains(t, buf.String(), `calendar evil\x1b[2J`)

	// A prefix with SQL in it, and one naming no tables.
	_, err = quartzimport.Import(ctx, src, st.Admin(), quartzimport.Options{TablePrefix: "QRTZ_` ; DROP TABLE x; --", Registry: o.Registry})
	require.ErrorIs(t, err, quartzimport.ErrSource)
	require.Contains(t, err.Error(), "only letters, digits and _")
	_, err = quartzimport.Import(ctx, src, st.Admin(), quartzimport.Options{TablePrefix: "QUARTZ_", Registry: o.Registry})
	require.ErrorIs(t, err, quartzimport.ErrSource)
	require.Contains(t, err.Error(), "is the table prefix right?")
	require.False(t, errors.Is(err, quartzimport.ErrUsage))
}

func TestImportScheduler(t *testing.T) {
	ctx := context.Background()
	// A second scheduler in the same tables, with one name in common.
	src, _ := loadStore(t,
		"INSERT INTO QRTZ_CALENDARS SELECT 'other', CALENDAR_NAME, CALENDAR FROM QRTZ_CALENDARS WHERE CALENDAR_NAME = 'weekly'",
	)
	o := options(t)
	o.DryRun = true
	st := testdb.Open(t, store.SQLite)
	rep, err := quartzimport.Import(ctx, src, st.Admin(), o)
	require.NoError(t, err)
	l := line(t, rep, "calendar weekly")
	require.Equal(t, quartzimport.NotMapped, l.Outcome)
	require.Contains(t, l.Detail, "--scheduler")
	require.Contains(t, l.Source, "of scheduler chimeImport")
	o.Scheduler = "chimeImport"
	rep, err = quartzimport.Import(ctx, src, st.Admin(), o)
	require.NoError(t, err)
	require.Equal(t, quartzimport.WouldCreate, line(t, rep, "calendar weekly").Outcome)
}

func TestParseClassMap(t *testing.T) {
	reg := registry(t)
	m, err := quartzimport.ParseClassMap(strings.NewReader("\ufeff---\n# comment\n\ncom.acme.A: shell # trailing\n\"com.acme.B$Inner\": sleep\r\n"), reg)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"com.acme.A": "shell", "com.acme.B$Inner": "sleep"}, m)
	for in, msg := range map[string]string{
		"com.acme.A shell\n":                   "line 1: no colon",
		"\n  com.acme.A: shell\n":              "line 2: indented",
		"com.acme.A: nope\n":                   `line 1: unknown task type "nope"`,
		"com.acme.A: shell\ncom.acme.A: sleep": "line 2: com.acme.A is mapped twice",
		"com acme: shell\n":                    "is not a Java class name",
		"com.acme.A:\n":                        "no task type",
		"com.acme.A: {a: b}\n":                 "want one plain word",
	} {
		_, err := quartzimport.ParseClassMap(strings.NewReader(in), reg)
		require.ErrorIs(t, err, quartzimport.ErrUsage, in)
		require.Contains(t, err.Error(), msg, in)
	}
}

// alwaysLeading is the engine's Leadership for a single node.
type alwaysLeading struct{}

func (alwaysLeading) Leading() bool       { return true }
func (alwaysLeading) OnChange(func(bool)) {}

// TestImportOverdue runs the real schedule engine on what was imported:
// the fires Quartz missed before the import (NEXT_FIRE_TIME in 2020) are
// chime's misfires, so FIRE_ONCE_NOW writes one catch-up job for them all
// and DO_NOTHING none, and both then wait for the next midnight, as Quartz
// would at its next start.
func TestImportOverdue(t *testing.T) {
	src, _ := loadStore(t)
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		o := options(t)
		o.Scheduler = "chimeImport"
		_, err := quartzimport.Import(ctx, src, st.Admin(), o)
		require.NoError(t, err)
		ids := map[string]int64{}
		for _, name := range []string{"ops.overdue", "ops.overdue-skip", "ops.every-90s"} {
			rows, err := st.Admin().ListSchedules(ctx, &chimedb.AdminListParams{Name: name, Limit: 1})
			require.NoError(t, err)
			require.Len(t, rows, 1, name)
			ids[name] = rows[0].ID
		}
		log := logrus.New()
		log.SetLevel(logrus.WarnLevel)
		e, err := scheduleengine.New(st, &scheduleengine.Config{NodeID: "import-test", Leadership: alwaysLeading{}, Logger: log})
		require.NoError(t, err)
		require.NoError(t, e.Start(ctx))
		defer func() { require.NoError(t, e.Stop(ctx)) }()

		trig := func(name string) *models.TimeTrigger {
			var tt models.TimeTrigger
			if st.DB().Where("schedule_id = ?", ids[name]).Limit(1).Find(&tt).RowsAffected == 0 {
				return nil
			}
			return &tt
		}
		// Both wait for the next midnight; read it from the row, so a test
		// running across midnight does not race the date.
		var next time.Time
		require.Eventually(t, func() bool {
			a, b := trig("ops.overdue"), trig("ops.overdue-skip")
			if a == nil || b == nil || a.NextFireAt == nil || b.NextFireAt == nil || !a.NextFireAt.Equal(*b.NextFireAt) {
				return false
			}
			next = a.NextFireAt.UTC()
			return next.After(time.Now()) && next.Equal(next.Truncate(24*time.Hour))
		}, 20*time.Second, 10*time.Millisecond, "the engine did not take up the imported schedules")

		jobs := func(name string) []models.Job {
			var out []models.Job
			require.NoError(t, st.DB().Where("schedule_id = ?", ids[name]).Find(&out).Error)
			return out
		}
		missed := int(next.Sub(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)) / (24 * time.Hour))
		once := jobs("ops.overdue")
		require.Len(t, once, 1)
		require.True(t, once[0].CatchUp)
		require.Equal(t, missed, once[0].MissedFires) // every midnight since 2020-01-01
		require.Equal(t, next.Add(-24*time.Hour), once[0].ScheduledAt.UTC())
		require.Empty(t, jobs("ops.overdue-skip"))
		require.Equal(t, int64(missed), trig("ops.overdue-skip").MisfiredCount)
		require.Empty(t, jobs("ops.every-90s")) // 2030
	})
}
