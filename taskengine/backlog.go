package taskengine

import (
	"time"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/metrics"
)

// backlogPause is how many BacklogWaits a node's fires take no backlog
// after a job of it waited that long in vain: its workers are held by long
// runs, and the jobs of the next fires are better left pending for any
// node than held here.
const backlogPause = 10

// backlogTarget divides BacklogWait into the time within which the pool
// is expected to start a fire's backlog (see workers.backlogRoom): well
// inside the wait, so that a backlog taken is a backlog run, not given back.
const backlogTarget = 4

// backlog is the executor's jobs that wait for a pool worker: the jobs a
// fire handed off past the free workers (Config.Backlog), and any job that
// found every worker busy (a pool that shrank). A worker that ends its run
// takes the oldest of them on the same goroutine (see work), with no
// hand-over in between; each job holds its place in workers meanwhile.
// Its fields are the executor's, under qmu.
type backlog struct {
	busy    int           // pool workers running jobs (work loops)
	started int           // jobs taken already running (ClaimedJob.Started), not dispatched yet
	waiting []*claimedRun // oldest first
	armed   bool          // an expiry timer is set
	offTill time.Time     // engine clock: fires take no backlog until then
}

// dispatch sends cr to a pool worker when one is free, else leaves it in
// the backlog; false when the executor's run has ended or the pool refused
// it, and cr was neither (the caller gives it back). A job the database
// already says is running (a claim's or a fire's straight start) comes
// first: a queued one takes a worker only when none of those is on its
// way, so that a job marked running does not wait in memory behind one
// that is not (a crash would cost it its attempt).
func (x *executor) dispatch(cr *claimedRun) bool {
	r := cr.exec
	x.qmu.Lock()
	ahead := x.bl.started
	if cr.cj.Started {
		x.bl.started--
		ahead = 0
	}
	if r.queue.Err() != nil {
		x.qmu.Unlock()
		return false
	}
	if x.bl.busy+ahead >= int(x.workers.size.Load()) {
		cr.since = x.cfg.Clock.Now()
		if !cr.cj.Started {
			// Announced again when a worker takes it: the starter must not
			// wait for a start that is not on its way.
			x.starter.withdraw()
		}
		if cr.cj.Started {
			x.bl.waiting = append([]*claimedRun{cr}, x.bl.waiting...)
		} else {
			x.bl.waiting = append(x.bl.waiting, cr)
		}
		metrics.PoolBacklog.Set(float64(len(x.bl.waiting)))
		if !x.bl.armed {
			x.bl.armed = true
			x.cfg.Clock.AfterFunc(x.cfg.BacklogWait, x.expire)
		}
		x.qmu.Unlock()
		return true
	}
	x.bl.busy++
	x.qmu.Unlock()
	if err := r.pool.Submit(func() { x.work(cr) }); err != nil {
		// Only a released pool refuses, and Stop waits for this goroutine
		// before it releases the pool.
		x.qmu.Lock()
		x.bl.busy--
		x.qmu.Unlock()
		x.log.WithError(err).WithField(fieldJobID, cr.cj.ID).Error("pool refused a claimed job; releasing it")
		return false
	}
	return true
}

// work runs cr on a pool worker, then the backlog's oldest job while there
// is one and the pool has not shrunk below the workers busy. A job's place
// in workers is given back only once this worker has taken the next job or
// counts as free (next): a claim that the place lets in finds a free
// worker for its jobs, so without a backlog no job ever waits in it.
func (x *executor) work(cr *claimedRun) {
	clock := x.cfg.Clock
	for cr != nil {
		began := clock.Now()
		status := x.runJob(cr)
		x.workers.noteHeld(clock.Since(began))
		id := cr.job.ID
		cr = x.next(cr.exec)
		x.jobDone(id, status)
	}
}

// next takes the backlog's oldest job for a worker that ended its run, or
// frees the worker.
func (x *executor) next(r *execRun) *claimedRun {
	x.qmu.Lock()
	defer x.qmu.Unlock()
	if len(x.bl.waiting) == 0 || x.bl.busy > int(x.workers.size.Load()) || r.queue.Err() != nil {
		x.bl.busy--
		return nil
	}
	return x.popLocked()
}

func (x *executor) popLocked() *claimedRun {
	cr := x.bl.waiting[0]
	x.bl.waiting[0] = nil
	x.bl.waiting = x.bl.waiting[1:]
	if len(x.bl.waiting) == 0 {
		x.bl.waiting = nil
	}
	metrics.PoolBacklog.Set(float64(len(x.bl.waiting)))
	if !cr.cj.Started {
		x.starter.expect(1)
	}
	return cr
}

