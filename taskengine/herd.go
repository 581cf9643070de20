package taskengine

import (
	"context"
	"sync/atomic"
	"time"
)

// Bounds of the completer's hold during a herd (see herdWatch).
const (
	// herdQuiet is how long without a job beginning Execute ends a herd's
	// start.
	herdQuiet = 2 * time.Millisecond
	// herdHoldMax is the longest the completer holds outcomes after a
	// fire's hand-off was delivered, however long its herd takes to start.
	herdHoldMax = 50 * time.Millisecond
)

// herdWatch lets the completer keep its writes out of the moment a fire's
// jobs start. A fire hands a herd of jobs off at its instant (a thousand
// every-second schedules are a thousand jobs in one second's first
// milliseconds), and its first jobs finish while the rest are still
// starting: httpcall's first responses come back within a millisecond.
// Writing their outcomes then costs this node's CPU and the database's
// (on the same machine, often) just when the herd's requests are going
// out, and each write of a few outcomes is a transaction of its own. The
// completer so waits, after a hand-off, until no job has begun Execute for
// herdQuiet, and at most herdHoldMax after the delivery; the outcomes
// waiting meanwhile go in one batch. Outcomes keep the times the runs
// ended (finished_at is read when Execute returns), so only the moment
// they become visible moves, by at most herdHoldMax.
//
// It reads the process's monotonic clock, not the engine's: it decides
// when the CPU is spent, not anything a job or a test observes, and an
// engine clock a test holds still must not hold the completer.
type herdWatch struct {
	// quiet and holdMax are herdQuiet and herdHoldMax; tests change them.
	quiet, holdMax time.Duration
	delivered      atomic.Int64 // mono() of the last hand-off delivered; 0: none yet
	started        atomic.Int64 // mono() of the last Execute begun
}

func newHerdWatch() herdWatch { return herdWatch{quiet: herdQuiet, holdMax: herdHoldMax} }

var monoEpoch = time.Now()

// mono is the monotonic time since the process began, never 0 past its
// first nanosecond.
func mono() int64 { return int64(time.Since(monoEpoch)) + 1 }

// handedOff notes a hand-off delivered to the executor.
func (h *herdWatch) handedOff() { h.delivered.Store(mono()) }

// starting notes a job beginning Execute.
func (h *herdWatch) starting() { h.started.Store(mono()) }

// wait returns once the last hand-off's herd has started (no Execute begun
// for quiet), holdMax after its delivery, or when ctx ends.
func (h *herdWatch) wait(ctx context.Context) {
	var t *time.Timer
	for {
		now := mono()
		since := now - h.delivered.Load()
		if h.delivered.Load() == 0 || since >= int64(h.holdMax) {
			return
		}
		idle := now - h.started.Load()
		if idle >= int64(h.quiet) {
			return
		}
		d := time.Duration(min(int64(h.quiet)-idle, int64(h.holdMax)-since))
		if t == nil {
			t = time.NewTimer(d)
			defer t.Stop()
		} else {
			t.Reset(d)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
