package quartzimport

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/chimesched/chime/internal/javaser"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/trigger"
)

// QuartzCalendar is a Quartz calendar decoded from QRTZ_CALENDARS.CALENDAR,
// in chime's terms: Kind, Definition, Timezone and Description fill a
// calendars row.
type QuartzCalendar struct {
	// Class is the Java class, e.g. org.quartz.impl.calendar.HolidayCalendar.
	Class string
	// Kind and Definition are chime's (docs/quartz.md "Calendars"); the
	// definition passes trigger.ParseCalendar with Timezone.
	Kind       models.CalendarKind
	Definition json.RawMessage
	// Timezone is the IANA name of the calendar's zone; "" when it had
	// none, so that Quartz read it in its JVM's default zone (the importer
	// reports it; chime would read it in UTC). A zone-less holiday
	// calendar's dates are taken as the days whose midnight they are in
	// any zone from UTC-12 to UTC+12, so they stay right whatever zone
	// the importer gives the calendar.
	Timezone    string
	Description string
	// Base is the calendar's base calendar (Quartz excludes what either
	// excludes); chime has no chaining, so the importer reports it.
	Base *QuartzCalendar
	// Notes say where chime's calendar is not exactly Quartz's, in words
	// for the import report (e.g. a daily range with milliseconds).
	Notes []string
}

// Quartz's calendar classes (org.quartz.impl.calendar).
const (
	classBase    = "org.quartz.impl.calendar.BaseCalendar"
	classHoliday = "org.quartz.impl.calendar.HolidayCalendar"
	classAnnual  = "org.quartz.impl.calendar.AnnualCalendar"
	classMonthly = "org.quartz.impl.calendar.MonthlyCalendar"
	classWeekly  = "org.quartz.impl.calendar.WeeklyCalendar"
	classDaily   = "org.quartz.impl.calendar.DailyCalendar"
	classCron    = "org.quartz.impl.calendar.CronCalendar"
)

// maxBaseChain bounds base calendar chaining; a serialized calendar can
// even name itself as its base.
const maxBaseChain = 16

// DecodeCalendar reads a serialized org.quartz.Calendar, as Quartz's
// StdJDBCDelegate stores it in QRTZ_CALENDARS.CALENDAR, and its base
// calendars. A calendar chime has no kind for (a plain BaseCalendar, a
// class of the application's own) or cannot express (one that excludes
// every day) is an error naming it.
func DecodeCalendar(blob []byte) (*QuartzCalendar, error) {
	if len(blob) == 0 {
		return nil, errors.New("quartz calendar: empty")
	}
	v, err := javaser.Decode(blob)
	if err != nil {
		return nil, fmt.Errorf("quartz calendar: %w", err)
	}
	o, ok := v.(*javaser.Object)
	if !ok {
		return nil, fmt.Errorf("quartz calendar: the blob holds a %T, not a calendar object", v)
	}
	return calendarOf(o, nil)
}

func calendarOf(o *javaser.Object, chain []*javaser.Object) (*QuartzCalendar, error) {
	if slices.Contains(chain, o) {
		return nil, errors.New("quartz calendar: a calendar is its own base calendar")
	}
	if len(chain) >= maxBaseChain {
		return nil, fmt.Errorf("quartz calendar: more than %d base calendars in a chain", maxBaseChain)
	}
	chain = append(chain, o)
	if !o.InstanceOf(classBase) {
		return nil, fmt.Errorf("quartz calendar: %s is no Quartz calendar (only subclasses of %s can be read)", o.ClassName(), classBase)
	}
	c := &QuartzCalendar{Class: o.ClassName()}
	// description and timeZone came in Quartz 1.5/1.6: a calendar from an
	// older store has neither, which is as null.
	desc, _ := o.Field("description")
	if s, ok := desc.(string); ok {
		c.Description = s
	}
	zone, _ := o.Field("timeZone")
	var loc *time.Location
	var err error
	if c.Timezone, loc, err = zoneOf(zone); err != nil {
		return nil, fmt.Errorf("quartz calendar %s: %w", c.Class, err)
	}
	var def any
	known := ""
	for _, k := range []string{classHoliday, classAnnual, classMonthly, classWeekly, classDaily, classCron} {
		if o.InstanceOf(k) {
			known = k
			break
		}
	}
	switch known {
	case classHoliday:
		c.Kind = models.CalendarHoliday
		def, err = holidayDef(o, loc, c)
	case classAnnual:
		c.Kind = models.CalendarAnnual
		def, err = annualDef(o)
	case classMonthly:
		c.Kind = models.CalendarMonthly
		def, err = monthlyDef(o)
	case classWeekly:
		c.Kind = models.CalendarWeekly
		def, err = weeklyDef(o)
	case classDaily:
		c.Kind = models.CalendarDaily
		def, err = dailyDef(o, c)
	case classCron:
		c.Kind = models.CalendarCron
		def, err = cronDef(o, c)
	default:
		return nil, fmt.Errorf("quartz calendar: %s has no chime kind (chime has holiday, annual, monthly, weekly, daily and cron calendars)", c.Class)
	}
	if err != nil {
		return nil, fmt.Errorf("quartz calendar %s: %w", c.Class, err)
	}
	if c.Class != known {
		c.Notes = append(c.Notes, fmt.Sprintf("%s is a subclass of %s: read as one, whatever it changed", c.Class, known))
	}
	if c.Definition, err = json.Marshal(def); err != nil {
		return nil, fmt.Errorf("quartz calendar %s: %w", c.Class, err)
	}
	if _, err := trigger.ParseCalendar(&models.Calendar{Kind: c.Kind, Definition: models.JSON(c.Definition), Timezone: c.Timezone}); err != nil {
		return nil, fmt.Errorf("quartz calendar %s: %w", c.Class, err)
	}
	if base, _ := o.Field("baseCalendar"); base != nil {
		bo, ok := base.(*javaser.Object)
		if !ok {
			return nil, fmt.Errorf("quartz calendar %s: its base calendar is a %T", c.Class, base)
		}
		if c.Base, err = calendarOf(bo, chain); err != nil {
			return nil, fmt.Errorf("base calendar of %s: %w", c.Class, err)
		}
	}
	return c, nil
}

