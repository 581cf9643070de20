package quartzimport

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/validate"
)

// Options say what to import and how.
type Options struct {
	// TablePrefix is the Quartz tables' prefix (default QRTZ_).
	TablePrefix string
	// Scheduler imports only the rows of this SCHED_NAME; "" imports every
	// scheduler of the store, and a name two schedulers use is reported
	// as not mapped in both.
	Scheduler string
	// ClassMap gives the task type of each job class (ParseClassMap).
	ClassMap map[string]string
	// DefaultTask is the task type of classes ClassMap does not name; ""
	// leaves those jobs out.
	DefaultTask string
	// DryRun checks and reports everything and writes nothing.
	DryRun bool
	// Registry holds chime's task types (default tasks.Default()).
	Registry *tasks.Registry
	// Now is the import's clock (default time.Now).
	Now func() time.Time
}

// Import reads the Quartz store src and writes what maps into dst. The
// error is for failures that stop the whole import: the store cannot be
// read (ErrSource), or chime's database fails. Everything else, object by
// object, is in the report.
func Import(ctx context.Context, src *sql.DB, dst chimedb.AdminQueries, o Options) (*Report, error) {
	if o.TablePrefix == "" {
		o.TablePrefix = DefaultTablePrefix
	}
	if o.Registry == nil {
		o.Registry = tasks.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.DefaultTask != "" {
		if _, err := o.Registry.New(o.DefaultTask); err != nil {
			return nil, fmt.Errorf("%w: --default-task: %v", ErrUsage, err)
		}
	}
	st, err := read(ctx, src, o.TablePrefix, o.Scheduler)
	if err != nil {
		return nil, err
	}
	im := &importer{o: o, dst: dst, st: st, rep: &Report{DryRun: o.DryRun}, now: o.Now().UTC(),
		cals: map[string]*calendarResult{}, defs: map[string]*definitionResult{}}
	im.findClashes()
	if err := im.run(ctx); err != nil {
		// The object being handled when chime's database failed is not
		// done: the report holds what was.
		if n := len(im.rep.Lines); n > 0 && im.rep.Lines[n-1].Outcome == "" {
			im.rep.Lines = im.rep.Lines[:n-1]
		}
		return im.rep, err
	}
	return im.rep, nil
}

func (im *importer) run(ctx context.Context) error {
	for i := range im.st.calendars {
		if err := im.calendar(ctx, &im.st.calendars[i]); err != nil {
			return err
		}
	}
	for i := range im.st.jobs {
		if err := im.definition(ctx, &im.st.jobs[i]); err != nil {
			return err
		}
	}
	for i := range im.st.triggers {
		if err := im.schedule(ctx, &im.st.triggers[i]); err != nil {
			return err
		}
	}
	return nil
}

type importer struct {
	o   Options
	dst chimedb.AdminQueries
	st  *store
	rep *Report
	now time.Time
	// clash holds kind + name of names several schedulers use.
	clash map[string][]string
	cals  map[string]*calendarResult   // by sched + name
	defs  map[string]*definitionResult // by key(sched, group, name)
	// scheds are the SCHED_NAMEs read.
	scheds map[string]bool
	// fakeID numbers the objects a dry run would create, for validation.
	fakeID int64
}

// calendarResult is a Quartz calendar's chime calendar; row is nil when it
// could not be mapped, and why says so.
type calendarResult struct {
	row *models.Calendar
	why string
}

type definitionResult struct {
	row           *models.JobDefinition
	why           string
	nonConcurrent bool
}

func (im *importer) findClashes() {
	seen := map[string]map[string]bool{}
	note := func(kind, name, sched string) {
		k := kind + "\x00" + name
		if seen[k] == nil {
			seen[k] = map[string]bool{}
		}
		seen[k][sched] = true
	}
	for _, c := range im.st.calendars {
		note("calendar", c.name, c.sched)
	}
	for _, j := range im.st.jobs {
		note("definition", j.group+"."+j.name, j.sched)
	}
	for _, t := range im.st.triggers {
		note("schedule", t.group+"."+t.name, t.sched)
	}
	im.clash = map[string][]string{}
	im.scheds = map[string]bool{}
	for k, scheds := range seen {
		for s := range scheds {
			im.scheds[s] = true
		}
		if len(scheds) > 1 {
			for s := range scheds {
				im.clash[k] = append(im.clash[k], s)
			}
		}
	}
}

func (im *importer) clashes(kind, name string) string {
	s := im.clash[kind+"\x00"+name]
	if len(s) == 0 {
		return ""
	}
	return fmt.Sprintf("schedulers %s all have a %s named %q; import one at a time with --scheduler NAME", strings.Join(sorted(s), ", "), kind, name)
}

func (im *importer) nextFakeID() int64 {
	im.fakeID++
	return math.MaxInt64/2 + im.fakeID
}

func (im *importer) calendar(ctx context.Context, q *qCalendar) error {
	res := &calendarResult{}
	im.cals[q.sched+"\x00"+q.name] = res
	line := im.rep.add(Line{Kind: "calendar", Name: q.name, Source: "Quartz calendar " + q.name + im.schedSuffix(q.sched)})
	notMapped := func(format string, args ...any) error {
		res.why = fmt.Sprintf(format, args...)
		line.Outcome, line.Detail = NotMapped, res.why
		return nil
	}
	if why := im.clashes("calendar", q.name); why != "" {
		return notMapped("%s", why)
	}
	qc, err := decodeCalendar(q.blob)
	if err != nil {
		return notMapped("cannot read its blob: %v", err)
	}
	line.Source = shortClass(qc.Class) + " " + q.name + im.schedSuffix(q.sched)
	if qc.Base != nil {
		return notMapped("it has a base calendar (%s); chime calendars do not chain: make one calendar that excludes both, or give the schedules the one that matters",
			shortClass(qc.Base.Class))
	}
	if qc.Kind == "" {
		return notMapped("chime has no calendar like %s (it has holiday, annual, monthly, weekly, daily and cron)", qc.Class)
	}
	line.Notes = append(line.Notes, qc.Notes...)
	tz := qc.Timezone
	if tz == "" {
		tz = "UTC"
		line.Notes = append(line.Notes, "no time zone in Quartz (it used the JVM's default): read in UTC")
	}
	row, err := validate.Calendar(&models.Calendar{Name: q.name, Kind: qc.Kind, Definition: models.JSON(qc.Definition),
		Timezone: tz, Description: qc.Description})
	if err != nil {
		return notMapped("%v", err)
	}
	cur, err := im.dst.GetCalendarByName(ctx, q.name)
	if errors.Is(err, chimedb.ErrNotFound) {
		cur, err = nil, nil
	}
	if err != nil {
		return err
	}
	res.row, res.why, err = settle(ctx, im, line, "calendar", cur, row, calendarDiff,
		func(c *models.Calendar) *int64 { return &c.ID }, im.dst.CreateCalendar)
	return err
}

// schedSuffix names the scheduler in the report when the store has several.
func (im *importer) schedSuffix(sched string) string {
	if len(im.scheds) < 2 {
		return ""
	}
	return " of scheduler " + sched
}

func (im *importer) definition(ctx context.Context, q *qJob) error {
	name := q.group + "." + q.name
	res := &definitionResult{nonConcurrent: q.nonConcurrent}
	im.defs[key(q.sched, q.group, q.name)] = res
	line := im.rep.add(Line{Kind: "definition", Name: name, Source: "JobDetail " + name + " (" + q.class + ")" + im.schedSuffix(q.sched)})
	notMapped := func(format string, args ...any) error {
		res.why = fmt.Sprintf(format, args...)
		line.Outcome, line.Detail = NotMapped, res.why
		return nil
	}
	if why := im.clashes("definition", name); why != "" {
		return notMapped("%s", why)
	}
	task, ok := im.o.ClassMap[q.class]
	if !ok {
		task = im.o.DefaultTask
	}
	if task == "" {
		return notMapped("no task type for class %s: name it in the map file or give --default-task", q.class)
	}
	params, err := jobData(q.data)
	if err != nil {
		return notMapped("cannot read its JobDataMap: %v", err)
	}
	if q.updateData {
		line.Notes = append(line.Notes, "Quartz saved its JobDataMap after each run (@PersistJobDataAfterExecution); chime's params do not change")
	}
	if q.nonConcurrent {
		line.Notes = append(line.Notes, "@DisallowConcurrentExecution: max_running 1 (one job of it at a time across all its schedules), and its schedules get concurrency forbid")
	}
	var maxRunning *int64
	if q.nonConcurrent {
		one := int64(1)
		maxRunning = &one
	}
	row, err := validate.Definition(im.o.Registry, &models.JobDefinition{Name: name, TaskType: task, Description: q.description.String,
		DefaultParams: params, MaxAttempts: 1, RetryBackoffSeconds: 10, NotifyOn: models.NotifyNever, RequestsRecovery: q.recovery,
		Priority: models.PriorityDefault, MaxRunning: maxRunning})
	if err != nil {
		return notMapped("as a %s task: %v", task, err)
	}
	cur, err := im.findDefinition(ctx, name)
	if err != nil {
		return err
	}
	res.row, res.why, err = settle(ctx, im, line, "job definition", cur, row, definitionDiff,
		func(d *models.JobDefinition) *int64 { return &d.ID }, im.dst.CreateDefinition)
	return err
}

func (im *importer) findDefinition(ctx context.Context, name string) (*models.JobDefinition, error) {
	rows, err := im.dst.ListDefinitions(ctx, &chimedb.AdminListParams{Name: name, Limit: 1})
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	return &rows[0], nil
}

func (im *importer) findSchedule(ctx context.Context, name string) (*models.Schedule, error) {
	rows, err := im.dst.ListSchedules(ctx, &chimedb.AdminListParams{Name: name, Limit: 1})
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	return &rows[0], nil
}

// jobData turns a JobDataMap blob into params JSON.
func jobData(blob []byte) (models.JSON, error) {
	if len(blob) == 0 {
		return nil, nil
	}
	m, err := decodeJobDataMap(blob)
	if err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("its values do not make JSON: %v", err)
	}
	return models.JSON(b), nil
}

