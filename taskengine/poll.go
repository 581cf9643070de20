package taskengine

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/internal/metrics"
	"github.com/chimesched/chime/store"
)

// pollLoop claims due jobs: at start, every PollInterval, on Wake, and again
// at once while claims come back full (there is a backlog), as soon as a
// worker is free for it. It is the only goroutine that claims.
func (e *Engine) pollLoop(ctx context.Context) {
	timer := e.cfg.Clock.NewTimer(jitter(e.cfg.PollInterval))
	defer timer.Stop()
	more := true     // look at once on start
	backlog := false // the last claim came back full
	for {
		if more {
			free := e.cfg.PoolSize - int(e.inflight.Load())
			if backlog && free > 0 && free < e.cfg.PoolSize/2 {
				// Under a backlog, workers free up one by one; claiming each
				// slot alone would cost a transaction per job. Let a few
				// more free up first, for at most claimCooldown.
				e.gatherSlots(ctx)
				free = e.cfg.PoolSize - int(e.inflight.Load())
			}
			if free > 0 {
				selected, err := e.claim(ctx, free)
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					e.log.WithError(err).Error("claiming jobs failed; retrying at the next poll")
					more = false
				} else {
					more = selected >= free
				}
				backlog = more
				continue
			}
			// Every worker is busy and there is more to do: wait for one.
			select {
			case <-ctx.Done():
				return
			case <-e.slotFreed:
			case <-timer.Chan():
				timer.Reset(jitter(e.cfg.PollInterval))
			}
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-timer.Chan():
			timer.Reset(jitter(e.cfg.PollInterval))
			more = true
		case <-e.wake:
			more = true
		}
	}
}

// claimCooldown bounds how long a backlogged engine waits for more free
// workers before claiming for the ones it has.
const claimCooldown = 5 * time.Millisecond

func (e *Engine) gatherSlots(ctx context.Context) {
	t := time.NewTimer(claimCooldown)
	defer t.Stop()
	for e.cfg.PoolSize-int(e.inflight.Load()) < e.cfg.PoolSize/2 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			return
		case <-e.slotFreed:
		}
	}
}

// claim claims up to free jobs and hands each to the pool. It returns how
// many rows the claim looked at, which tells whether a backlog remains.
func (e *Engine) claim(ctx context.Context, free int) (int, error) {
	began := time.Now()
	defer func() { metrics.PollDuration.Observe(time.Since(began).Seconds()) }()
	res, err := e.st.ClaimJobs(ctx, &store.ClaimParams{NodeID: e.cfg.NodeID, Now: e.now(), Limit: free})
	metrics.ClaimDuration.Observe(time.Since(began).Seconds())
	if err != nil {
		return 0, err
	}
	for i := range res.Jobs {
		cj := res.Jobs[i]
		e.inflight.Add(1)
		metrics.PoolBusy.Set(float64(e.inflight.Load()))
		e.runWG.Add(1)
		job := e.newJob(&cj)
		job.Log().Infof("queued on node %s", e.cfg.NodeID)
		if err := e.pool.Submit(func() { e.run(&cj, job) }); err != nil {
			// Only a released pool refuses, and claims stop before that.
			e.runDone()
			e.log.WithError(err).WithField(fieldJobID, cj.ID).Error("pool refused a claimed job; releasing it")
			if _, rerr := e.st.ReleaseJobs(ctx, &store.ReleaseJobsParams{
				NodeID: e.cfg.NodeID, IDs: []int64{cj.ID}, Now: e.now(), Reason: "released to pending: the worker pool refused it",
			}); rerr != nil {
				e.log.WithError(rerr).Error("release refused job")
			}
		}
	}
	e.noteWaiting(ctx, res.Blocked)
	return res.Selected, nil
}

// noteWaiting writes, once per job, why a due job of a forbid schedule is
// not started.
func (e *Engine) noteWaiting(ctx context.Context, blocked []int64) {
	if len(blocked) == 0 {
		clear(e.waitLogged)
		return
	}
	waiting, err := e.st.WaitingJobs(ctx, &store.WaitingJobsParams{ScheduleIDs: blocked, Now: e.now(), Limit: 1000})
	if err != nil {
		e.log.WithError(err).Warn("listing jobs held by concurrency = forbid failed")
		return
	}
	now := make(map[int64]bool, len(waiting))
	for _, w := range waiting {
		now[w.ID] = true
		if e.waitLogged[w.ID] {
			continue
		}
		e.jobLog.WithFields(logrus.Fields{fieldJobID: w.ID, fieldScheduleID: w.ScheduleID, fieldNodeID: e.cfg.NodeID}).
			Info(fmt.Sprintf("waiting: schedule %d has concurrency = forbid and an earlier job of it is still queued, running or paused", w.ScheduleID))
	}
	e.waitLogged = now
}

// runDone releases a worker slot.
func (e *Engine) runDone() {
	metrics.PoolBusy.Set(float64(e.inflight.Add(-1)))
	select {
	case e.slotFreed <- struct{}{}:
	default:
	}
	e.runWG.Done()
}