// holidayDef: a TreeSet<java.util.Date> of the midnights (in the
// calendar's zone) of the excluded days. Quartz matches a day by its exact
// midnight, so a date that is no midnight in the calendar's zone (it was
// added before the zone was set) excludes nothing.
func holidayDef(o *javaser.Object, loc *time.Location, c *QuartzCalendar) (any, error) {
	v, err := javaser.FieldAs[any](o, "dates")
	if err != nil {
		return nil, err
	}
	items, err := javaList(v)
	if err != nil {
		return nil, fmt.Errorf("dates: %w", err)
	}
	dates := []string{}
	for _, it := range items {
		ms, err := javaDate(it)
		if err != nil {
			return nil, fmt.Errorf("dates: %w", err)
		}
		t := time.UnixMilli(ms)
		if loc == nil {
			dates = append(dates, t.Add(12*time.Hour).UTC().Format(time.DateOnly))
			continue
		}
		l := t.In(loc)
		if !isDayStart(l) {
			c.Notes = append(c.Notes, fmt.Sprintf("excluded date %s is not a midnight in %s, so Quartz never matched it: left out", l.Format(time.RFC3339Nano), loc))
			continue
		}
		dates = append(dates, l.Format(time.DateOnly))
	}
	slices.Sort(dates)
	return map[string]any{"dates": slices.Compact(dates)}, nil
}

// isDayStart reports whether l is the first instant of its day in its zone:
// midnight, or the end of a daylight-saving gap that skips midnight (where
// Java's lenient calendar puts a day's start).
func isDayStart(l time.Time) bool {
	h, m, s := l.Clock()
	if h == 0 && m == 0 && s == 0 && l.Nanosecond() == 0 {
		return true
	}
	y, mo, d := l.Date()
	py, pmo, pd := l.Add(-time.Millisecond).Date()
	return l.Nanosecond()%int(time.Millisecond) == 0 && (py != y || pmo != mo || pd != d)
}

// annualDef: an ArrayList<java.util.Calendar>; Quartz compares the month
// and day of month of each, read in that Calendar's own zone.
func annualDef(o *javaser.Object) (any, error) {
	v, err := javaser.FieldAs[any](o, "excludeDays")
	if err != nil {
		return nil, err
	}
	items, err := javaList(v)
	if err != nil {
		return nil, fmt.Errorf("excludeDays: %w", err)
	}
	days := []string{}
	for _, it := range items {
		m, d, err := monthDay(it)
		if err != nil {
			return nil, fmt.Errorf("excludeDays: %w", err)
		}
		days = append(days, fmt.Sprintf("%02d-%02d", m, d))
	}
	slices.Sort(days)
	return map[string]any{"days": slices.Compact(days)}, nil
}

// java.util.Calendar's field indexes.
const (
	calMonth      = 2
	calDayOfMonth = 5
)

// monthDay is what a deserialized java.util.Calendar's get(MONTH) + 1 and
// get(DAY_OF_MONTH) return: the fields it was written with where they
// were set, otherwise computed from its time in its zone.
func monthDay(v any) (int, int, error) {
	o, ok := v.(*javaser.Object)
	if !ok || !o.InstanceOf("java.util.Calendar") {
		return 0, 0, fmt.Errorf("a %s where a java.util.Calendar was expected", describe(v))
	}
	areSet, err1 := javaser.FieldAs[bool](o, "areFieldsSet")
	fields, err2 := javaser.FieldAs[[]int32](o, "fields")
	isSet, err3 := javaser.FieldAs[[]bool](o, "isSet")
	if err := errors.Join(err1, err2, err3); err != nil {
		return 0, 0, err
	}
	if areSet && len(fields) > calDayOfMonth && len(isSet) > calDayOfMonth && isSet[calMonth] && isSet[calDayOfMonth] {
		return int(fields[calMonth]) + 1, int(fields[calDayOfMonth]), nil
	}
	ms, err := javaser.FieldAs[int64](o, "time")
	if err != nil {
		return 0, 0, err
	}
	// Calendar.writeObject writes its ZoneInfo after the fields (and a
	// SimpleTimeZone stand-in in the zone field).
	zone, err := o.Stream("java.util.Calendar").ReadObject()
	if err != nil || zone == nil {
		if zone, err = javaser.FieldAs[any](o, "zone"); err != nil {
			return 0, 0, err
		}
	}
	_, loc, err := zoneOf(zone)
	if err != nil {
		return 0, 0, err
	}
	if loc == nil {
		loc = time.UTC
	}
	_, m, d := time.UnixMilli(ms).In(loc).Date()
	return int(m), d, nil
}

// monthlyDef: boolean[31], index 0 for the 1st.
func monthlyDef(o *javaser.Object) (any, error) {
	ex, err := javaser.FieldAs[[]bool](o, "excludeDays")
	if err != nil {
		return nil, err
	}
	days := []int{}
	for i, x := range ex {
		if x && i < 31 {
			days = append(days, i+1)
		}
	}
	if len(days) == 31 {
		return nil, errors.New("it excludes every day of the month, which chime refuses (Quartz never fires such a trigger)")
	}
	return map[string]any{"days": days}, nil
}

// weeklyDef: boolean[8] indexed by java.util.Calendar's DAY_OF_WEEK,
// 1 = SUNDAY to 7 = SATURDAY (index 0 unused).
func weeklyDef(o *javaser.Object) (any, error) {
	ex, err := javaser.FieldAs[[]bool](o, "excludeDays")
	if err != nil {
		return nil, err
	}
	names := []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
	days := []string{}
	for i := 1; i < len(ex) && i <= 7; i++ {
		if ex[i] {
			days = append(days, names[i-1])
		}
	}
	if len(days) == 7 {
		return nil, errors.New("it excludes every day of the week, which chime refuses (Quartz never fires such a trigger)")
	}
	return map[string]any{"days": days}, nil
}

