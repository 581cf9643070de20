package trigger

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // schedules name IANA zones; a bare container may have no zoneinfo

	"github.com/robfig/cron/v3"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/quartzcron"
)

// Trigger yields the intended fire times of a schedule. Next returns the first
// fire strictly after t, or the zero time when there is none. It is a pure
// function of the schedules row, so every node computes the same times and
// the unique key on (schedule_id, scheduled_at) can catch a duplicate fire.
type Trigger interface {
	Next(t time.Time) time.Time
}

var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// New builds the trigger of s, or explains why s cannot be scheduled; the
// explanation becomes schedules.status_reason. cal is the calendar s names
// (schedules.calendar_id), nil when it names none; its excluded times are
// skipped. A calendar_id without cal is refused: the calendar is gone.
func New(s *models.Schedule, cal *models.Calendar) (Trigger, error) { return build(s, cal, nil) }

// build is New, sharing parsed parts through c when it is not nil.
func build(s *models.Schedule, cal *models.Calendar, c *Cache) (Trigger, error) {
	loc, err := checkRow(s, c)
	if err != nil {
		return nil, err
	}
	var inner Trigger
	var shared *cached // the cache's entry for s's cron expression, when it has one
	switch s.ScheduleType {
	case models.ScheduleCron:
		if c != nil {
			if shared, err = c.cron(s, loc); err != nil {
				return nil, err
			}
			inner = shared.inner
		} else if inner, err = cronOf(s, loc); err != nil {
			return nil, err
		}
	case models.ScheduleInterval:
		if s.IntervalSeconds == nil {
			return nil, errors.New("interval schedule needs interval_seconds > 0")
		}
		every, err := models.IntervalBound.Duration(int64(*s.IntervalSeconds))
		if err != nil {
			return nil, err
		}
		inner = intervalTrigger{anchor: anchor(s), every: every}
	case models.ScheduleOnce:
		if s.RunAt == nil {
			return nil, errors.New("once schedule without run_at")
		}
		inner = onceTrigger{at: s.RunAt.UTC()}
	default:
		return nil, fmt.Errorf("unknown schedule_type %q (want cron, interval or once)", s.ScheduleType)
	}
	if s.CalendarID != nil || cal != nil {
		if cal == nil {
			return nil, fmt.Errorf("calendar %d does not exist", *s.CalendarID)
		}
		if s.CalendarID != nil && cal.ID != 0 && cal.ID != *s.CalendarID {
			return nil, fmt.Errorf("calendar %d given for calendar_id %d", cal.ID, *s.CalendarID)
		}
		pc, err := c.calendar(cal)
		if err != nil {
			return nil, fmt.Errorf("calendar %q: %v", cal.Name, err)
		}
		inner = calendarTrigger{inner: inner, cal: pc}
	} else if shared != nil && s.StartAt == nil && s.EndAt == nil {
		// The common case: nothing of the row but the expression, so
		// the whole trigger is shared, not only its parsed expression.
		return shared.whole, nil
	}
	b := boundedTrigger{inner: inner}
	if s.StartAt != nil {
		b.start = s.StartAt.UTC()
	}
	if s.EndAt != nil {
		b.end = s.EndAt.UTC()
	}
	return b, nil
}

// checkRow checks the columns every schedule type shares and returns its
// time zone.
func checkRow(s *models.Schedule, c *Cache) (*time.Location, error) {
	tz := s.Timezone
	if tz == "" {
		tz = "UTC"
	}
	loc, err := c.location(tz)
	if err != nil {
		return nil, fmt.Errorf("unknown timezone %q", tz)
	}
	// Fires are computed from these.
	if err := models.CheckTimes(models.TimeColumn{Column: "schedules.start_at", T: s.StartAt}, models.TimeColumn{Column: "schedules.end_at", T: s.EndAt},
		models.TimeColumn{Column: "schedules.run_at", T: s.RunAt}, models.TimeColumn{Column: "schedules.created_at", T: &s.CreatedAt}); err != nil {
		return nil, err
	}
	if w := s.CatchupWindowSeconds; w != nil {
		if err := models.CatchupWindowBound.Check(int64(*w)); err != nil {
			return nil, err
		}
	}
	switch {
	case s.StartAt != nil && s.EndAt != nil && s.EndAt.Before(*s.StartAt):
		return nil, errors.New("end_at is before start_at")
	case s.MaxRuns != nil && *s.MaxRuns < 0:
		return nil, fmt.Errorf("max_runs must not be negative, got %d", *s.MaxRuns)
	case !slices.Contains([]models.MisfirePolicy{"", models.MisfireFireOnce, models.MisfireSkip, models.MisfireFireAll}, s.MisfirePolicy):
		return nil, fmt.Errorf("unknown misfire_policy %q (want fire_once, skip or fire_all)", s.MisfirePolicy)
	case !slices.Contains([]models.Concurrency{"", models.ConcurrencyAllow, models.ConcurrencyForbid}, s.Concurrency):
		return nil, fmt.Errorf("unknown concurrency %q (want allow or forbid)", s.Concurrency)
	case !slices.Contains([]models.CronSyntax{"", models.SyntaxStandard, models.SyntaxQuartz}, s.CronSyntax):
		return nil, fmt.Errorf("unknown cron_syntax %q (want standard or quartz)", s.CronSyntax)
	case !slices.Contains([]models.DSTPolicy{"", models.DSTOnce, models.DSTSkip, models.DSTBoth, models.DSTWall}, s.DSTPolicy):
		return nil, fmt.Errorf("unknown dst_policy %q (want once, skip, both or wall)", s.DSTPolicy)
	case s.CronSyntax == models.SyntaxQuartz && s.ScheduleType != models.ScheduleCron:
		return nil, fmt.Errorf("cron_syntax quartz applies to cron schedules only, not %s", s.ScheduleType)
	}
	return loc, nil
}

