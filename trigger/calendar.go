package trigger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/quartzcron"
)

// Calendar is a parsed calendars row: the times it excludes from the
// schedules that name it. Its days and wall times are read in its zone.
type Calendar struct {
	kind models.CalendarKind
	loc  *time.Location

	dates    map[[3]int]bool // holiday: year, month, day
	annual   map[[2]int]bool // annual: month, day
	monthly  [32]bool        // monthly: day of month
	weekly   [7]bool         // weekly: time.Weekday
	from, to time.Duration   // daily: since wall midnight, both inclusive
	invert   bool            // daily: exclude all but [from, to]
	cron     *quartzcron.Expression
}

// Limits on a definition, so a hostile row cannot make every fire slow.
const (
	maxCalendarEntries = 10_000
	maxCalendarJSON    = 256 << 10
)

// calendarDef is every kind's definition; each kind allows its own keys.
type calendarDef struct {
	Dates      []string        `json:"dates"`
	Days       json.RawMessage `json:"days"`
	From       string          `json:"from"`
	To         string          `json:"to"`
	Invert     bool            `json:"invert"`
	Expression string          `json:"expression"`
}

var calendarKeys = map[models.CalendarKind][]string{
	models.CalendarHoliday: {"dates"},
	models.CalendarAnnual:  {"days"},
	models.CalendarMonthly: {"days"},
	models.CalendarWeekly:  {"days"},
	models.CalendarDaily:   {"from", "to", "invert"},
	models.CalendarCron:    {"expression"},
}

// ParseCalendar checks a calendars row and parses its definition
// (docs/quartz.md lists the shape of each kind).
func ParseCalendar(c *models.Calendar) (*Calendar, error) {
	keys, ok := calendarKeys[c.Kind]
	if !ok {
		return nil, fmt.Errorf("unknown kind %q (want holiday, annual, monthly, weekly, daily or cron)", c.Kind)
	}
	tz := c.Timezone
	if tz == "" {
		tz = "UTC"
	}
	loc, err := time.LoadLocation(tz)
	if err != nil || tz == "Local" {
		return nil, fmt.Errorf("unknown timezone %q", tz)
	}
	if len(c.Definition) > maxCalendarJSON {
		return nil, fmt.Errorf("definition is longer than %d bytes", maxCalendarJSON)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(orEmpty(c.Definition), &raw); err != nil {
		return nil, fmt.Errorf("definition is not a JSON object: %v", err)
	}
	for k := range raw {
		if !contains(keys, k) {
			return nil, fmt.Errorf("definition of a %s calendar has no key %q (it has %s)", c.Kind, k, strings.Join(keys, ", "))
		}
	}
	var d calendarDef
	dec := json.NewDecoder(bytes.NewReader(orEmpty(c.Definition)))
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("definition: %v", err)
	}
	cal := &Calendar{kind: c.Kind, loc: loc}
	switch c.Kind {
	case models.CalendarHoliday:
		err = cal.parseHoliday(d.Dates)
	case models.CalendarAnnual:
		err = cal.parseAnnual(d.Days)
	case models.CalendarMonthly:
		err = cal.parseMonthly(d.Days)
	case models.CalendarWeekly:
		err = cal.parseWeekly(d.Days)
	case models.CalendarDaily:
		err = cal.parseDaily(d)
	case models.CalendarCron:
		if strings.TrimSpace(d.Expression) == "" {
			return nil, errors.New(`a cron calendar needs "expression", a Quartz cron expression whose times it excludes`)
		}
		if cal.cron, err = quartzcron.Parse(d.Expression, loc); err != nil {
			err = fmt.Errorf("expression %q: %v", d.Expression, err)
		}
	}
	if err != nil {
		return nil, err
	}
	return cal, nil
}