// decodeCalendar and decodeJobDataMap call the blob decoders with a last
// guard: a blob is hostile input, and a decoder bug must cost one report
// line, not the import.
func decodeCalendar(blob []byte) (c *QuartzCalendar, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("decoder failed: %v", r)
		}
	}()
	c, err = DecodeCalendar(blob)
	if err == nil && c == nil {
		err = errors.New("decoder returned nothing")
	}
	return c, err
}

func decodeJobDataMap(blob []byte) (m map[string]any, err error) {
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("decoder failed: %v", r)
		}
	}()
	return DecodeJobDataMap(blob)
}

func shortClass(c string) string {
	if i := strings.LastIndexAny(c, ".$"); i >= 0 {
		return c[i+1:]
	}
	return c
}

func ms(v int64) time.Time { return time.UnixMilli(v).UTC() }

// maxMillis is the last millisecond of the year 9999, the latest time a
// schedule may name.
var maxMillis = time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC).UnixMilli()

func (im *importer) schedule(ctx context.Context, q *qTrigger) error {
	name := q.group + "." + q.name
	line := im.rep.add(Line{Kind: "schedule", Name: name, Source: q.kind + " trigger " + name + " of job " + q.jobGroup + "." + q.jobName + im.schedSuffix(q.sched)})
	notMapped := func(format string, args ...any) error {
		line.Outcome, line.Detail = NotMapped, fmt.Sprintf(format, args...)
		return nil
	}
	if why := im.clashes("schedule", name); why != "" {
		return notMapped("%s", why)
	}
	switch q.kind {
	case "CRON", "SIMPLE":
	case "CAL_INT":
		return notMapped("a CalendarIntervalTrigger (every N days, weeks, months or years of wall time) has no chime equivalent: use a cron schedule in quartz syntax (monthly on the 31st: '0 0 10 L * ?') or an interval schedule for fixed lengths")
	case "DAILY_I":
		return notMapped("a DailyTimeIntervalTrigger has no chime equivalent: use a cron schedule in quartz syntax whose hour and day-of-week fields give the window, e.g. '0 0/30 9-16 ? * MON-FRI'")
	case "BLOB":
		return notMapped("a trigger of a custom class (stored as a Java blob) cannot be read: recreate it as a cron, interval or once schedule")
	default:
		return notMapped("unknown trigger type %q", q.kind)
	}
	def := im.defs[key(q.sched, q.jobGroup, q.jobName)]
	switch {
	case def == nil:
		return notMapped("its job %s.%s does not exist in the Quartz store", q.jobGroup, q.jobName)
	case def.row == nil:
		return notMapped("its job %s.%s was not mapped (%s)", q.jobGroup, q.jobName, def.why)
	}
	var cal *models.Calendar
	if q.calendar.Valid && q.calendar.String != "" {
		c := im.cals[q.sched+"\x00"+q.calendar.String]
		switch {
		case c == nil:
			return notMapped("its calendar %q does not exist in the Quartz store", q.calendar.String)
		case c.row == nil:
			return notMapped("its calendar %q was not mapped (%s)", q.calendar.String, c.why)
		}
		cal = c.row
	}
	switch q.state {
	case "COMPLETE", "DELETED":
		return notMapped("its state is %s: Quartz will not fire it again", q.state)
	}
	if !q.next.Valid || q.next.Int64 <= 0 {
		return notMapped("it has no next fire time (state %s): Quartz will not fire it again", q.state)
	}
	next := ms(q.next.Int64)
	params, err := jobData(q.data)
	if err != nil {
		return notMapped("cannot read its JobDataMap: %v", err)
	}
	s := &models.Schedule{Name: name, JobDefinitionID: def.row.ID, Params: params, Timezone: "UTC",
		Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive, DSTPolicy: models.DSTOnce, CronSyntax: models.SyntaxStandard}
	if cal != nil {
		s.CalendarID = &cal.ID
	}
	if def.nonConcurrent {
		s.Concurrency = models.ConcurrencyForbid
	}
	if q.description.String != "" {
		line.Notes = append(line.Notes, "its description is not carried over: chime's schedules have none")
	}
	paused := ""
	switch {
	case q.state == "PAUSED" || q.state == "PAUSED_BLOCKED":
		paused = "paused in Quartz"
	case im.st.paused[q.sched+"\x00"+q.group]:
		paused = "its group " + q.group + " is paused in Quartz"
	case im.st.paused[q.sched+"\x00"+allGroupsPaused]:
		paused = "all its scheduler's groups are paused in Quartz"
	case q.state == "ERROR":
		paused = "in ERROR state in Quartz (its job could not be run)"
	}
	if paused != "" {
		s.Status = models.SchedulePaused
		line.Notes = append(line.Notes, "status paused: "+paused)
	}
	if why := im.timing(q, s, next, line); why != "" {
		return notMapped("%s", why)
	}
	start, repeat := ms(q.start), q.repeatCount.Int64
	policy, approx, err := misfirePolicy(q.kind, q.misfire.Int64, repeat)
	if err != nil {
		return notMapped("%v", err)
	}
	s.MisfirePolicy = policy
	if approx != "" {
		line.Notes = append(line.Notes, fmt.Sprintf("misfire instruction %s -> %s: %s", misfireName(q.kind, q.misfire.Int64, repeat), policy, approx))
	}
	if n := applyPriority(s, q.priority.Int64); n != "" {
		line.Notes = append(line.Notes, n)
	}
	// Fires that Quartz missed before the import are chime's misfires: a
	// schedule counts its fires from created_at, so a past next fire time
	// becomes created_at and misfire_policy decides, as Quartz's would at
	// its next start.
	created := im.now
	if next.Before(created) {
		created = next
		line.Notes = append(line.Notes, fmt.Sprintf("Quartz's next fire time %s is past: chime treats the fires since then as misfires (%s)",
			next.Format(time.RFC3339), policy))
	}
	row, why := im.placeStart(s, start, next, def.row, cal, created)
	if row == nil {
		return notMapped("%s", why)
	}
	cur, err := im.findSchedule(ctx, name)
	if err != nil {
		return err
	}
	_, _, err = settle(ctx, im, line, "schedule", cur, row, scheduleDiff,
		func(s *models.Schedule) *int64 { return &s.ID }, im.dst.CreateSchedule)
	return err
}

