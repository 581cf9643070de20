package quartzimport

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// DefaultTablePrefix is Quartz's org.quartz.jobStore.tablePrefix default.
const DefaultTablePrefix = "QRTZ_"

var prefixRE = regexp.MustCompile(`^[A-Za-z0-9_]{0,32}$`)

// ErrSource wraps every failure to read the Quartz store as a whole (a bad
// DSN or prefix, no connection, a missing table): nothing was imported.
var ErrSource = errors.New("quartz store")

func sourceErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrSource, fmt.Sprintf(format, args...))
}

// CheckTablePrefix refuses a prefix that is not a plain identifier: it is
// put into SQL as part of the table names.
func CheckTablePrefix(p string) error {
	if !prefixRE.MatchString(p) {
		return sourceErr("table prefix %q: only letters, digits and _ are allowed (at most 32), as in QRTZ_", p)
	}
	return nil
}

// OpenSource opens the Quartz database named by dsn, a go-sql-driver DSN
// (user:password@tcp(host:3306)/quartz).
func OpenSource(ctx context.Context, dsn string) (*sql.DB, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, sourceErr("bad DSN: %v (want user:password@tcp(host:3306)/database)", err)
	}
	if cfg.DBName == "" {
		return nil, sourceErr("the DSN names no database (want user:password@tcp(host:3306)/database)")
	}
	// The store is only read; BIGINT millis and blobs come back as they are.
	cfg.ParseTime = false
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return nil, sourceErr("%v", err)
	}
	db.SetMaxOpenConns(2)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, sourceErr("cannot connect: %v", err)
	}
	return db, nil
}

// store is what was read from the QRTZ_ tables.
type store struct {
	calendars []qCalendar
	jobs      []qJob
	triggers  []qTrigger
	// paused holds "sched\x00group" of paused trigger groups; a scheduler
	// paused as a whole has group allGroupsPaused.
	paused map[string]bool
}

// allGroupsPaused is the group Quartz records for pauseAll().
const allGroupsPaused = "_$_ALL_GROUPS_PAUSED_$_"

type qCalendar struct {
	sched, name string
	blob        []byte
}

type qJob struct {
	sched, name, group, class string
	description               sql.NullString
	durable, nonConcurrent    bool
	updateData, recovery      bool
	data                      []byte
}

type qTrigger struct {
	sched, name, group, jobName, jobGroup string
	description                           sql.NullString
	next, prev                            sql.NullInt64
	priority                              sql.NullInt64
	state, kind                           string
	start                                 int64
	end                                   sql.NullInt64
	calendar                              sql.NullString
	misfire                               sql.NullInt64
	data                                  []byte

	cronExpr, timeZone                     sql.NullString
	repeatCount, repeatInterval, triggered sql.NullInt64
}

func key(sched, group, name string) string { return sched + "\x00" + group + "\x00" + name }