func orEmpty(j models.JSON) []byte {
	if len(j) == 0 {
		return []byte("{}")
	}
	return j
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func (c *Calendar) parseHoliday(dates []string) error {
	if len(dates) > maxCalendarEntries {
		return fmt.Errorf("more than %d dates", maxCalendarEntries)
	}
	c.dates = make(map[[3]int]bool, len(dates))
	for _, s := range dates {
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return fmt.Errorf("date %q is not YYYY-MM-DD", s)
		}
		c.dates[[3]int{d.Year(), int(d.Month()), d.Day()}] = true
	}
	return nil
}

func (c *Calendar) parseAnnual(raw json.RawMessage) error {
	var days []string
	if err := json.Unmarshal(orNull(raw), &days); err != nil {
		return errors.New(`"days" of an annual calendar is a list of "MM-DD"`)
	}
	if len(days) > maxCalendarEntries {
		return fmt.Errorf("more than %d days", maxCalendarEntries)
	}
	c.annual = make(map[[2]int]bool, len(days))
	for _, s := range days {
		d, err := time.Parse("01-02", s)
		if err != nil && s == "02-29" {
			d, err = time.Date(2000, 2, 29, 0, 0, 0, 0, time.UTC), nil
		}
		if err != nil {
			return fmt.Errorf("day %q is not MM-DD", s)
		}
		c.annual[[2]int{int(d.Month()), d.Day()}] = true
	}
	return nil
}

func (c *Calendar) parseMonthly(raw json.RawMessage) error {
	var days []int
	if err := json.Unmarshal(orNull(raw), &days); err != nil {
		return errors.New(`"days" of a monthly calendar is a list of days of the month, 1 to 31`)
	}
	n := 0
	for _, d := range days {
		if d < 1 || d > 31 {
			return fmt.Errorf("day %d is not between 1 and 31", d)
		}
		if !c.monthly[d] {
			n++
		}
		c.monthly[d] = true
	}
	if n == 31 {
		return errors.New("a monthly calendar cannot exclude every day") // Quartz refuses it too
	}
	return nil
}

var weekdays = map[string]time.Weekday{"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday}

func (c *Calendar) parseWeekly(raw json.RawMessage) error {
	var days []string
	if err := json.Unmarshal(orNull(raw), &days); err != nil {
		return errors.New(`"days" of a weekly calendar is a list of weekdays such as ["sat", "sun"]`)
	}
	n := 0
	for _, s := range days {
		d, ok := weekdays[strings.ToLower(s)]
		if !ok {
			return fmt.Errorf("day %q is not a weekday (sun, mon, tue, wed, thu, fri, sat)", s)
		}
		if !c.weekly[d] {
			n++
		}
		c.weekly[d] = true
	}
	if n == 7 {
		return errors.New("a weekly calendar cannot exclude every day") // Quartz refuses it too
	}
	return nil
}

func (c *Calendar) parseDaily(d calendarDef) error {
	var err error
	if c.from, err = clockOf(d.From); err != nil {
		return fmt.Errorf(`"from": %v`, err)
	}
	if c.to, err = clockOf(d.To); err != nil {
		return fmt.Errorf(`"to": %v`, err)
	}
	if c.from >= c.to {
		return fmt.Errorf(`"from" %s must be before "to" %s`, d.From, d.To)
	}
	c.invert = d.Invert
	return nil
}

func clockOf(s string) (time.Duration, error) {
	for _, layout := range []string{"15:04:05", "15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute + time.Duration(t.Second())*time.Second, nil
		}
	}
	return 0, fmt.Errorf("%q is not a wall time HH:MM or HH:MM:SS", s)
}

func orNull(raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return []byte("null")
	}
	return raw
}