// settle ends an object's import once its row is built. chime's row of
// that name, when there is one, is kept (unchanged) or left alone (a
// conflict naming the columns that differ); else row is created, or under
// --dry-run only reported, with a made-up id so that later objects can
// name it. It returns the row the import goes on with and, when there is
// none, why.
func settle[T any](ctx context.Context, im *importer, line *Line, what string, cur, row *T,
	diff func(cur, row *T) string, id func(*T) *int64, create func(context.Context, *T) error) (*T, string, error) {
	if cur != nil {
		if d := diff(cur, row); d != "" {
			why := "chime's " + what + " of that name differs"
			line.Outcome, line.Detail = Conflict, why+": "+d
			return nil, why, nil
		}
		line.Outcome = Unchanged
		return cur, "", nil
	}
	if im.o.DryRun {
		*id(row) = im.nextFakeID()
		line.Outcome = WouldCreate
		return row, "", nil
	}
	if err := create(ctx, row); err != nil {
		if errors.Is(err, chimedb.ErrConflict) {
			why := fmt.Sprintf("created meanwhile by someone else: %v", err)
			line.Outcome, line.Detail = NotMapped, why
			return nil, why, nil
		}
		return nil, "", fmt.Errorf("%s %q: %w", what, line.Name, err)
	}
	line.Outcome = Created
	return row, "", nil
}

