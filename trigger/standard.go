package trigger

import (
	"slices"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/chimesched/chime/models"
)

// cronTrigger is a standard-syntax cron expression read in loc, with the
// schedule's daylight-saving policy.
type cronTrigger struct {
	sched  cron.Schedule
	loc    *time.Location
	policy models.DSTPolicy
}

// dstMargin bounds how far one offset change moves wall time (two hours
// in today's zones; the 24-hour jumps across the date line are gaps,
// which keep fires in order). Near a change, fires are searched this far
// either side, since an overlap's second occurrences come after later
// wall times' first ones.
const dstMargin = 4 * time.Hour

// maxWallSteps bounds one Next's walk over wall-time matches: a
// per-second expression near a change takes 2*dstMargin of them.
const maxWallSteps = 100_000

func (c cronTrigger) Next(t time.Time) time.Time {
	if c.policy == models.DSTWall {
		// robfig/cron matches wall time: none in a gap, both in an overlap.
		n := c.sched.Next(t.In(c.loc))
		if n.IsZero() {
			return n
		}
		return n.UTC()
	}
	// Walk the expression's wall times, free of any zone (wall-clock
	// values in UTC), and map each to the instants it names.
	w := floating(t.In(c.loc))
	if c.nearChange(t) {
		w = w.Add(-dstMargin)
	}
	var best time.Time
	for range maxWallSteps {
		w = c.sched.Next(w)
		if w.IsZero() {
			break
		}
		if !best.IsZero() && (!c.nearChange(best) || w.After(floating(best.In(c.loc)).Add(dstMargin))) {
			break
		}
		for _, i := range c.instants(w) {
			if i.After(t) && (best.IsZero() || i.Before(best)) {
				best = i
			}
		}
	}
	return best
}

// nearChange reports whether the zone's offset changes within dstMargin of t.
func (c cronTrigger) nearChange(t time.Time) bool {
	_, a := t.Add(-dstMargin).In(c.loc).Zone()
	_, b := t.Add(dstMargin).In(c.loc).Zone()
	return a != b
}

// instants are the UTC instants the policy fires wall time w at.
func (c cronTrigger) instants(w time.Time) []time.Time {
	var out []time.Time
	// An instant of w is w minus the offset then, and offsets in effect
	// within a day of w are those at its ends (one change at most).
	for _, probe := range []time.Duration{-14 * time.Hour, 0, 14 * time.Hour} {
		_, off := w.Add(probe).In(c.loc).Zone()
		i := w.Add(-time.Duration(off) * time.Second)
		if floating(i.In(c.loc)).Equal(w) && !slices.ContainsFunc(out, i.Equal) {
			out = append(out, i)
		}
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	switch {
	case len(out) == 0: // in a gap
		if c.policy == models.DSTSkip {
			return nil
		}
		if g := c.gapEnd(w); !g.IsZero() {
			return []time.Time{g}
		}
		return nil
	case len(out) > 1 && c.policy != models.DSTBoth: // in an overlap
		return out[:1]
	}
	return out
}

// gapEnd is the first instant after the gap that wall time w falls in: the
// change itself, found by bisection over whole seconds (zones change on
// whole seconds).
func (c cronTrigger) gapEnd(w time.Time) time.Time {
	_, before := w.Add(-14 * time.Hour).In(c.loc).Zone()
	_, after := w.Add(14 * time.Hour).In(c.loc).Zone()
	lo := w.Add(-time.Duration(after) * time.Second).Unix()  // still before the change
	hi := w.Add(-time.Duration(before) * time.Second).Unix() // already after it
	past := func(s int64) bool { return floating(time.Unix(s, 0).In(c.loc)).After(w) }
	if lo >= hi || past(lo) || !past(hi) {
		return time.Time{} // not a simple gap
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if past(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return time.Unix(hi, 0).UTC()
}

// floating is t's wall clock as a UTC time: wall times compare and step
// without any offset change.
func floating(t time.Time) time.Time {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return time.Date(y, mo, d, h, mi, s, t.Nanosecond(), time.UTC)
}