// undispatched counts off a job taken already running that leaves before
// dispatch (its preparation failed). A queued job may have left a worker
// free for it: that worker takes the backlog's oldest.
func (x *executor) undispatched(cj *chimedb.ClaimedJob) {
	if cj.Started {
		x.qmu.Lock()
		x.bl.started--
		x.qmu.Unlock()
		x.fill()
	}
}

// fill hands backlog jobs to the workers free (a larger pool, a job
// taken running that left before dispatch), but for those that such jobs
// on their way will take.
func (x *executor) fill() {
	for {
		x.qmu.Lock()
		if len(x.bl.waiting) == 0 || x.bl.busy+x.bl.started >= int(x.workers.size.Load()) || x.bl.waiting[0].exec.queue.Err() != nil {
			x.qmu.Unlock()
			return
		}
		cr := x.popLocked()
		r := cr.exec
		x.bl.busy++
		x.qmu.Unlock()
		if err := r.pool.Submit(func() { x.work(cr) }); err != nil {
			x.qmu.Lock()
			x.bl.busy--
			x.qmu.Unlock()
			if !cr.cj.Started {
				x.starter.withdraw()
			}
			x.giveBack([]*claimedRun{cr}, "released to pending: the worker pool refused it")
			return
		}
	}
}

// expire gives back the jobs that have waited BacklogWait, and pauses the
// fires' backlog (backlogPause).
func (x *executor) expire() {
	now := x.cfg.Clock.Now()
	wait := x.cfg.BacklogWait
	x.qmu.Lock()
	x.bl.armed = false
	n := 0
	for n < len(x.bl.waiting) && now.Sub(x.bl.waiting[n].since) >= wait {
		n++
	}
	old := append([]*claimedRun(nil), x.bl.waiting[:n]...)
	x.bl.waiting = append(x.bl.waiting[:0:0], x.bl.waiting[n:]...)
	metrics.PoolBacklog.Set(float64(len(x.bl.waiting)))
	if len(x.bl.waiting) > 0 {
		x.bl.armed = true
		x.cfg.Clock.AfterFunc(x.bl.waiting[0].since.Add(wait).Sub(now), x.expire)
	}
	if n > 0 {
		x.bl.offTill = now.Add(backlogPause * wait)
	}
	x.qmu.Unlock()
	if n > 0 {
		x.log.WithField("jobs", n).Warnf("no worker came free within %v for jobs handed to this node; releasing them to pending, and taking no backlog for %v",
			wait, backlogPause*wait)
		x.giveBack(old, "released to pending: no worker of node "+x.cfg.NodeID+" came free for it within "+wait.String())
	}
}

// backlogOpen says whether fires may hand this node a backlog now.
func (x *executor) backlogOpen() bool {
	now := x.cfg.Clock.Now()
	x.qmu.Lock()
	defer x.qmu.Unlock()
	return !now.Before(x.bl.offTill)
}

// releaseBacklog gives back every job of the backlog (the node stops or
// drains) and returns how many.
func (x *executor) releaseBacklog(reason string) int {
	x.qmu.Lock()
	all := x.bl.waiting
	x.bl.waiting = nil
	metrics.PoolBacklog.Set(0)
	x.qmu.Unlock()
	x.giveBack(all, reason)
	return len(all)
}

// giveBack sends jobs that never reached a worker back to pending without
// using an attempt: the queued ones in one statement, any started by their
// claim one by one (their started_at tells them apart), and ends their time
// here.
func (x *executor) giveBack(runs []*claimedRun, reason string) {
	if len(runs) == 0 {
		return
	}
	// The jobs of one run of the executor: a run's backlog is given back
	// when it ends.
	r := runs[0].exec
	var ids []int64
	for _, cr := range runs {
		cr.cancel()
		if cr.cj.Started {
			x.release(r, cr.job, cr.cj, reason)
			continue
		}
		ids = append(ids, cr.job.ID)
	}
	if len(ids) > 0 {
		if _, err := x.st.ReleaseJobs(r.db, &chimedb.ReleaseJobsParams{NodeID: x.cfg.NodeID, IDs: ids, Now: chimedb.DBTime(x.cfg.Clock.Now()),
			Reason: reason}); err != nil {
			// Queued here, they go back when this node stops (nodeJobs),
			// restarts, or is found dead, or by the reconciler.
			x.log.WithError(err).WithField("jobs", len(ids)).Error("releasing jobs of the backlog failed; they stay queued on this node")
		}
	}
	for _, cr := range runs {
		x.jobDone(cr.job.ID, released)
	}
	if x.wake != nil {
		// Pending again and due: a claim of this node (while it runs) takes
		// them in order with the rest, and nothing else would wake it on
		// MySQL or SQLite (the watch sees rows added, not released).
		x.wake()
	}
}