// timing sets s's schedule type and spec, time zone, end and max_runs from
// the trigger's CRON or SIMPLE row, or says why they do not map.
func (im *importer) timing(q *qTrigger, s *models.Schedule, next time.Time, line *Line) (why string) {
	var end *time.Time
	if q.end.Valid && q.end.Int64 > 0 {
		e := ms(q.end.Int64)
		end = &e
	}
	repeat := q.repeatCount.Int64
	switch q.kind {
	case "CRON":
		if !q.cronExpr.Valid {
			return fmt.Sprintf("its %sCRON_TRIGGERS row is missing", im.o.TablePrefix)
		}
		expr := q.cronExpr.String
		s.ScheduleType, s.CronExpr, s.CronSyntax = models.ScheduleCron, &expr, models.SyntaxQuartz
		if q.timeZone.Valid && q.timeZone.String != "" {
			zone, note, err := cronZone(q.timeZone.String)
			if err != nil {
				return err.Error()
			}
			if note != "" {
				line.Notes = append(line.Notes, note)
			}
			s.Timezone = zone
		} else {
			line.Notes = append(line.Notes, "no time zone in Quartz (it used the JVM's default): read in UTC")
		}
		s.EndAt = end
	case "SIMPLE":
		if !q.repeatCount.Valid || !q.repeatInterval.Valid {
			return fmt.Sprintf("its %sSIMPLE_TRIGGERS row is missing", im.o.TablePrefix)
		}
		if repeat < repeatIndefinitely {
			return fmt.Sprintf("repeat count %d is not valid (Quartz: -1 for ever, or 0 and up)", repeat)
		}
		if repeat == 0 {
			s.ScheduleType, s.RunAt = models.ScheduleOnce, &next
			break
		}
		every := q.repeatInterval.Int64
		if every <= 0 || every%1000 != 0 || every/1000 > math.MaxInt32 {
			return fmt.Sprintf("its interval of %d ms is not a whole number of seconds (up to %d): chime intervals are whole seconds; use a cron schedule", every, math.MaxInt32)
		}
		secs := int(every / 1000)
		s.ScheduleType, s.IntervalSeconds, s.EndAt = models.ScheduleInterval, &secs, end
		if repeat > 0 {
			if repeat >= math.MaxInt32 || q.triggered.Int64 < 0 {
				return fmt.Sprintf("repeat count %d, fired %d times: max_runs goes up to %d", repeat, q.triggered.Int64, math.MaxInt32)
			}
			left := repeat + 1 - q.triggered.Int64
			if left <= 0 {
				return fmt.Sprintf("repeat count %d, fired %d times: no runs left", repeat, q.triggered.Int64)
			}
			runs := int(left)
			s.MaxRuns = &runs
			// Quartz stops after the repeat-count-th interval even when a
			// calendar skipped some fires; so does end_at. (A grid ending
			// after the year 9999 needs no end, and must not overflow.)
			if q.start >= 0 && every <= (maxMillis-q.start)/repeat {
				if last := ms(q.start + repeat*every); s.EndAt == nil || last.Before(*s.EndAt) {
					s.EndAt = &last
				}
			}
		}
	}
	return ""
}

