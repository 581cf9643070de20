package taskengine

import (
	"context"
	"sync"
	"time"
)

// JobsWatch says whether rows were added to the jobs table since its
// previous call, whoever added them; store.JobsWatch is one. The engine
// reads it every WakeInterval on databases without NOTIFY, so that a job
// written by another node or by plain SQL starts within about that long
// instead of at the next poll.
type JobsWatch interface {
	Changed(ctx context.Context, now time.Time) (bool, error)
}

// Bounds of one read of the watch: a read that hangs delays only the
// wake-ups (the poll goes on), and after a failed read the next waits at
// least watchRetry, so a database that is down is not asked 20 times a
// second.
const (
	watchTimeout = 10 * time.Second
	watchRetry   = time.Second
)

// startWatch runs watchLoop beside the poll loop when the engine has a
// watch, until ctx ends; the returned func waits for it.
func (p *producer) startWatch(ctx context.Context) (wait func()) {
	var wg sync.WaitGroup
	if p.cfg.Watch != nil {
		wg.Go(func() { p.watchLoop(ctx) })
	}
	return wg.Wait
}

// watchLoop reads the watch every WakeInterval (from the end of one read
// to the start of the next) and wakes the poll loop when it saw rows
// added. A failed read is logged once until a read succeeds again; the
// poll does not depend on it.
func (p *producer) watchLoop(ctx context.Context) {
	timer := p.cfg.Clock.NewTimer(p.cfg.WakeInterval)
	defer timer.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.Chan():
		}
		rctx, cancel := context.WithTimeout(ctx, watchTimeout)
		changed, err := p.cfg.Watch.Changed(rctx, p.cfg.Clock.Now())
		cancel()
		next := p.cfg.WakeInterval
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			if !failing {
				p.log.WithError(err).Warn("cannot read the jobs table for new rows; jobs other nodes or plain SQL add start at the next poll until it works again")
			}
			failing = true
			next = max(next, watchRetry)
		default:
			if failing {
				p.log.Info("reading the jobs table for new rows works again")
			}
			failing = false
			if changed {
				p.Wake()
			}
		}
		timer.Reset(next)
	}
}