// dailyDef: the range's hour, minute, second and millisecond fields.
// chime's range is in whole seconds: a start with milliseconds begins at
// the next second and an end with milliseconds stops at its second, so
// that every whole second is excluded as Quartz excludes it.
func dailyDef(o *javaser.Object, c *QuartzCalendar) (any, error) {
	var f [8]int32
	for i, name := range []string{"rangeStartingHourOfDay", "rangeStartingMinute", "rangeStartingSecond", "rangeStartingMillis",
		"rangeEndingHourOfDay", "rangeEndingMinute", "rangeEndingSecond", "rangeEndingMillis"} {
		v, err := javaser.FieldAs[int32](o, name)
		if err != nil {
			return nil, err
		}
		f[i] = v
	}
	invert, err := javaser.FieldAs[bool](o, "invertTimeRange")
	if err != nil {
		return nil, err
	}
	for i, max := range []int32{23, 59, 59, 999, 23, 59, 59, 999} {
		if f[i] < 0 || f[i] > max {
			return nil, fmt.Errorf("time range field %d is %d, outside 0-%d", i, f[i], max)
		}
	}
	from := int(f[0])*3600 + int(f[1])*60 + int(f[2])
	to := int(f[4])*3600 + int(f[5])*60 + int(f[6])
	if f[3] > 0 {
		from++
	}
	if f[3] > 0 || f[7] > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("time range %02d:%02d:%02d.%03d-%02d:%02d:%02d.%03d has milliseconds; chime's is in whole seconds, %s-%s",
			f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], clock(from), clock(to)))
	}
	if from >= to || from >= 24*3600 {
		return nil, fmt.Errorf("time range %02d:%02d:%02d.%03d-%02d:%02d:%02d.%03d holds no whole second, which chime cannot express",
			f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7])
	}
	if !invert {
		c.Notes = append(c.Notes, "Quartz's DailyCalendar also excludes the first and last millisecond of every day (00:00:00.000 and 23:59:59.999), so a trigger at midnight never fired; chime's daily calendar does not exclude them")
	}
	return map[string]any{"from": clock(from), "to": clock(to), "invert": invert}, nil
}

func clock(sec int) string {
	return fmt.Sprintf("%02d:%02d:%02d", sec/3600, sec/60%60, sec%60)
}

// cronDef: a CronExpression; its own time zone is the calendar's (Quartz's
// CronCalendar ignores BaseCalendar's).
func cronDef(o *javaser.Object, c *QuartzCalendar) (any, error) {
	v, err := javaser.FieldAs[*javaser.Object](o, "cronExpression")
	if err != nil {
		return nil, err
	}
	if v == nil || v.ClassName() != "org.quartz.CronExpression" {
		return nil, fmt.Errorf("cronExpression is a %s", describe(v))
	}
	expr, err := javaser.FieldAs[string](v, "cronExpression")
	if err != nil {
		return nil, err
	}
	zone, err := javaser.FieldAs[any](v, "timeZone")
	if err != nil {
		return nil, err
	}
	if c.Timezone, _, err = zoneOf(zone); err != nil {
		return nil, err
	}
	return map[string]any{"expression": expr}, nil
}

// javaShortIDs are the old three-letter zone IDs Java still accepts
// (java.time.ZoneId.SHORT_IDS), which are no IANA names.
var javaShortIDs = map[string]string{
	"ACT": "Australia/Darwin", "AET": "Australia/Sydney", "AGT": "America/Argentina/Buenos_Aires",
	"ART": "Africa/Cairo", "AST": "America/Anchorage", "BET": "America/Sao_Paulo", "BST": "Asia/Dhaka",
	"CAT": "Africa/Harare", "CNT": "America/St_Johns", "CST": "America/Chicago", "CTT": "Asia/Shanghai",
	"EAT": "Africa/Addis_Ababa", "ECT": "Europe/Paris", "IET": "America/Indiana/Indianapolis",
	"IST": "Asia/Kolkata", "JST": "Asia/Tokyo", "MIT": "Pacific/Apia", "NET": "Asia/Yerevan",
	"NST": "Pacific/Auckland", "PLT": "Asia/Karachi", "PNT": "America/Phoenix", "PRT": "America/Puerto_Rico",
	"PST": "America/Los_Angeles", "SST": "Pacific/Guadalcanal", "VST": "Asia/Ho_Chi_Minh",
	"EST": "Etc/GMT+5", "MST": "Etc/GMT+7", "HST": "Etc/GMT+10",
}

var customZone = regexp.MustCompile(`^GMT([+-])(\d\d):(\d\d)$`)

// zoneOf is the IANA name and location of a serialized java.util.TimeZone
// (sun.util.calendar.ZoneInfo or SimpleTimeZone: both keep the ID);
// "" and nil for null.
func zoneOf(v any) (string, *time.Location, error) {
	if v == nil {
		return "", nil, nil
	}
	o, ok := v.(*javaser.Object)
	if !ok || !o.InstanceOf("java.util.TimeZone") {
		return "", nil, fmt.Errorf("a %s where a java.util.TimeZone was expected", describe(v))
	}
	id, err := javaser.FieldAs[string](o, "ID")
	if err != nil {
		return "", nil, err
	}
	name := id
	if n, ok := javaShortIDs[id]; ok {
		name = n
	} else if m := customZone.FindStringSubmatch(id); m != nil {
		// Java's custom zones; IANA has whole hours only, with the sign
		// the other way round.
		if m[3] != "00" {
			return "", nil, fmt.Errorf("time zone %s has no IANA name", id)
		}
		h, _ := strconv.Atoi(m[2])
		sign := "-"
		if m[1] == "-" {
			sign = "+"
		}
		name = "Etc/GMT" + sign + strconv.Itoa(h)
		if h == 0 {
			name = "UTC"
		}
	}
	if name == "" || name == "Local" {
		return "", nil, fmt.Errorf("time zone %q is unknown", id)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return "", nil, fmt.Errorf("time zone %q is unknown", id)
	}
	return name, loc, nil
}