// Excludes reports whether t falls in a time the calendar excludes.
func (c *Calendar) Excludes(t time.Time) bool {
	l := t.In(c.loc)
	y, m, d := l.Date()
	switch c.kind {
	case models.CalendarHoliday:
		return c.dates[[3]int{y, int(m), d}]
	case models.CalendarAnnual:
		return c.annual[[2]int{int(m), d}]
	case models.CalendarMonthly:
		return c.monthly[d]
	case models.CalendarWeekly:
		return c.weekly[l.Weekday()]
	case models.CalendarDaily:
		// The range's ends are instants of t's day, as Quartz's lenient
		// java.util.Calendar makes them: an end in a spring-forward gap
		// moves past the gap, and of a fall-back day's repeated hour only
		// the standard-time pass is in the range (Go's time.Date resolves
		// both cases as Java does).
		in := !l.Before(wallAt(y, m, d, c.from, c.loc)) && !l.After(wallAt(y, m, d, c.to, c.loc))
		return in != c.invert
	case models.CalendarCron:
		// Quartz's CronCalendar: excluded when the expression is satisfied
		// by t's second.
		s := t.Truncate(time.Second)
		return c.cron.Next(s.Add(-time.Second)).Equal(s)
	}
	return false
}

func sinceMidnight(l time.Time) time.Duration {
	h, m, s := l.Clock()
	return time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second + time.Duration(l.Nanosecond())
}

// Bounds on NextIncluded's walk: past them it returns where it got to,
// and the trigger looks again from there. A cron calendar is walked second
// by second, as Quartz's CronCalendar does, so its walk is kept short: the
// trigger's next fire after it skips the rest of a long excluded span.
const (
	maxDayWalk    = 3660
	maxSecondWalk = 60
)

// NextIncluded returns the first instant at or after t that the calendar
// does not exclude, or a later excluded instant where its bounded walk
// stopped.
func (c *Calendar) NextIncluded(t time.Time) time.Time {
	if !c.Excludes(t) {
		return t
	}
	l := t.In(c.loc)
	y, m, d := l.Date()
	switch c.kind {
	case models.CalendarDaily:
		if !c.invert {
			return atLeast(wallAt(y, m, d, c.to+time.Nanosecond, c.loc), t)
		}
		if sinceMidnight(l) < c.from {
			return atLeast(wallAt(y, m, d, c.from, c.loc), t)
		}
		return atLeast(wallAt(y, m, d+1, c.from, c.loc), t)
	case models.CalendarCron:
		s := t.Truncate(time.Second)
		for range maxSecondWalk {
			s = s.Add(time.Second)
			if !c.Excludes(s) {
				break
			}
		}
		return s
	}
	// Day-based kinds: the next day not excluded, from its midnight.
	next := t
	for i := 1; i <= maxDayWalk; i++ {
		next = atLeast(time.Date(y, m, d+i, 0, 0, 0, 0, c.loc), t)
		if !c.Excludes(next) {
			break
		}
	}
	return next
}

// wallAt is the instant of wall time since-midnight on day y-m-d in loc.
func wallAt(y int, m time.Month, d int, since time.Duration, loc *time.Location) time.Time {
	return time.Date(y, m, d, int(since/time.Hour), int(since%time.Hour/time.Minute), int(since%time.Minute/time.Second), int(since%time.Second), loc)
}

// atLeast keeps a walk moving forward where a daylight-saving change
// makes a wall time fall before t.
func atLeast(u, t time.Time) time.Time {
	if u.After(t) {
		return u
	}
	return t.Add(time.Nanosecond)
}

// WithCalendar returns trig skipping the fires cal excludes, as New does
// for a schedule that names cal.
func WithCalendar(trig Trigger, cal *Calendar) Trigger {
	return calendarTrigger{inner: trig, cal: cal}
}

// calendarTrigger skips the fires its calendar excludes.
type calendarTrigger struct {
	inner Trigger
	cal   *Calendar
}

// maxCalendarSkips bounds one Next: a calendar that excludes this many
// fires in a row (after each of NextIncluded's jumps) ends the schedule, as
// Quartz gives up on a trigger whose calendar leaves it no fire.
const maxCalendarSkips = 10_000

func (c calendarTrigger) Next(t time.Time) time.Time {
	for range maxCalendarSkips {
		n := c.inner.Next(t)
		if n.IsZero() || !c.cal.Excludes(n) {
			return n
		}
		t = n
		if u := c.cal.NextIncluded(n); u.After(n) {
			t = u.Add(-time.Nanosecond)
		}
	}
	return time.Time{}
}