// placeStart sets start_at so that chime's first fire is Quartz's next
// fire time: Quartz's start time when that gives it (a trigger that has not
// fired), else the next fire time itself (one that has, or whose misfires
// Quartz already handled), so that no fire Quartz made is made again. It
// returns the validated row, or why it cannot be mapped.
func (im *importer) placeStart(s *models.Schedule, start, next time.Time, def *models.JobDefinition, cal *models.Calendar, created time.Time) (*models.Schedule, string) {
	var lastWhy string
	for _, from := range []time.Time{start, next} {
		c := *s
		if c.ScheduleType != models.ScheduleOnce {
			f := from
			c.StartAt = &f
		}
		row, trig, err := validate.Schedule(im.o.Registry, &c, def, cal, created)
		if err != nil {
			if ve, ok := errors.AsType[*validate.Error](err); ok && ve.Field != "" {
				return nil, ve.Field + ": " + err.Error()
			}
			return nil, err.Error()
		}
		first := trig.Next(created.Add(-time.Nanosecond))
		if first.Equal(next) {
			return row, ""
		}
		lastWhy = fmt.Sprintf("chime would fire it first at %s, Quartz next at %s", timeOrNone(first), next.Format(time.RFC3339Nano))
	}
	return nil, lastWhy
}

func timeOrNone(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Format(time.RFC3339Nano)
}