// javaDate is a java.util.Date's milliseconds since the epoch
// (Date.writeObject writes them as a long).
func javaDate(v any) (int64, error) {
	o, ok := v.(*javaser.Object)
	if !ok || !o.InstanceOf("java.util.Date") {
		return 0, fmt.Errorf("a %s where a java.util.Date was expected", describe(v))
	}
	return o.Stream("java.util.Date").ReadInt64()
}

// DecodeJobDataMap reads QRTZ_JOB_DETAILS.JOB_DATA or QRTZ_TRIGGERS.JOB_DATA:
// a serialized org.quartz.JobDataMap (or any java.util.Map), or, when the
// store ran with org.quartz.jobStore.useProperties=true, the map's
// java.util.Properties text (its values are all strings then). Which one
// is told by the serialization magic, as the two cannot be confused. An
// empty or NULL blob is an empty map.
//
// Values become: strings as they are; Integer, Long, Short and Byte
// int64; Double and Float float64; Boolean bool; Character a string;
// BigInteger and BigDecimal json.Number (exact); java.util.Date and the
// java.sql dates a UTC time.Time; an enum constant its name; a UUID its text; lists, sets and
// arrays []any (byte[] stays []byte); maps map[string]any. Any other class
// is an error naming it: the importer cannot know what the job made of it.
//
// What a conversion builds is bounded by jobDataBudget: a blob that says
// more (shared references repeat what they point at, so a few kilobytes
// can name gigabytes) is an error, as is a value that contains itself.
func DecodeJobDataMap(blob []byte) (map[string]any, error) {
	if len(blob) >= 2 && blob[0] == 0xAC && blob[1] == 0xED {
		v, err := javaser.Decode(blob)
		if err != nil {
			return nil, fmt.Errorf("quartz job data: %w", err)
		}
		cv := &converter{limit: jobDataBudget(len(blob)), blob: len(blob)}
		m, err := cv.toMap(v)
		if err != nil {
			return nil, fmt.Errorf("quartz job data: %w", err)
		}
		return m, nil
	}
	props, err := parseProperties(blob)
	if err != nil {
		return nil, fmt.Errorf("quartz job data (properties): %w", err)
	}
	m := make(map[string]any, len(props))
	for k, v := range props {
		m[k] = v
	}
	return m, nil
}

// A conversion's budget is counted in bytes of an estimate of what it
// builds: every value (scalar, container or map entry) costs valueCost,
// which covers the longest scalar's JSON text (a time) and a Go interface
// holding it; a string, key, byte array or big number costs its length on
// top. Shared references count each time they are converted, as they are
// copied each time; arrays count like lists.
//
// A blob may make budgetPerByte times its own length, at least minBudget
// and at most maxBudget. Real job data maps stay far below it: the densest
// a writer can be honestly is a boolean[] (one byte a value, 32 in the
// budget); chime's API takes no request body over 1 MiB anyway.
const (
	valueCost     = 32
	budgetPerByte = 64
	minBudget     = 1 << 20
	maxBudget     = 16 << 20
	// maxNesting bounds nested lists, arrays and maps, which
	// back-references can chain deeper than the stream itself nests.
	maxNesting = 64
)

// jobDataBudget is what converting a blob of n bytes may build.
func jobDataBudget(n int) int {
	return min(max(budgetPerByte*n, minBudget), maxBudget)
}

type converter struct {
	limit int // bytes, jobDataBudget of the blob
	used  int
	blob  int // the blob's length, for the budget's error
	// open are the containers being converted (an *Object, or an array's
	// first element), to refuse cycles and bound nesting.
	open []any
	// path is where the conversion is, from the map's root, rendered
	// only for an error.
	path []step
}

// step is one step of a path: a map's key, a list's index, or (index
// keyStep) a map's non-string key being converted.
type step struct {
	key   string
	index int
}

const (
	entryStep = -1
	keyStep   = -2
)

// charge counts n bytes against the budget.
func (cv *converter) charge(n int) error {
	cv.used += n
	if cv.used > cv.limit {
		return cv.errf("the values converted exceed %d bytes, the budget of a blob of %d bytes (%d times its size, at least %d MiB, at most %d MiB; a value referred to many times counts each time)",
			cv.limit, cv.blob, budgetPerByte, minBudget>>20, maxBudget>>20)
	}
	return nil
}

// afford checks, before a container's slots are allocated, that n more
// bytes fit the budget; its elements charge them as they are converted.
func (cv *converter) afford(n int) error {
	if err := cv.charge(n); err != nil {
		return err
	}
	cv.used -= n
	return nil
}

// errf is an error at the current path.
func (cv *converter) errf(format string, args ...any) error {
	if len(cv.path) == 0 {
		return fmt.Errorf(format, args...)
	}
	return fmt.Errorf("key %s: "+format, append([]any{cv.where()}, args...)...)
}

// where renders the path for an error: long keys cut, and a deep path's
// middle left out, so that an error stays a line.
func (cv *converter) where() string {
	var b strings.Builder
	for i, s := range cv.path {
		if len(cv.path) > 12 && i == 4 {
			fmt.Fprintf(&b, "…(%d more)…", len(cv.path)-12)
		}
		if len(cv.path) > 12 && i >= 4 && i < len(cv.path)-8 {
			continue
		}
		switch s.index {
		case entryStep:
			if i > 0 {
				b.WriteByte('.')
			}
			k := s.key
			if len(k) > 40 {
				k = strings.ToValidUTF8(k[:40], "") + "…"
			}
			b.WriteString(strconv.Quote(k))
		case keyStep:
			b.WriteString("[key]")
		default:
			fmt.Fprintf(&b, "[%d]", s.index)
		}
	}
	return b.String()
}

