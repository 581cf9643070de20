package scheduleengine

import (
	"math"
	"time"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/trigger"
)

// maxWalk bounds how many missed occurrences one plan enumerates, so a
// per-second cron that missed a year costs milliseconds, not minutes.
const maxWalk = 100_000

// maxSteps bounds one plan's walk in all: maxWalk missed fires, the jump,
// and the on-time fires of the longest misfire threshold (a day, one per
// second) fit well within it.
const maxSteps = 3 * maxWalk

// planFire is one job row a plan wants written.
type planFire struct {
	at          time.Time
	catchUp     bool
	missedFires int
}

// planInput is a schedule's firing state as the tables hold it.
type planInput struct {
	trig      trigger.Trigger
	after     time.Time // last_fire_at, or just before the first possible fire
	fired     int64
	maxRuns   *int
	policy    models.MisfirePolicy
	window    *time.Duration
	threshold time.Duration
	// restoreUpTo: occurrences before this instant passed while no engine
	// drove the schedule (down, paused, leader changing): missed, however
	// young.
	restoreUpTo time.Time
	fireAll     int
	forbid      bool // concurrency = forbid: at most one job of the schedule at a time
	busy        bool // forbid, and a job of the schedule is not finished yet
}

// plan is what one schedule does at one instant.
type plan struct {
	fires     []planFire
	last      time.Time // intended time of the latest occurrence handled; zero if none
	next      time.Time // next fire; zero when the schedule is used up
	fired     int64
	remaining *int64
	misfired  int64 // occurrences that were late, whatever the policy did with them
	collapsed int   // missed fires folded into a fire_once catch-up, besides the one written
	dropped   int   // missed fires not written: skip, window, cap, max_runs
	blocked   int   // fires not written because concurrency = forbid
	done      bool  // nothing will ever fire again: mark the schedule completed
}

// computePlan decides the fires of one schedule due at now. An occurrence
// later than threshold is a misfire and follows the policy; one older than
// the catch-up window is dropped under every policy. It is pure, so a
// retried write recomputes the same rows.
func computePlan(in planInput, now time.Time) plan {
	p := plan{fired: in.fired}
	missed, missedCount, onTime := p.walk(in, now)
	if missedCount > 0 {
		switch in.policy {
		case models.MisfireSkip:
			p.dropped += missedCount
		case models.MisfireFireAll:
			p.dropped += missedCount - len(missed)
			for _, m := range missed {
				p.fires = append(p.fires, planFire{at: m, catchUp: true, missedFires: 1})
			}
		default: // fire_once
			p.collapsed = missedCount - 1
			p.fires = append(p.fires, planFire{at: missed[len(missed)-1], catchUp: true, missedFires: missedCount})
		}
	}
	for _, o := range onTime {
		p.fires = append(p.fires, planFire{at: o})
	}
	keep := 1
	if in.busy {
		keep = 0
	}
	if in.forbid && len(p.fires) > keep {
		// The latest fire is the one still wanted; older ones would only
		// queue up behind it.
		p.blocked = len(p.fires) - keep
		p.fires = p.fires[len(p.fires)-keep:]
	}
	if in.maxRuns != nil {
		// Keep the earliest: the runs a schedule is allowed are its first ones.
		left := max(int64(*in.maxRuns)-p.fired, 0)
		if int64(len(p.fires)) > left {
			p.dropped += len(p.fires) - int(left)
			p.fires = p.fires[:left]
		}
		rem := max(int64(*in.maxRuns)-p.fired-int64(len(p.fires)), 0)
		p.remaining, p.done = &rem, rem == 0
	}
	p.fired += int64(len(p.fires))
	if p.done || p.next.IsZero() {
		p.done, p.next = true, time.Time{}
	}
	return p
}

// walk enumerates the occurrences from in.after up to now: the latest
// in.fireAll missed ones (oldest first) with their count, and those on
// time. It sets p.last, p.next and the misfire counts.
func (p *plan) walk(in planInput, now time.Time) (missed []time.Time, missedCount int, onTime []time.Time) {
	cutoff := now.Add(-in.threshold)
	// An occurrence at the very instant the engine took over is its to
	// fire on time; only those strictly before it were missed.
	if restore := in.restoreUpTo.Add(-time.Nanosecond); restore.After(cutoff) {
		cutoff = earlier(restore, now)
	}
	t := in.trig.Next(in.after)
	if in.window != nil {
		// Occurrences before the window are dropped unseen; count them only
		// while that is cheap.
		floor := now.Add(-*in.window)
		for n := 0; !t.IsZero() && t.Before(floor); n++ {
			if n == maxWalk {
				t = in.trig.Next(floor.Add(-time.Nanosecond))
				break
			}
			p.misfired++
			p.dropped++
			p.last, t = t, in.trig.Next(t)
		}
	}
	for n := 0; !t.IsZero() && !t.After(now); n++ {
		if n == maxSteps {
			// The jump below lands on the last missed fire, so only a
			// trigger whose Next is not monotone gets here: stop, and
			// leave the rest (p.next is due) to the next turn.
			break
		}
		switch {
		case t.After(cutoff):
			onTime = append(onTime, t)
		case n == maxWalk:
			// Too many to walk: jump to the last missed occurrence.
			if latest := latestAtOrBefore(in.trig, t, cutoff); !latest.IsZero() {
				missed, t = append(missed[:0], latest), latest
			}
		default:
			missedCount++
			p.misfired++
			if missed = append(missed, t); len(missed) > max(in.fireAll, 1) {
				missed = missed[1:]
			}
		}
		p.last, t = t, in.trig.Next(t)
	}
	p.next = t
	return missed, missedCount, onTime
}

// latestAtOrBefore finds the last occurrence in [from, upto], from being
// one. A Trigger only walks forward, so it looks back from upto in windows
// growing ×4 for the span the occurrence lies in, then bisects that span:
// it asks trig some 150 times at most, however many occurrences the span
// holds and however far back from lies.
func latestAtOrBefore(trig trigger.Trigger, from, upto time.Time) time.Time {
	// has: an occurrence lies in (after, upto].
	has := func(after time.Time) bool {
		n := trig.Next(after)
		return !n.IsZero() && !n.After(upto)
	}
	lo, hi := from.Add(-time.Nanosecond), upto // has(lo), !has(hi)
	for w := time.Minute; w <= maxLookBack; w *= 4 {
		start := upto.Add(-w)
		if !start.After(lo) {
			break
		}
		if has(start) {
			lo = start
			break
		}
		hi = start
	}
	for {
		mid := midpoint(lo, hi)
		if !mid.After(lo) || !mid.Before(hi) {
			// hi is lo + 1ns: the occurrence after lo is the last.
			return trig.Next(lo)
		}
		if has(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
}

// maxLookBack is the widest window latestAtOrBefore looks back, far from
// time.Duration's overflow; a wider span is bisected.
const maxLookBack = 64 * 365 * 24 * time.Hour

// midpoint is halfway between a and b (a before b), to the second when
// they lie farther apart than a time.Duration reaches.
func midpoint(a, b time.Time) time.Time {
	if d := b.Sub(a); d < math.MaxInt64 {
		return a.Add(d / 2)
	}
	as, bs := a.Unix(), b.Unix()
	return time.Unix(as/2+bs/2, 0).UTC()
}