// read loads the tables of one scheduler (sched) or of all ("").
func read(ctx context.Context, db *sql.DB, prefix, sched string) (*store, error) {
	if err := CheckTablePrefix(prefix); err != nil {
		return nil, err
	}
	t := func(name string) string { return "`" + prefix + name + "`" }
	where, args := "", []any{}
	if sched != "" {
		where, args = " WHERE x.SCHED_NAME = ?", []any{sched}
	}
	st := &store{paused: map[string]bool{}}
	q := func(what, query string, scan func(*sql.Rows) error) error {
		rows, err := db.QueryContext(ctx, query, args...)
		if err != nil {
			var me *mysql.MySQLError
			if errors.As(err, &me) && me.Number == 1146 {
				return sourceErr("%s: %v (is the table prefix right? Quartz's default is %s)", what, me.Message, DefaultTablePrefix)
			}
			return sourceErr("read %s: %v", what, err)
		}
		defer rows.Close()
		for rows.Next() {
			if err := scan(rows); err != nil {
				return sourceErr("read %s: %v", what, err)
			}
		}
		if err := rows.Err(); err != nil {
			return sourceErr("read %s: %v", what, err)
		}
		return nil
	}
	err := q(prefix+"CALENDARS", "SELECT x.SCHED_NAME, x.CALENDAR_NAME, x.CALENDAR FROM "+t("CALENDARS")+" x"+where,
		func(r *sql.Rows) error {
			var c qCalendar
			err := r.Scan(&c.sched, &c.name, &c.blob)
			st.calendars = append(st.calendars, c)
			return err
		})
	if err != nil {
		return nil, err
	}
	err = q(prefix+"JOB_DETAILS", "SELECT x.SCHED_NAME, x.JOB_NAME, x.JOB_GROUP, x.DESCRIPTION, x.JOB_CLASS_NAME, x.IS_DURABLE, "+
		"x.IS_NONCONCURRENT, x.IS_UPDATE_DATA, x.REQUESTS_RECOVERY, x.JOB_DATA FROM "+t("JOB_DETAILS")+" x"+where,
		func(r *sql.Rows) error {
			var j qJob
			var durable, nonConc, update, recovery string
			err := r.Scan(&j.sched, &j.name, &j.group, &j.description, &j.class, &durable, &nonConc, &update, &recovery, &j.data)
			j.durable, j.nonConcurrent, j.updateData, j.recovery = flag(durable), flag(nonConc), flag(update), flag(recovery)
			st.jobs = append(st.jobs, j)
			return err
		})
	if err != nil {
		return nil, err
	}
	err = q(prefix+"TRIGGERS", "SELECT x.SCHED_NAME, x.TRIGGER_NAME, x.TRIGGER_GROUP, x.JOB_NAME, x.JOB_GROUP, x.DESCRIPTION, "+
		"x.NEXT_FIRE_TIME, x.PREV_FIRE_TIME, x.PRIORITY, x.TRIGGER_STATE, x.TRIGGER_TYPE, x.START_TIME, x.END_TIME, "+
		"x.CALENDAR_NAME, x.MISFIRE_INSTR, x.JOB_DATA, c.CRON_EXPRESSION, c.TIME_ZONE_ID, "+
		"s.REPEAT_COUNT, s.REPEAT_INTERVAL, s.TIMES_TRIGGERED FROM "+t("TRIGGERS")+" x "+
		"LEFT JOIN "+t("CRON_TRIGGERS")+" c ON c.SCHED_NAME = x.SCHED_NAME AND c.TRIGGER_NAME = x.TRIGGER_NAME AND c.TRIGGER_GROUP = x.TRIGGER_GROUP "+
		"LEFT JOIN "+t("SIMPLE_TRIGGERS")+" s ON s.SCHED_NAME = x.SCHED_NAME AND s.TRIGGER_NAME = x.TRIGGER_NAME AND s.TRIGGER_GROUP = x.TRIGGER_GROUP"+where,
		func(r *sql.Rows) error {
			var g qTrigger
			err := r.Scan(&g.sched, &g.name, &g.group, &g.jobName, &g.jobGroup, &g.description, &g.next, &g.prev, &g.priority,
				&g.state, &g.kind, &g.start, &g.end, &g.calendar, &g.misfire, &g.data, &g.cronExpr, &g.timeZone,
				&g.repeatCount, &g.repeatInterval, &g.triggered)
			st.triggers = append(st.triggers, g)
			return err
		})
	if err != nil {
		return nil, err
	}
	err = q(prefix+"PAUSED_TRIGGER_GRPS", "SELECT x.SCHED_NAME, x.TRIGGER_GROUP FROM "+t("PAUSED_TRIGGER_GRPS")+" x"+where,
		func(r *sql.Rows) error {
			var s, g string
			err := r.Scan(&s, &g)
			st.paused[s+"\x00"+g] = true
			return err
		})
	if err != nil {
		return nil, err
	}
	if sched != "" && len(st.calendars)+len(st.jobs)+len(st.triggers) == 0 {
		var names []string
		rows, err := db.QueryContext(ctx, "SELECT SCHED_NAME FROM "+t("JOB_DETAILS")+" UNION SELECT SCHED_NAME FROM "+t("CALENDARS")+" ORDER BY 1")
		if err == nil {
			for rows.Next() {
				var n string
				if rows.Scan(&n) == nil {
					names = append(names, n)
				}
			}
			_ = rows.Close()
		}
		return nil, sourceErr("no scheduler %q in the store (it has: %s)", sched, strings.Join(names, ", "))
	}
	sort.Slice(st.calendars, func(i, j int) bool {
		a, b := st.calendars[i], st.calendars[j]
		return a.name+"\x00"+a.sched < b.name+"\x00"+b.sched
	})
	sort.Slice(st.jobs, func(i, j int) bool {
		return key("", st.jobs[i].group, st.jobs[i].name)+st.jobs[i].sched < key("", st.jobs[j].group, st.jobs[j].name)+st.jobs[j].sched
	})
	sort.Slice(st.triggers, func(i, j int) bool {
		return key("", st.triggers[i].group, st.triggers[i].name)+st.triggers[i].sched < key("", st.triggers[j].group, st.triggers[j].name)+st.triggers[j].sched
	})
	return st, nil
}

// flag reads Quartz's VARCHAR(1) booleans: StdJDBCDelegate writes them with
// setBoolean, which MySQL/MariaDB drivers store as "1"/"0"; some delegates
// write "Y"/"N" or "t"/"f".
func flag(s string) bool {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "1", "Y", "T", "TRUE":
		return true
	}
	return false
}
