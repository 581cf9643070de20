package scheduleengine

import (
	"time"

	"github.com/chimesched/chime/models"
)

// maxWalk bounds how many missed occurrences one plan enumerates, so a
// per-second cron that missed a year costs milliseconds, not minutes.
const maxWalk = 100_000

// planFire is one job row a plan wants written.
type planFire struct {
	at          time.Time
	catchUp     bool
	missedFires int
}

// planInput is a schedule's firing state as the tables hold it.
type planInput struct {
	trig      Trigger
	after     time.Time // last_fire_at, or just before the first possible fire
	fired     int64
	maxRuns   *int
	policy    models.MisfirePolicy
	window    *time.Duration
	threshold time.Duration
	// restoreUpTo: occurrences up to this instant passed while no engine
	// drove the schedule (down, paused, leader changing) and are missed
	// even when younger than threshold.
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
// later than threshold is a misfire and follows the policy; one older than the
// catch-up window is dropped under every policy (docs/architecture.md, "The
// fire path"). It is pure, so a retried write recomputes the same rows.
func computePlan(in planInput, now time.Time) plan {
	p := plan{fired: in.fired}
	var onTime []time.Time
	var missed []time.Time // the latest in.fireAll missed occurrences, oldest first
	var missedCount int
	cutoff := now.Add(-in.threshold)
	// An occurrence at the very instant the engine took over is its to fire
	// on time; only those strictly before it were missed.
	if restore := in.restoreUpTo.Add(-time.Nanosecond); restore.After(cutoff) {
		cutoff = restore
		if cutoff.After(now) {
			cutoff = now
		}
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
			p.last = t
			t = in.trig.Next(t)
		}
	}
	for n := 0; !t.IsZero() && !t.After(now); n++ {
		if !t.After(cutoff) && n == maxWalk {
			// Too many to walk: jump to the last missed occurrence.
			if latest := latestAtOrBefore(in.trig, t, cutoff); !latest.IsZero() {
				missed = append(missed[:0], latest)
				t = latest
			}
			p.last = t
			t = in.trig.Next(t)
			continue
		}
		if t.After(cutoff) {
			onTime = append(onTime, t)
		} else {
			missedCount++
			p.misfired++
			missed = append(missed, t)
			if len(missed) > max(in.fireAll, 1) {
				missed = missed[1:]
			}
		}
		p.last = t
		t = in.trig.Next(t)
	}
	p.next = t

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

	if in.forbid && len(p.fires) > 0 {
		keep := 1
		if in.busy {
			keep = 0
		}
		if len(p.fires) > keep {
			// The latest fire is the one that is still wanted; older ones
			// would only queue up behind it.
			p.blocked = len(p.fires) - keep
			p.fires = p.fires[len(p.fires)-keep:]
		}
	}
	if in.maxRuns != nil {
		left := int64(*in.maxRuns) - p.fired
		if left < 0 {
			left = 0
		}
		if int64(len(p.fires)) > left {
			// Keep the earliest: the runs a schedule is allowed are its first ones.
			p.dropped += len(p.fires) - int(left)
			p.fires = p.fires[:left]
		}
		p.fired += int64(len(p.fires))
		rem := int64(*in.maxRuns) - p.fired
		if rem < 0 {
			rem = 0
		}
		p.remaining = &rem
		if rem == 0 {
			p.done = true
		}
	} else {
		p.fired += int64(len(p.fires))
	}
	if p.next.IsZero() {
		p.done = true
	}
	if p.done {
		p.next = time.Time{}
	}
	return p
}

// latestAtOrBefore finds the last occurrence in [from, upto] by walking
// windows of growing size back from upto, since a Trigger only walks forward.
func latestAtOrBefore(trig Trigger, from, upto time.Time) time.Time {
	for w := time.Minute; ; w *= 4 {
		start := upto.Add(-w)
		if start.Before(from) {
			start = from.Add(-time.Nanosecond)
		}
		var last time.Time
		t := trig.Next(start)
		for n := 0; !t.IsZero() && !t.After(upto) && n < maxWalk; n++ {
			last = t
			t = trig.Next(t)
		}
		if !last.IsZero() || !start.After(from) {
			return last
		}
	}
}