// enter opens a container: id is its *Object, or its first element's
// address for an array (an empty one holds nothing, itself included).
func (cv *converter) enter(id any, what string) error {
	if id != nil && slices.Contains(cv.open, id) {
		return cv.errf("%s that contains itself", what)
	}
	if len(cv.open) >= maxNesting {
		return cv.errf("nested deeper than %d", maxNesting)
	}
	cv.open = append(cv.open, id)
	return nil
}

func (cv *converter) leave() { cv.open = cv.open[:len(cv.open)-1] }

// at converts v as the element s of the current container.
func (cv *converter) at(s step, v any) (any, error) {
	cv.path = append(cv.path, s)
	defer func() { cv.path = cv.path[:len(cv.path)-1] }()
	return cv.value(v)
}

func (cv *converter) toMap(v any) (map[string]any, error) {
	o, _ := v.(*javaser.Object)
	pairs, err := javaMap(v)
	if err != nil {
		return nil, cv.errf("%w", err)
	}
	var id any
	if o != nil {
		id = o
	}
	if err := cv.enter(id, "a "+describe(v)); err != nil {
		return nil, err
	}
	defer cv.leave()
	if err := cv.afford(len(pairs) * valueCost); err != nil {
		return nil, err
	}
	m := make(map[string]any, len(pairs))
	for _, p := range pairs {
		var k string
		switch key := p[0].(type) {
		case string:
			k = key
		default:
			kv, err := cv.at(step{index: keyStep}, key)
			if err != nil {
				return nil, err
			}
			switch kv := kv.(type) {
			case string:
				k = kv
			case int64, bool, json.Number:
				k = fmt.Sprint(kv)
			default:
				return nil, cv.errf("a map key is a %s", describe(key))
			}
		}
		if err := cv.charge(valueCost + len(k)); err != nil {
			return nil, err
		}
		val, err := cv.at(step{key: k, index: entryStep}, p[1])
		if err != nil {
			return nil, err
		}
		m[k] = val
	}
	return m, nil
}

func (cv *converter) value(v any) (any, error) {
	if err := cv.charge(valueCost); err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		return v, cv.charge(len(v))
	case *javaser.Enum:
		return v.Name, cv.charge(len(v.Name))
	case []int8:
		if err := cv.charge(base64.StdEncoding.EncodedLen(len(v))); err != nil {
			return nil, err
		}
		b := make([]byte, len(v))
		for i, x := range v {
			b[i] = byte(x)
		}
		return b, nil
	case []uint16:
		if err := cv.charge(3 * len(v)); err != nil { // UTF-8's most per UTF-16 unit
			return nil, err
		}
		return string(utf16.Decode(v)), nil
	case []bool:
		return toAny(cv, v, func(x bool) any { return x })
	case []int16:
		return toAny(cv, v, func(x int16) any { return int64(x) })
	case []int32:
		return toAny(cv, v, func(x int32) any { return int64(x) })
	case []int64:
		return toAny(cv, v, func(x int64) any { return x })
	case []float32:
		return cv.floats(len(v), func(i int) float64 { return float32To64(v[i]) })
	case []float64:
		return cv.floats(len(v), func(i int) float64 { return v[i] })
	case []any:
		return cv.list(v, nil)
	case *javaser.Object:
		return cv.object(v)
	}
	return nil, cv.errf("a %s, which chime cannot read", describe(v))
}

// toAny converts a primitive array, charged before it is allocated.
func toAny[T any](cv *converter, s []T, f func(T) any) (any, error) {
	if err := cv.charge(len(s) * valueCost); err != nil {
		return nil, err
	}
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = f(x)
	}
	return out, nil
}

func (cv *converter) floats(n int, at func(int) float64) (any, error) {
	if err := cv.charge(n * valueCost); err != nil {
		return nil, err
	}
	out := make([]any, n)
	for i := range out {
		f := at(i)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, cv.errf("%v is no JSON number", f)
		}
		out[i] = f
	}
	return out, nil
}

// float32To64 keeps a float's shortest decimal form: 1.1f is 1.1, not
// 1.100000023841858.
func float32To64(f float32) float64 {
	g, _ := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64)
	return g
}