// The diffs compare only what the import sets, so that settings an admin
// added since (attempts, timeouts, notifications) are no conflict.

func definitionDiff(cur, want *models.JobDefinition) string {
	var d []string
	if cur.TaskType != want.TaskType {
		d = append(d, fmt.Sprintf("task_type %q, import %q", cur.TaskType, want.TaskType))
	}
	if cur.Description != want.Description {
		d = append(d, "description")
	}
	if !jsonEqual(cur.DefaultParams, want.DefaultParams) {
		d = append(d, "default_params")
	}
	if cur.RequestsRecovery != want.RequestsRecovery {
		d = append(d, fmt.Sprintf("requests_recovery %v, import %v", cur.RequestsRecovery, want.RequestsRecovery))
	}
	return strings.Join(d, "; ")
}

func calendarDiff(cur, want *models.Calendar) string {
	var d []string
	if cur.Kind != want.Kind {
		d = append(d, fmt.Sprintf("kind %s, import %s", cur.Kind, want.Kind))
	}
	if !jsonEqual(cur.Definition, want.Definition) {
		d = append(d, "definition")
	}
	if cur.Timezone != want.Timezone {
		d = append(d, fmt.Sprintf("timezone %s, import %s", cur.Timezone, want.Timezone))
	}
	if cur.Description != want.Description {
		d = append(d, "description")
	}
	return strings.Join(d, "; ")
}

func scheduleDiff(cur, want *models.Schedule) string {
	var d []string
	diff := func(col string, a, b any) {
		if !reflect.DeepEqual(a, b) {
			d = append(d, col)
		}
	}
	diff("job_definition_id", cur.JobDefinitionID, want.JobDefinitionID)
	diff("schedule_type", cur.ScheduleType, want.ScheduleType)
	diff("cron_expr", deref(cur.CronExpr), deref(want.CronExpr))
	diff("cron_syntax", cur.CronSyntax, want.CronSyntax)
	diff("calendar_id", deref(cur.CalendarID), deref(want.CalendarID))
	diff("interval_seconds", deref(cur.IntervalSeconds), deref(want.IntervalSeconds))
	diff("timezone", cur.Timezone, want.Timezone)
	diff("max_runs", deref(cur.MaxRuns), deref(want.MaxRuns))
	diff("misfire_policy", cur.MisfirePolicy, want.MisfirePolicy)
	diff("concurrency", cur.Concurrency, want.Concurrency)
	diff("priority", deref(cur.Priority), deref(want.Priority))
	for _, t := range []struct {
		col  string
		a, b *time.Time
	}{{"run_at", cur.RunAt, want.RunAt}, {"start_at", cur.StartAt, want.StartAt}, {"end_at", cur.EndAt, want.EndAt}} {
		if !sameTime(t.a, t.b) {
			d = append(d, t.col)
		}
	}
	if !jsonEqual(cur.Params, want.Params) {
		d = append(d, "params")
	}
	// completed and invalid are the engine's words about the schedule, not
	// an admin's change of it.
	if (cur.Status == models.ScheduleActive || cur.Status == models.SchedulePaused) && cur.Status != want.Status {
		d = append(d, fmt.Sprintf("status %s, import %s", cur.Status, want.Status))
	}
	return strings.Join(d, "; ")
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.UTC().Truncate(time.Microsecond).Equal(b.UTC().Truncate(time.Microsecond))
}

// jsonEqual compares two JSON documents by value; absent, null and {} are
// the same empty params.
func jsonEqual(a, b models.JSON) bool {
	var x, y any
	if err := json.Unmarshal(orEmpty(a), &x); err != nil {
		return false
	}
	if err := json.Unmarshal(orEmpty(b), &y); err != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func orEmpty(j models.JSON) []byte {
	if s := strings.TrimSpace(string(j)); s == "" || s == "null" {
		return []byte("{}")
	}
	return j
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
