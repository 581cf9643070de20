package trigger

import (
	"strings"
	"time"

	"github.com/chimesched/chime/models"
)

// Cache shares what New parses between the schedules that have it in
// common: the time zone, the cron expression read in it with its syntax
// and daylight-saving policy, and the calendar. A node restoring a
// million schedules of a few expressions then parses each expression
// once and holds one Trigger for all the schedules that share it (and
// have no start_at, end_at or calendar), instead of a million. Triggers
// are pure, so sharing one between schedules and goroutines is safe; the
// Cache itself is not safe for concurrent use.
//
// Entries not used between two calls of Rotate are dropped, so a Cache
// held for a node's life holds what its schedules use now, not everything
// they ever used.
type Cache struct {
	cur, prev       map[cronKey]*cached
	calCur, calPrev map[calKey]*calEntry
	locs            map[string]*time.Location // what time.LoadLocation returned; zones are few and never change
	next            map[nextKey]time.Time     // Next of a shared trigger, by the instant asked
}

// nextKey is one question asked of a shared trigger. Schedules of one
// expression mostly ask the same one: last fired at the same intended
// time, or created by one statement.
type nextKey struct {
	c *cached
	// The instant: Next depends on it only. Not UnixNano, which wraps
	// outside the years 1678 to 2262 and would answer one instant's
	// question with another's.
	sec  int64
	nsec int32
}

// maxNext bounds the Next memo; it starts over when full.
const maxNext = 1 << 16

// cronKey is everything cronOf reads of a row besides an @every's anchor,
// which is never cached.
type cronKey struct {
	expr   string
	syntax models.CronSyntax
	dst    models.DSTPolicy
	tz     string
}

type cached struct {
	inner Trigger // the parsed expression
	whole Trigger // inner with no bounds and no calendar, as New returns it
}

// calKey is every column ParseCalendar reads, and the id New checks.
type calKey struct {
	id             int64
	kind           models.CalendarKind
	definition, tz string
}

type calEntry struct {
	cal *Calendar
	err error
}

// NewCache returns an empty Cache.
func NewCache() *Cache {
	return &Cache{cur: map[cronKey]*cached{}, calCur: map[calKey]*calEntry{}, locs: map[string]*time.Location{}, next: map[nextKey]time.Time{}}
}

// Next is t.Next(after), remembered for the triggers this Cache shares
// whole between schedules: a restore asks a million schedules of one
// expression mostly the same few questions.
func (c *Cache) Next(t Trigger, after time.Time) time.Time {
	ct, ok := t.(cachedTrigger)
	if !ok {
		return t.Next(after)
	}
	k := nextKey{c: ct.c, sec: after.Unix(), nsec: int32(after.Nanosecond())}
	if n, ok := c.next[k]; ok {
		return n
	}
	n := t.Next(after)
	if len(c.next) >= maxNext {
		clear(c.next)
	}
	c.next[k] = n
	return n
}

// cachedTrigger is the whole trigger a Cache shares: it knows its entry,
// so Next's memo needs no comparison of trigger values.
type cachedTrigger struct {
	boundedTrigger
	c *cached
}

// New is the package's New, sharing parsed parts with the triggers this
// Cache built before.
func (c *Cache) New(s *models.Schedule, cal *models.Calendar) (Trigger, error) {
	return build(s, cal, c)
}

// Rotate starts a new generation: what was not used since the last Rotate
// is forgotten. The schedule engine calls it after each full read of the
// schedules.
func (c *Cache) Rotate() {
	c.prev, c.cur = c.cur, make(map[cronKey]*cached, len(c.cur))
	c.calPrev, c.calCur = c.calCur, make(map[calKey]*calEntry, len(c.calCur))
	clear(c.next)
}

// Len is the number of cron expressions held (for tests and metrics).
func (c *Cache) Len() int { return len(c.cur) + len(c.prev) }

func (c *Cache) location(tz string) (*time.Location, error) {
	if c == nil {
		return time.LoadLocation(tz)
	}
	if l, ok := c.locs[tz]; ok {
		return l, nil
	}
	l, err := time.LoadLocation(tz)
	if err == nil {
		c.locs[tz] = l
	}
	return l, err
}

// cron returns the shared trigger of s's cron expression; an @every
// expression, anchored at the row's own start_at or created_at, is built
// afresh each time.
func (c *Cache) cron(s *models.Schedule, loc *time.Location) (*cached, error) {
	var expr string
	if s.CronExpr != nil {
		expr = *s.CronExpr
	}
	if strings.HasPrefix(strings.TrimSpace(expr), "@every") {
		inner, err := cronOf(s, loc)
		if err != nil {
			return nil, err
		}
		return &cached{inner: inner, whole: boundedTrigger{inner: inner}}, nil // not cachedTrigger: not shared
	}
	k := cronKey{expr: expr, syntax: s.CronSyntax, dst: s.DSTPolicy, tz: loc.String()}
	if e, ok := c.cur[k]; ok {
		return e, nil
	}
	if e, ok := c.prev[k]; ok {
		c.cur[k] = e
		return e, nil
	}
	inner, err := cronOf(s, loc)
	if err != nil {
		return nil, err
	}
	e := &cached{inner: inner}
	e.whole = cachedTrigger{boundedTrigger: boundedTrigger{inner: inner}, c: e}
	c.cur[k] = e
	return e, nil
}

func (c *Cache) calendar(cal *models.Calendar) (*Calendar, error) {
	if c == nil {
		return ParseCalendar(cal)
	}
	k := calKey{id: cal.ID, kind: cal.Kind, definition: string(cal.Definition), tz: cal.Timezone}
	e, ok := c.calCur[k]
	if !ok {
		if e, ok = c.calPrev[k]; !ok {
			p, err := ParseCalendar(cal)
			e = &calEntry{cal: p, err: err}
		}
		c.calCur[k] = e
	}
	return e.cal, e.err
}