// list converts the elements of o (a collection), or of an array when o
// is nil.
func (cv *converter) list(items []any, o *javaser.Object) ([]any, error) {
	var id any
	what := "an array"
	switch {
	case o != nil:
		id, what = o, "a "+o.ClassName()
	case len(items) > 0:
		id = &items[0]
	}
	if err := cv.enter(id, what); err != nil {
		return nil, err
	}
	defer cv.leave()
	if err := cv.afford(len(items) * valueCost); err != nil {
		return nil, err
	}
	out := make([]any, len(items))
	for i, it := range items {
		var err error
		if out[i], err = cv.at(step{index: i}, it); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (cv *converter) object(o *javaser.Object) (any, error) {
	name := o.ClassName()
	switch name {
	case "java.lang.Integer", "java.lang.Long", "java.lang.Short", "java.lang.Byte":
		v, _ := o.Field("value")
		switch n := v.(type) {
		case int32:
			return int64(n), nil
		case int64:
			return n, nil
		case int16:
			return int64(n), nil
		case int8:
			return int64(n), nil
		}
		return nil, cv.errf("%s without its value", name)
	case "java.lang.Double", "java.lang.Float":
		v, _ := o.Field("value")
		var f float64
		switch n := v.(type) {
		case float64:
			f = n
		case float32:
			f = float32To64(n)
		default:
			return nil, cv.errf("%s without its value", name)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, cv.errf("%v is no JSON number", f)
		}
		return f, nil
	case "java.lang.Boolean":
		return fieldOr[bool](cv, o, "value")
	case "java.lang.Character":
		c, err := javaser.FieldAs[uint16](o, "value")
		if err != nil {
			return nil, cv.errf("%w", err)
		}
		return string(utf16.Decode([]uint16{c})), nil
	case "java.math.BigInteger":
		if err := cv.charge(bigDigits(o)); err != nil {
			return nil, err
		}
		b, err := bigInt(o)
		if err != nil {
			return nil, cv.errf("%w", err)
		}
		return json.Number(b.String()), nil
	case "java.math.BigDecimal":
		if err := cv.charge(bigDigits(o)); err != nil {
			return nil, err
		}
		n, err := bigDecimal(o)
		if err != nil {
			return nil, cv.errf("%w", err)
		}
		return n, nil
	case "java.util.UUID":
		hi, err1 := javaser.FieldAs[int64](o, "mostSigBits")
		lo, err2 := javaser.FieldAs[int64](o, "leastSigBits")
		if err := errors.Join(err1, err2); err != nil {
			return nil, cv.errf("%w", err)
		}
		h := fmt.Sprintf("%016x%016x", uint64(hi), uint64(lo))
		return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
	case "java.util.Date", "java.sql.Date", "java.sql.Time":
		ms, err := javaDate(o)
		if err != nil {
			return nil, cv.errf("%w", err)
		}
		return time.UnixMilli(ms).UTC(), nil
	case "java.sql.Timestamp":
		// Whole seconds in the Date, the fraction in nanos.
		ms, err := javaDate(o)
		if err != nil {
			return nil, cv.errf("%w", err)
		}
		nanos, err := javaser.FieldAs[int32](o, "nanos")
		if err != nil {
			return nil, cv.errf("%w", err)
		}
		if nanos < 0 || nanos > 999_999_999 {
			return nil, cv.errf("java.sql.Timestamp with %d nanoseconds", nanos)
		}
		sec := ms / 1000
		if ms%1000 < 0 {
			sec--
		}
		return time.Unix(sec, int64(nanos)).UTC(), nil
	}
	if isMap(o) {
		return cv.toMap(o)
	}
	if isList(o) {
		items, err := javaList(o)
		if err != nil {
			return nil, cv.errf("%w", err)
		}
		return cv.list(items, o)
	}
	return nil, cv.errf("a %s, which chime cannot read (it reads strings, numbers, booleans, characters, dates, enums, UUIDs, and lists, sets, maps and arrays of them)", name)
}

// bigDigits bounds the text of a BigInteger or BigDecimal, charged
// before it is computed: about 2.41 digits a byte of magnitude, a
// BigDecimal's up to 1000 zeros of scale, sign, point and exponent.
func bigDigits(o *javaser.Object) int {
	n := 16
	if scale, err := javaser.FieldAs[int32](o, "scale"); err == nil {
		n += int(min(max(scale, 0), 1000))
	}
	if iv, err := javaser.FieldAs[*javaser.Object](o, "intVal"); err == nil && iv != nil {
		o = iv
	}
	if mag, err := javaser.FieldAs[[]int8](o, "magnitude"); err == nil {
		n += len(mag) * 5 / 2
	}
	return n
}

func fieldOr[T any](cv *converter, o *javaser.Object, field string) (any, error) {
	v, err := javaser.FieldAs[T](o, field)
	if err != nil {
		return nil, cv.errf("%w", err)
	}
	return v, nil
}

// maxBigMagnitude bounds a BigInteger's (or a BigDecimal's unscaled
// value's) bytes, about 39,000 digits: their decimal text costs
// superlinear time (a megabyte's takes seconds).
const maxBigMagnitude = 16 << 10

func bigInt(o *javaser.Object) (*big.Int, error) {
	sig, err1 := javaser.FieldAs[int32](o, "signum")
	mag, err2 := javaser.FieldAs[[]int8](o, "magnitude")
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	if len(mag) > maxBigMagnitude {
		return nil, fmt.Errorf("a number of %d bytes, more than the %d chime reads", len(mag), maxBigMagnitude)
	}
	b := make([]byte, len(mag))
	for i, x := range mag {
		b[i] = byte(x)
	}
	n := new(big.Int).SetBytes(b)
	if sig < 0 {
		n.Neg(n)
	}
	return n, nil
}

func bigDecimal(o *javaser.Object) (json.Number, error) {
	iv, err := javaser.FieldAs[*javaser.Object](o, "intVal")
	if err != nil {
		return "", err
	}
	scale, err := javaser.FieldAs[int32](o, "scale")
	if err != nil {
		return "", err
	}
	if iv == nil || iv.ClassName() != "java.math.BigInteger" {
		return "", fmt.Errorf("BigDecimal whose intVal is a %s", describe(iv))
	}
	n, err := bigInt(iv)
	if err != nil {
		return "", err
	}
	digits := new(big.Int).Abs(n).String()
	sign := ""
	if n.Sign() < 0 {
		sign = "-"
	}
	switch {
	case scale == 0:
		return json.Number(sign + digits), nil
	case scale < 0:
		return json.Number(fmt.Sprintf("%s%se%d", sign, digits, -int64(scale))), nil
	case int(scale) < len(digits):
		return json.Number(sign + digits[:len(digits)-int(scale)] + "." + digits[len(digits)-int(scale):]), nil
	case scale <= 1000:
		return json.Number(sign + "0." + strings.Repeat("0", int(scale)-len(digits)) + digits), nil
	}
	return json.Number(fmt.Sprintf("%s%se-%d", sign, digits, scale)), nil
}

// The java.util collections a job data map holds, by how their
// writeObject lays the elements out.
var (
	mapClasses = map[string]bool{
		"java.util.HashMap": true, "java.util.LinkedHashMap": true, "java.util.Hashtable": true,
		"java.util.Properties": true, "java.util.TreeMap": true, "java.util.concurrent.ConcurrentHashMap": true,
		"org.quartz.utils.DirtyFlagMap": true, "org.quartz.utils.StringKeyDirtyFlagMap": true,
		"org.quartz.JobDataMap": true, "java.util.Collections$UnmodifiableMap": true,
		"java.util.Collections$SynchronizedMap": true, "java.util.Collections$EmptyMap": true,
		"java.util.Collections$SingletonMap": true,
	}
	listClasses = map[string]bool{
		"java.util.ArrayList": true, "java.util.LinkedList": true, "java.util.Vector": true,
		"java.util.HashSet": true, "java.util.LinkedHashSet": true, "java.util.TreeSet": true,
		"java.util.Arrays$ArrayList": true, "java.util.Collections$EmptyList": true,
		"java.util.Collections$EmptySet": true, "java.util.Collections$SingletonList": true,
		"java.util.Collections$SingletonSet": true, "java.util.Collections$UnmodifiableCollection": true,
		"java.util.Collections$UnmodifiableList": true, "java.util.Collections$UnmodifiableRandomAccessList": true,
		"java.util.Collections$UnmodifiableSet": true, "java.util.Collections$SynchronizedCollection": true,
		"java.util.Collections$SynchronizedList": true, "java.util.Collections$SynchronizedRandomAccessList": true,
		"java.util.Collections$SynchronizedSet": true,
	}
)

func isMap(o *javaser.Object) bool {
	if mapClasses[o.ClassName()] || o.InstanceOf("org.quartz.utils.DirtyFlagMap") {
		return true
	}
	return o.ClassName() == "java.util.CollSer" && collSerTag(o) == 3
}

func isList(o *javaser.Object) bool {
	if listClasses[o.ClassName()] {
		return true
	}
	return o.ClassName() == "java.util.CollSer" && (collSerTag(o) == 1 || collSerTag(o) == 2)
}

// collSerTag is what java.util.ImmutableCollections' serial proxy holds
// (List.of, Set.of, Map.of): 1 list, 2 set, 3 map; the low byte only, the
// rest are flags.
func collSerTag(o *javaser.Object) int32 {
	t, _ := javaser.FieldAs[int32](o, "tag")
	return t & 0xff
}

// javaList is the elements of a serialized list, set or array.
func javaList(v any) ([]any, error) {
	return javaListDepth(v, 0)
}

func javaListDepth(v any, depth int) ([]any, error) {
	if a, ok := v.([]any); ok {
		return a, nil
	}
	o, ok := v.(*javaser.Object)
	if !ok {
		return nil, fmt.Errorf("a %s where a collection was expected", describe(v))
	}
	name := o.ClassName()
	switch name {
	case "java.util.ArrayList":
		n, err := javaser.FieldAs[int32](o, "size")
		if err != nil {
			return nil, err
		}
		s := o.Stream(name)
		if _, err := s.ReadInt32(); err != nil { // capacity
			return nil, err
		}
		return readObjects(s, n)
	case "java.util.LinkedList":
		s := o.Stream(name)
		n, err := s.ReadInt32()
		if err != nil {
			return nil, err
		}
		return readObjects(s, n)
	case "java.util.HashSet", "java.util.LinkedHashSet":
		s := o.Stream("java.util.HashSet")
		_, err1 := s.ReadInt32()   // capacity
		_, err2 := s.ReadFloat32() // load factor
		n, err3 := s.ReadInt32()
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, err
		}
		return readObjects(s, n)
	case "java.util.TreeSet":
		s := o.Stream(name)
		if _, err := s.ReadObject(); err != nil { // comparator
			return nil, err
		}
		n, err := s.ReadInt32()
		if err != nil {
			return nil, err
		}
		return readObjects(s, n)
	case "java.util.Vector":
		data, err := javaser.FieldAs[[]any](o, "elementData")
		if err != nil {
			return nil, err
		}
		n, err := javaser.FieldAs[int32](o, "elementCount")
		if err != nil {
			return nil, err
		}
		if n < 0 || int(n) > len(data) {
			return nil, fmt.Errorf("java.util.Vector of %d elements holds %d", n, len(data))
		}
		return data[:n], nil
	case "java.util.Arrays$ArrayList":
		return javaser.FieldAs[[]any](o, "a")
	case "java.util.Collections$EmptyList", "java.util.Collections$EmptySet":
		return []any{}, nil
	case "java.util.Collections$SingletonList", "java.util.Collections$SingletonSet":
		e, err := javaser.FieldAs[any](o, "element")
		return []any{e}, err
	case "java.util.CollSer":
		s := o.Stream(name)
		n, err := s.ReadInt32()
		if err != nil {
			return nil, err
		}
		return readObjects(s, n)
	}
	if listClasses[name] { // the Collections wrappers: the wrapped collection
		inner, err := javaser.FieldAs[any](o, "c")
		if err != nil {
			return nil, err
		}
		if depth >= 8 {
			return nil, fmt.Errorf("%s wraps collections more than 8 deep", name)
		}
		return javaListDepth(inner, depth+1)
	}
	return nil, fmt.Errorf("a %s, which is no collection chime reads", name)
}

func readObjects(s *javaser.Stream, n int32) ([]any, error) {
	if n < 0 {
		return nil, fmt.Errorf("collection of negative size %d", n)
	}
	var out []any
	for range n {
		v, err := s.ReadObject()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// javaMap is the entries of a serialized map, in stream order.
func javaMap(v any) ([][2]any, error) {
	return javaMapDepth(v, 0)
}

func javaMapDepth(v any, depth int) ([][2]any, error) {
	o, ok := v.(*javaser.Object)
	if !ok {
		return nil, fmt.Errorf("a %s where a map was expected", describe(v))
	}
	if depth > 8 {
		return nil, fmt.Errorf("%s wraps maps more than 8 deep", o.ClassName())
	}
	name := o.ClassName()
	if o.InstanceOf("org.quartz.utils.DirtyFlagMap") {
		inner, err := javaser.FieldAs[any](o, "map")
		if err != nil {
			return nil, err
		}
		return javaMapDepth(inner, depth+1)
	}
	switch name {
	case "java.util.HashMap", "java.util.LinkedHashMap":
		s := o.Stream("java.util.HashMap")
		_, err1 := s.ReadInt32() // buckets
		n, err2 := s.ReadInt32()
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		return readPairs(s, n)
	case "java.util.Hashtable", "java.util.Properties":
		s := o.Stream("java.util.Hashtable")
		_, err1 := s.ReadInt32() // length
		n, err2 := s.ReadInt32()
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		return readPairs(s, n)
	case "java.util.TreeMap":
		s := o.Stream(name)
		n, err := s.ReadInt32()
		if err != nil {
			return nil, err
		}
		return readPairs(s, n)
	case "java.util.concurrent.ConcurrentHashMap":
		// Pairs up to a null key and value.
		s := o.Stream(name)
		var out [][2]any
		for {
			k, err := s.ReadObject()
			if err != nil {
				return nil, err
			}
			val, err := s.ReadObject()
			if err != nil {
				return nil, err
			}
			if k == nil && val == nil {
				return out, nil
			}
			out = append(out, [2]any{k, val})
		}
	case "java.util.Collections$UnmodifiableMap", "java.util.Collections$SynchronizedMap":
		inner, err := javaser.FieldAs[any](o, "m")
		if err != nil {
			return nil, err
		}
		return javaMapDepth(inner, depth+1)
	case "java.util.Collections$EmptyMap":
		return nil, nil
	case "java.util.Collections$SingletonMap":
		k, err1 := javaser.FieldAs[any](o, "k")
		val, err2 := javaser.FieldAs[any](o, "v")
		return [][2]any{{k, val}}, errors.Join(err1, err2)
	case "java.util.CollSer":
		if collSerTag(o) == 3 {
			s := o.Stream(name)
			n, err := s.ReadInt32()
			if err != nil {
				return nil, err
			}
			return readPairs(s, n/2)
		}
	}
	return nil, fmt.Errorf("a %s, which is no map chime reads", name)
}

func readPairs(s *javaser.Stream, n int32) ([][2]any, error) {
	if n < 0 {
		return nil, fmt.Errorf("map of negative size %d", n)
	}
	var out [][2]any
	for range n {
		k, err := s.ReadObject()
		if err != nil {
			return nil, err
		}
		v, err := s.ReadObject()
		if err != nil {
			return nil, err
		}
		out = append(out, [2]any{k, v})
	}
	return out, nil
}

// describe names a decoded value's type for errors.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case *javaser.Object:
		if v == nil {
			return "null"
		}
		return v.ClassName()
	case *javaser.Enum:
		return "constant of " + v.Class.Name
	case *javaser.Class:
		return "class " + v.Name
	case string:
		return "java.lang.String"
	}
	return fmt.Sprintf("%T", v)
}

// parseProperties reads what java.util.Properties.store wrote, as
// Properties.load(InputStream) reads it: ISO 8859-1 text, '#' and '!'
// comments, "key=value", "key:value" or "key value", backslash escapes
// (\uXXXX, \t, \n, \r, \f) and lines continued by a final backslash.
func parseProperties(b []byte) (map[string]string, error) {
	out := map[string]string{}
	lines := logicalLines(b)
	for _, line := range lines {
		i := 0
		var key []uint16
		for i < len(line) {
			c := line[i]
			if c == '\\' {
				i++
				r, n, err := unescape(line[i:])
				if err != nil {
					return nil, err
				}
				key = append(key, r...)
				i += n
				continue
			}
			if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
				break
			}
			key = append(key, uint16(c))
			i++
		}
		for i < len(line) && (line[i] == ' ' || line[i] == '\t' || line[i] == '\f') {
			i++
		}
		if i < len(line) && (line[i] == '=' || line[i] == ':') {
			i++
		}
		for i < len(line) && (line[i] == ' ' || line[i] == '\t' || line[i] == '\f') {
			i++
		}
		var val []uint16
		for i < len(line) {
			if line[i] == '\\' {
				i++
				r, n, err := unescape(line[i:])
				if err != nil {
					return nil, err
				}
				val = append(val, r...)
				i += n
				continue
			}
			val = append(val, uint16(line[i]))
			i++
		}
		out[string(utf16.Decode(key))] = string(utf16.Decode(val))
	}
	return out, nil
}