func cronOf(s *models.Schedule, loc *time.Location) (Trigger, error) {
	if s.CronExpr == nil || strings.TrimSpace(*s.CronExpr) == "" {
		return nil, errors.New("cron schedule without cron_expr")
	}
	expr := strings.TrimSpace(*s.CronExpr)
	if s.CronSyntax == models.SyntaxQuartz {
		// Quartz's own rules, daylight-saving changes included: dst_policy
		// does not apply.
		q, err := quartzcron.Parse(expr, loc)
		if err != nil {
			return nil, fmt.Errorf("bad cron_expr %q (Quartz syntax): %v", expr, err)
		}
		return quartzTrigger{q}, nil
	}
	if rest, ok := strings.CutPrefix(expr, "@every "); ok {
		// robfig's @every counts from whenever it is asked, which differs
		// per node; anchoring it like an interval makes it deterministic.
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil || d < time.Second {
			return nil, fmt.Errorf("bad cron_expr %q: @every needs a duration of at least 1s", expr)
		}
		return intervalTrigger{anchor: anchor(s), every: d}, nil
	}
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return nil, fmt.Errorf("bad cron_expr %q: set the timezone column instead of a TZ= prefix", expr)
	}
	sched, err := parseStandard(expr)
	if err != nil {
		return nil, fmt.Errorf("bad cron_expr %q: %w", expr, err)
	}
	policy := s.DSTPolicy
	if policy == "" {
		policy = models.DSTOnce
	}
	if wildcardHour(expr) {
		policy = models.DSTWall
	}
	return cronTrigger{sched: sched, loc: loc, policy: policy}, nil
}

// wildcardHour reports whether expr's hour field starts with * (hourly
// and finer, such as "0 * * * *" or "*/10 */2 * * *"): such a schedule fires
// on the real instants its wall times name, none in a gap and both in an
// overlap, as Vixie cron treats "wildcard" jobs. expr parsed already.
func wildcardHour(expr string) bool {
	if strings.HasPrefix(expr, "@") {
		return expr == "@hourly"
	}
	f := strings.Fields(expr)
	h := 1
	if len(f) == 6 {
		h = 2
	}
	return h < len(f) && strings.HasPrefix(f[h], "*")
}

type quartzTrigger struct{ e *quartzcron.Expression }

func (q quartzTrigger) Next(t time.Time) time.Time {
	n := q.e.Next(t)
	if n.IsZero() {
		return n
	}
	return n.UTC()
}

// anchor is where an interval's grid starts: start_at when given, else the
// row's created_at. Both come from the row, so all nodes agree on the grid.
func anchor(s *models.Schedule) time.Time {
	if s.StartAt != nil {
		return s.StartAt.UTC()
	}
	return s.CreatedAt.UTC()
}

type intervalTrigger struct {
	anchor time.Time
	every  time.Duration
}

func (i intervalTrigger) Next(t time.Time) time.Time {
	if t.Before(i.anchor) {
		return i.anchor
	}
	// t.Sub saturates past about 292 years, and (k+1)·every must not
	// overflow either: an anchor that far back takes the exact way.
	if d := t.Sub(i.anchor); d <= math.MaxInt64-i.every {
		k := d / i.every
		return i.anchor.Add((k + 1) * i.every)
	}
	return i.far(t)
}

// far is Next for a t too far from the anchor for time.Duration: the
// same grid step, counted in big integers of nanoseconds.
func (i intervalTrigger) far(t time.Time) time.Time {
	const nsPerSec = int64(time.Second)
	d := new(big.Int).Sub(big.NewInt(t.Unix()), big.NewInt(i.anchor.Unix()))
	d.Mul(d, big.NewInt(nsPerSec))
	d.Add(d, big.NewInt(int64(t.Nanosecond()-i.anchor.Nanosecond())))
	every := big.NewInt(int64(i.every))
	d.Quo(d, every) // k, d ≥ 0
	d.Add(d, big.NewInt(1))
	d.Mul(d, every) // (k+1)·every
	sec, ns := new(big.Int).QuoRem(d, big.NewInt(nsPerSec), new(big.Int))
	if !sec.IsInt64() || sec.Int64() > models.MaxTime.Unix()-i.anchor.Unix() {
		return time.Time{} // past MaxTime: boundedTrigger has no fire there
	}
	return time.Unix(i.anchor.Unix()+sec.Int64(), int64(i.anchor.Nanosecond())+ns.Int64()).UTC()
}

type onceTrigger struct{ at time.Time }

func (o onceTrigger) Next(t time.Time) time.Time {
	if t.Before(o.at) {
		return o.at
	}
	return time.Time{}
}

// boundedTrigger applies start_at and end_at, both inclusive.
type boundedTrigger struct {
	inner      Trigger
	start, end time.Time
}

func (b boundedTrigger) Next(t time.Time) time.Time {
	if !b.start.IsZero() && t.Before(b.start) {
		t = b.start.Add(-time.Nanosecond)
	}
	n := b.inner.Next(t)
	// A fire not after t would make the engine's walk stand still; none
	// lies past MaxTime, which no database column holds.
	if n.IsZero() || !n.After(t) || n.After(models.MaxTime) || (!b.end.IsZero() && n.After(b.end)) {
		return time.Time{}
	}
	return n
}