// logicalLines splits Properties text into its logical lines: leading
// white space dropped, comments and blank lines left out, continued lines
// joined. Each byte is one ISO 8859-1 character.
func logicalLines(b []byte) [][]byte {
	var out [][]byte
	var cur []byte
	continuing := false
	for len(b) > 0 {
		end := bytes.IndexAny(b, "\r\n")
		var line []byte
		if end < 0 {
			line, b = b, nil
		} else {
			line = b[:end]
			if b[end] == '\r' && end+1 < len(b) && b[end+1] == '\n' {
				end++
			}
			b = b[end+1:]
		}
		line = bytes.TrimLeft(line, " \t\f")
		if !continuing {
			if len(line) == 0 || line[0] == '#' || line[0] == '!' {
				continue
			}
		}
		// A line ends in a continuation when it ends in an odd number of
		// backslashes.
		n := 0
		for n < len(line) && line[len(line)-1-n] == '\\' {
			n++
		}
		if n%2 == 1 {
			cur = append(cur, line[:len(line)-1]...)
			continuing = true
			continue
		}
		cur = append(cur, line...)
		out = append(out, cur)
		cur, continuing = nil, false
	}
	if continuing {
		out = append(out, cur)
	}
	return out
}

// unescape reads the escape after a backslash: the UTF-16 units it stands
// for and the bytes it took.
func unescape(b []byte) ([]uint16, int, error) {
	if len(b) == 0 {
		return nil, 0, nil
	}
	switch b[0] {
	case 't':
		return []uint16{'\t'}, 1, nil
	case 'n':
		return []uint16{'\n'}, 1, nil
	case 'r':
		return []uint16{'\r'}, 1, nil
	case 'f':
		return []uint16{'\f'}, 1, nil
	case 'u':
		if len(b) < 5 {
			return nil, 0, errors.New(`malformed \uxxxx encoding`)
		}
		u, err := strconv.ParseUint(string(b[1:5]), 16, 16)
		if err != nil {
			return nil, 0, errors.New(`malformed \uxxxx encoding`)
		}
		return []uint16{uint16(u)}, 5, nil
	}
	return []uint16{uint16(b[0])}, 1, nil
}
