package chimedbtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

func leaseMethods() []method {
	return []method{
		{"LeaseStore.TryAcquireLease", tryAcquireLeaseCases},
		{"LeaseStore.ReleaseLease", releaseLeaseCases},
	}
}

func clusterMethods() []method {
	return []method{
		{"ClusterStore.GetLease", getLeaseCases},
		{"ClusterStore.DBNow", dbNowCases},
		{"ClusterStore.RegisterNode", registerNodeCases},
		{"ClusterStore.HeartbeatNode", heartbeatNodeCases},
		{"ClusterStore.SetNodeStatus", setNodeStatusCases},
		{"ClusterStore.DeclareDeadNodes", declareDeadNodesCases},
		{"ClusterStore.OrphanNodes", orphanNodesCases},
		{"ClusterStore.DeleteReplacedNodes", deleteReplacedNodesCases},
		{"ClusterStore.DeleteGoneNodes", deleteGoneNodesCases},
		{"ClusterStore.RecoverStalledJobs", recoverStalledJobsCases},
		{"ClusterStore.ReleaseStuckQueued", releaseStuckQueuedCases},
		{"ClusterStore.ResetJob", resetJobCases},
		{"ClusterStore.CountWaitingJobs", countWaitingJobsCases},
		{"ClusterStore.FindScheduleAnomalies", findScheduleAnomaliesCases},
		{"ClusterStore.TouchSchedules", touchSchedulesCases},
		{"ClusterStore.DeleteFinishedJobs", deleteFinishedJobsCases},
	}
}

func (e *env) acquire(name, holder string, ttl time.Duration) (bool, time.Time) {
	e.t.Helper()
	try, err := e.Cluster.TryAcquireLease(e.ctx, name, holder, ttl)
	require.NoError(e.t, err)
	return try.Held, try.ExpiresAt
}

func (e *env) lease(name string) *chimedb.LeaseState {
	e.t.Helper()
	l, err := e.Cluster.GetLease(e.ctx, name)
	require.NoError(e.t, err)
	return l
}

var tryAcquireLeaseCases = []tcase{
	{"a free lease is taken until the database's now plus ttl", func(e *env) {
		t0 := e.now()
		held, exp := e.acquire("leader", "a", time.Minute)
		t1 := e.now()
		require.True(e.t, held)
		between(e.t, t0.Add(time.Minute), exp, t1.Add(time.Minute), clockStep, "expires_at")
		l := e.lease("leader")
		require.Equal(e.t, "leader", l.Name)
		require.Equal(e.t, "a", l.Holder)
		require.True(e.t, l.Live)
		require.True(e.t, l.ExpiresAt.Equal(exp), "GetLease %s, TryAcquireLease %s", l.ExpiresAt, exp)
	}},
	{"a live lease is refused to others and renewed by its holder", func(e *env) {
		_, exp := e.acquire("leader", "a", time.Minute)
		held, _ := e.acquire("leader", "b", time.Hour)
		require.False(e.t, held)
		require.Equal(e.t, "a", e.lease("leader").Holder)
		held, exp2 := e.acquire("leader", "a", time.Hour)
		require.True(e.t, held)
		require.True(e.t, exp2.After(exp), "renewed: %s after %s", exp2, exp)
	}},
	{"a lease expired by the database's clock is anyone's", func(e *env) {
		e.acquire("leader", "a", time.Minute)
		e.exec("UPDATE leases SET expires_at = ? WHERE name = ?", e.now().Add(-time.Second), "leader")
		l := e.lease("leader")
		require.False(e.t, l.Live)
		require.Equal(e.t, "a", l.Holder)
		held, _ := e.acquire("leader", "b", time.Minute)
		require.True(e.t, held)
		held, _ = e.acquire("leader", "a", time.Minute)
		require.False(e.t, held, "a lost it")
	}},
	{"a ttl runs out on the database's clock", func(e *env) {
		held, exp := e.acquire("leader", "a", 20*time.Millisecond)
		require.True(e.t, held)
		// Wait for the database's clock, not ours, to pass expires_at.
		for e.now().Before(exp.Add(clockStep)) {
			time.Sleep(5 * time.Millisecond)
		}
		require.False(e.t, e.lease("leader").Live)
		held, _ = e.acquire("leader", "b", time.Minute)
		require.True(e.t, held)
	}},
	{"an empty holder is refused", func(e *env) {
		_, err := e.Cluster.TryAcquireLease(e.ctx, "leader", "", time.Minute)
		require.Error(e.t, err)
		require.False(e.t, e.lease("leader").Live)
	}},
	{"of holders racing for a free lease exactly one wins", func(e *env) {
		const n = 4
		won, errs := make([]bool, n), make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				try, err := e.Cluster.TryAcquireLease(e.ctx, "leader", fmt.Sprint("h", i), time.Minute)
				won[i], errs[i] = err == nil && try.Held, err
			})
		}
		wg.Wait()
		require.NoError(e.t, errors.Join(errs...))
		winners := 0
		for i, w := range won {
			if w {
				winners++
				require.Equal(e.t, fmt.Sprint("h", i), e.lease("leader").Holder)
			}
		}
		require.Equal(e.t, 1, winners)
	}},
}

var releaseLeaseCases = []tcase{
	{"a release frees the lease at once; a release by anyone else is a no-op", func(e *env) {
		e.acquire("leader", "a", time.Hour)
		require.NoError(e.t, e.Cluster.ReleaseLease(e.ctx, "leader", "b"))
		require.True(e.t, e.lease("leader").Live)
		require.NoError(e.t, e.Cluster.ReleaseLease(e.ctx, "leader", "a"))
		l := e.lease("leader")
		require.False(e.t, l.Live)
		require.Empty(e.t, l.Holder)
		held, _ := e.acquire("leader", "b", time.Minute)
		require.True(e.t, held)
		require.NoError(e.t, e.Cluster.ReleaseLease(e.ctx, "never-taken", "a"))
	}},
}

var getLeaseCases = []tcase{
	{"a lease never taken is free", func(e *env) {
		require.Equal(e.t, chimedb.LeaseState{Name: "nobody"}, *e.lease("nobody"))
	}},
}

var dbNowCases = []tcase{
	{"is UTC in the stored form, and does not go back", func(e *env) {
		a := e.now()
		b := e.now()
		require.Equal(e.t, time.UTC, a.Location())
		require.Equal(e.t, chimedb.DBTime(a), a)
		require.False(e.t, b.Before(a))
	}},
}

var registerNodeCases = []tcase{
	{"writes an alive node started and beating at the database's now", func(e *env) {
		t0 := e.now()
		require.NoError(e.t, e.Cluster.RegisterNode(e.ctx, &chimedb.RegisterNodeParams{ID: "h-7", Hostname: "h", PID: 7, Version: "v1", Roles: "scheduler,worker"}))
		t1 := e.now()
		n := e.nodeRow("h-7")
		require.NotNil(e.t, n)
		require.Equal(e.t, "h", n.Hostname)
		require.Equal(e.t, 7, n.PID)
		require.Equal(e.t, "v1", n.Version)
		require.Equal(e.t, "scheduler,worker", n.Roles)
		require.Equal(e.t, chimedb.NodeAlive, n.Status)
		between(e.t, t0, n.StartedAt, t1, clockStep, "started_at")
		between(e.t, t0, n.HeartbeatAt, t1, clockStep, "heartbeat_at")
	}},
	{"a new process with the id takes the row over", func(e *env) {
		e.node("n1")
		require.NoError(e.t, e.Cluster.SetNodeStatus(e.ctx, "n1", chimedb.NodeDead))
		e.exec("UPDATE nodes SET heartbeat_at = ?, started_at = ? WHERE id = ?", e.now().Add(-time.Hour), e.now().Add(-time.Hour), "n1")
		t0 := e.now()
		require.NoError(e.t, e.Cluster.RegisterNode(e.ctx, &chimedb.RegisterNodeParams{ID: "n1", Hostname: "h2", PID: 2, Version: "v2"}))
		n := e.nodeRow("n1")
		require.Equal(e.t, chimedb.NodeAlive, n.Status)
		require.Equal(e.t, 2, n.PID)
		require.Equal(e.t, "h2", n.Hostname)
		require.False(e.t, n.StartedAt.Before(t0.Add(-clockStep)))
	}},
}

var heartbeatNodeCases = []tcase{
	{"beats the node at the database's now and returns the status it had", func(e *env) {
		for _, before := range []string{chimedb.NodeAlive, chimedb.NodeDead, chimedb.NodeStopped} {
			id := "n-" + before
			e.node(id)
			require.NoError(e.t, e.Cluster.SetNodeStatus(e.ctx, id, before))
			e.exec("UPDATE nodes SET heartbeat_at = ? WHERE id = ?", e.now().Add(-time.Hour), id)
			t0 := e.now()
			prev, err := e.Cluster.HeartbeatNode(e.ctx, &chimedb.RegisterNodeParams{ID: id})
			require.NoError(e.t, err)
			require.Equal(e.t, before, prev)
			n := e.nodeRow(id)
			require.Equal(e.t, chimedb.NodeAlive, n.Status, before)
			require.False(e.t, n.HeartbeatAt.Before(t0.Add(-clockStep)), before)
		}
	}},
	{"a node whose row is gone is registered again and gets an empty status", func(e *env) {
		prev, err := e.Cluster.HeartbeatNode(e.ctx, &chimedb.RegisterNodeParams{ID: "back", Hostname: "h", PID: 3, Roles: "worker"})
		require.NoError(e.t, err)
		require.Empty(e.t, prev)
		n := e.nodeRow("back")
		require.NotNil(e.t, n)
		require.Equal(e.t, chimedb.NodeAlive, n.Status)
		require.Equal(e.t, 3, n.PID)
	}},
}

var setNodeStatusCases = []tcase{
	{"sets the status; an unknown node is no error", func(e *env) {
		e.node("n1")
		require.NoError(e.t, e.Cluster.SetNodeStatus(e.ctx, "n1", chimedb.NodeStopped))
		require.Equal(e.t, chimedb.NodeStopped, e.nodeRow("n1").Status)
		require.NoError(e.t, e.Cluster.SetNodeStatus(e.ctx, "nobody", chimedb.NodeStopped))
		require.Nil(e.t, e.nodeRow("nobody"))
	}},
}

var declareDeadNodesCases = []tcase{
	{"alive nodes silent longer than the window are declared dead, once", func(e *env) {
		for _, id := range []string{"fresh", "silent", "stopped"} {
			e.node(id)
		}
		require.NoError(e.t, e.Cluster.SetNodeStatus(e.ctx, "stopped", chimedb.NodeStopped))
		old := e.now().Add(-time.Minute)
		e.exec("UPDATE nodes SET heartbeat_at = ? WHERE id IN (?, ?)", old, "silent", "stopped")
		dead, err := e.Cluster.DeclareDeadNodes(e.ctx, 20*time.Second)
		require.NoError(e.t, err)
		require.Len(e.t, dead, 1)
		require.Equal(e.t, "silent", dead[0].ID)
		sameInstant(e.t, old, dead[0].HeartbeatAt)
		require.GreaterOrEqual(e.t, dead[0].Silence, time.Minute-clockStep)
		require.Equal(e.t, chimedb.NodeDead, e.nodeRow("silent").Status)
		require.Equal(e.t, chimedb.NodeAlive, e.nodeRow("fresh").Status)
		dead, err = e.Cluster.DeclareDeadNodes(e.ctx, 20*time.Second)
		require.NoError(e.t, err)
		require.Empty(e.t, dead, "declared once")
	}},
	{"reapers running at once declare each node once", func(e *env) {
		for i := range 3 {
			e.node(fmt.Sprint("silent", i))
		}
		e.exec("UPDATE nodes SET heartbeat_at = ?", e.now().Add(-time.Minute))
		found, errs := make([][]chimedb.DeadNode, 3), make([]error, 3)
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Go(func() { found[i], errs[i] = e.Cluster.DeclareDeadNodes(e.ctx, 20*time.Second) })
		}
		wg.Wait()
		require.NoError(e.t, errors.Join(errs...))
		seen := map[string]int{}
		for _, f := range found {
			for _, d := range f {
				seen[d.ID]++
			}
		}
		require.Equal(e.t, map[string]int{"silent0": 1, "silent1": 1, "silent2": 1}, seen)
	}},
}

var orphanNodesCases = []tcase{
	{"lists nodes holding active jobs without being alive", func(e *env) {
		d := e.definition()
		e.node("live")
		e.node("stopped")
		require.NoError(e.t, e.Cluster.SetNodeStatus(e.ctx, "stopped", chimedb.NodeStopped))
		e.running(d.ID, "live", 1)
		e.queued(d.ID, "stopped", 0)
		e.running(d.ID, "unknown", 1)
		p := e.running(d.ID, "paused-unknown", 1)
		e.setJob(p.ID, jobState{status: models.JobPaused})
		done := e.running(d.ID, "finished-only", 1)
		e.setJob(done.ID, jobState{status: models.JobSucceeded})
		ids, err := e.Cluster.OrphanNodes(e.ctx)
		require.NoError(e.t, err)
		require.ElementsMatch(e.t, []string{"stopped", "unknown", "paused-unknown"}, ids)
	}},
}

var deleteReplacedNodesCases = []tcase{
	{"deletes the hostname's stopped and dead rows of earlier default ids, and no other", func(e *env) {
		d := e.definition()
		reg := func(id, host string, pid int, status string) {
			require.NoError(e.t, e.Cluster.RegisterNode(e.ctx, &chimedb.RegisterNodeParams{ID: id, Hostname: host, PID: pid}))
			require.NoError(e.t, e.Cluster.SetNodeStatus(e.ctx, id, status))
		}
		reg("h-1", "h", 1, chimedb.NodeStopped)      // replaced
		reg("h-2", "h", 2, chimedb.NodeDead)         // replaced
		reg("h-3", "h", 3, chimedb.NodeDead)         // holds a job: the reaper's
		reg("chosen", "h", 4, chimedb.NodeStopped)   // an id chosen by the admin
		reg("h-5", "h", 5, chimedb.NodeAlive)        // alive
		reg("other-6", "other", 6, chimedb.NodeDead) // another host
		reg("h-9", "h", 9, chimedb.NodeStopped)      // the caller itself
		e.running(d.ID, "h-3", 1)
		gone, err := e.Cluster.DeleteReplacedNodes(e.ctx, "h", "h-9")
		require.NoError(e.t, err)
		require.ElementsMatch(e.t, []string{"h-1", "h-2"}, gone)
		for _, id := range []string{"h-3", "chosen", "h-5", "other-6", "h-9"} {
			require.NotNil(e.t, e.nodeRow(id), id)
		}
		require.Nil(e.t, e.nodeRow("h-1"))
		gone, err = e.Cluster.DeleteReplacedNodes(e.ctx, "", "h-9")
		require.NoError(e.t, err)
		require.Empty(e.t, gone, "no hostname, nothing to match")
	}},
}

var deleteGoneNodesCases = []tcase{
	{"deletes nodes stopped or dead for longer than the age that hold no active job", func(e *env) {
		d := e.definition()
		for _, id := range []string{"old-stopped", "old-dead", "old-busy", "old-alive", "recent-stopped"} {
			e.node(id)
		}
		for _, id := range []string{"old-stopped", "old-busy", "recent-stopped"} {
			require.NoError(e.t, e.Cluster.SetNodeStatus(e.ctx, id, chimedb.NodeStopped))
		}
		require.NoError(e.t, e.Cluster.SetNodeStatus(e.ctx, "old-dead", chimedb.NodeDead))
		e.exec("UPDATE nodes SET heartbeat_at = ? WHERE id <> ?", e.now().Add(-2*time.Hour), "recent-stopped")
		e.queued(d.ID, "old-busy", 0)
		n, err := e.Cluster.DeleteGoneNodes(e.ctx, time.Hour)
		require.NoError(e.t, err)
		require.Equal(e.t, 2, n)
		require.Nil(e.t, e.nodeRow("old-stopped"))
		require.Nil(e.t, e.nodeRow("old-dead"))
		for _, id := range []string{"old-busy", "old-alive", "recent-stopped"} {
			require.NotNil(e.t, e.nodeRow(id), id)
		}
	}},
	{"a non-positive age is refused", func(e *env) {
		e.node("n1")
		require.NoError(e.t, e.Cluster.SetNodeStatus(e.ctx, "n1", chimedb.NodeStopped))
		for _, age := range []time.Duration{0, -time.Hour} {
			_, err := e.Cluster.DeleteGoneNodes(e.ctx, age)
			require.Error(e.t, err)
		}
		require.NotNil(e.t, e.nodeRow("n1"))
	}},
}

var recoverStalledJobsCases = []tcase{
	{"jobs silent longer than the window by both clocks are sorted as a dead node's", func(e *env) {
		cut := recoverCases[1:] // running and paused only: a queued job is ReleaseStuckQueued's
		old := e.now().Add(-time.Minute)
		jobs := e.leftOn("n1", cut, func(id int64) { e.setJob(id, jobState{heartbeat: &old, updatedAt: &old}) })
		d := e.definition(func(d *models.JobDefinition) { d.MaxAttempts = 3 })
		fresh := e.running(d.ID, "n1", 1)
		// heartbeat_at from a node whose clock is behind, but the row was
		// written just now by the database's clock: alive.
		skewed := e.running(d.ID, "n2", 1)
		e.setJob(skewed.ID, jobState{heartbeat: &old})
		res, err := e.Cluster.RecoverStalledJobs(e.ctx, 20*time.Second)
		require.NoError(e.t, err)
		e.checkRecovered(res, cut, jobs)
		require.Equal(e.t, models.JobRunning, e.get(fresh.ID).Status)
		require.Equal(e.t, models.JobRunning, e.get(skewed.ID).Status)
	}},
}

var releaseStuckQueuedCases = []tcase{
	{"queued jobs that never started go back to pending without an attempt", func(e *env) {
		d := e.definition()
		old := e.now().Add(-time.Hour)
		stuck, written, recent := e.queued(d.ID, "n1", 1), e.queued(d.ID, "n1", 0), e.queued(d.ID, "n1", 0)
		e.setJob(stuck.ID, jobState{queuedAt: &old, updatedAt: &old})
		e.setJob(written.ID, jobState{queuedAt: &old}) // the row was written since
		ids, err := e.Cluster.ReleaseStuckQueued(e.ctx, time.Minute)
		require.NoError(e.t, err)
		require.Equal(e.t, []int64{stuck.ID}, ids)
		j := e.get(stuck.ID)
		require.Equal(e.t, models.JobPending, j.Status)
		require.Empty(e.t, j.NodeID)
		require.Nil(e.t, j.QueuedAt)
		require.Equal(e.t, 1, j.Attempt)
		e.hasLog(stuck.ID, "released")
		for _, id := range []int64{written.ID, recent.ID} {
			require.Equal(e.t, models.JobQueued, e.get(id).Status)
		}
	}},
}

// resetters are the two ResetJob methods, ClusterStore's and
// AdminStore's, which a store may implement apart.
func (e *env) resetters() map[string]func(context.Context, int64, string) (*models.Job, error) {
	return map[string]func(context.Context, int64, string) (*models.Job, error){
		"ClusterStore": e.Cluster.ResetJob, "AdminStore": e.Admin.ResetJob}
}

var resetJobCases = []tcase{
	{"an active job goes back to pending, due now, whatever its node", func(e *env) {
		for impl, reset := range e.resetters() {
			d := e.definition()
			for _, st := range []models.JobStatus{models.JobQueued, models.JobRunning, models.JobPaused} {
				j := e.running(d.ID, "alive", 2)
				e.setJob(j.ID, jobState{status: st, control: models.ControlPause})
				t0 := e.now()
				got, err := reset(e.ctx, j.ID, "the test")
				require.NoError(e.t, err, impl)
				t1 := e.now()
				require.Equal(e.t, models.JobPending, got.Status, impl)
				require.Empty(e.t, got.NodeID, impl)
				require.Equal(e.t, models.ControlNone, got.Control, impl)
				require.Nil(e.t, got.QueuedAt, impl)
				require.Equal(e.t, 2, got.Attempt, "%s: the attempt count is kept", impl)
				between(e.t, t0, got.RunAt, t1, clockStep, "run_at")
				require.Equal(e.t, *got, *e.get(j.ID), "%s: the row returned is the row stored", impl)
				e.hasLog(j.ID, "the test")
			}
		}
	}},
	{"a pending job is returned as it is; finished is ErrJobState, missing ErrNotFound", func(e *env) {
		for impl, reset := range e.resetters() {
			d := e.definition()
			p := e.job(d.ID)
			got, err := reset(e.ctx, p.ID, "t")
			require.NoError(e.t, err, impl)
			require.Equal(e.t, *e.get(p.ID), *got)
			done := e.running(d.ID, "n", 1)
			e.setJob(done.ID, jobState{status: models.JobSucceeded})
			_, err = reset(e.ctx, done.ID, "t")
			require.ErrorIs(e.t, err, chimedb.ErrJobState, impl)
			require.Equal(e.t, models.JobSucceeded, e.get(done.ID).Status)
			_, err = reset(e.ctx, missingID, "t")
			require.ErrorIs(e.t, err, chimedb.ErrNotFound, impl)
		}
	}},
}

var countWaitingJobsCases = []tcase{
	{"counts the pending jobs due by the database's clock, whatever their priority", func(e *env) {
		d := e.definition()
		now := e.now()
		e.job(d.ID, runAt(now.Add(-time.Hour)), priority(10))
		e.job(d.ID, runAt(now.Add(-time.Minute)), priority(5))
		e.job(d.ID, runAt(now.Add(-time.Second)), priority(1)) // its claim_key is minutes ahead
		e.job(d.ID, runAt(now.Add(time.Hour)), priority(10))   // not due, though its claim_key is early
		e.queued(d.ID, "n1", 0)
		n, err := e.Cluster.CountWaitingJobs(e.ctx)
		require.NoError(e.t, err)
		require.EqualValues(e.t, 3, n, "due pending jobs")
	}},
}

var findScheduleAnomaliesCases = []tcase{
	{"lists active schedules without a trigger and overdue triggers, left a while alone", func(e *env) {
		d := e.definition()
		now := e.now()
		missing, overdue, fine, fresh := e.schedule(d.ID), e.schedule(d.ID), e.schedule(d.ID), e.schedule(d.ID)
		paused := e.schedule(d.ID, func(s *models.Schedule) { s.Status = models.SchedulePaused })
		long, soon := now.Add(-time.Hour), now.Add(time.Minute)
		require.NoError(e.t, e.Schedule.EnsureTriggers(e.ctx, &chimedb.EnsureTriggersParams{Now: now, Triggers: []chimedb.TriggerRow{
			{ScheduleID: overdue.ID, NextFireAt: &long}, {ScheduleID: fine.ID, NextFireAt: &soon}, {ScheduleID: paused.ID, NextFireAt: &long}}}))
		old := now.Add(-2 * time.Hour)
		for _, s := range []*models.Schedule{missing, overdue, fine, paused} {
			e.exec("UPDATE schedules SET updated_at = ? WHERE id = ?", old, s.ID)
		}
		an, err := e.Cluster.FindScheduleAnomalies(e.ctx, 5*time.Minute, 100)
		require.NoError(e.t, err)
		require.Equal(e.t, []int64{missing.ID}, an.MissingTrigger, "not %d, changed just now", fresh.ID)
		require.Len(e.t, an.Overdue, 1)
		require.Equal(e.t, overdue.ID, an.Overdue[0].ScheduleID)
		sameInstant(e.t, long, an.Overdue[0].NextFireAt)
		require.GreaterOrEqual(e.t, an.Overdue[0].Overdue, time.Hour-clockStep)
		require.False(e.t, an.Empty())
	}},
	{"limit bounds each list", func(e *env) {
		d := e.definition()
		for range 3 {
			e.schedule(d.ID)
		}
		e.exec("UPDATE schedules SET updated_at = ?", e.now().Add(-time.Hour))
		an, err := e.Cluster.FindScheduleAnomalies(e.ctx, time.Minute, 2)
		require.NoError(e.t, err)
		require.Len(e.t, an.MissingTrigger, 2)
	}},
}

var touchSchedulesCases = []tcase{
	{"moves updated_at of active schedules to the database's now", func(e *env) {
		d := e.definition()
		active := e.schedule(d.ID)
		paused := e.schedule(d.ID, func(s *models.Schedule) { s.Status = models.SchedulePaused })
		old := e.now().Add(-time.Hour)
		e.exec("UPDATE schedules SET updated_at = ?", old)
		t0 := e.now()
		require.NoError(e.t, e.Cluster.TouchSchedules(e.ctx, []int64{active.ID, paused.ID, missingID}))
		t1 := e.now()
		between(e.t, t0, e.getSchedule(active.ID).UpdatedAt, t1, clockStep, "updated_at")
		sameInstant(e.t, old, e.getSchedule(paused.ID).UpdatedAt)
		require.NoError(e.t, e.Cluster.TouchSchedules(e.ctx, nil))
	}},
}

var deleteFinishedJobsCases = []tcase{
	{"deletes jobs finished longer ago than the age, with their logs and notices", func(e *env) {
		d := e.definition()
		now := e.now()
		long := now.Add(-3 * time.Hour)
		var old []int64
		for _, st := range []models.JobStatus{models.JobSucceeded, models.JobFailed, models.JobStopped, models.JobCanceled} {
			j := e.job(d.ID, runAt(long))
			e.setJob(j.ID, jobState{status: st, node: "n", attempt: 1, finished: &long})
			e.exec("INSERT INTO notifications (job_id, job_status, attempt, recipients) VALUES (?, ?, ?, ?)", j.ID, string(st), 1, "ops@example.com")
			old = append(old, j.ID)
		}
		recent := e.job(d.ID, runAt(long))
		e.setJob(recent.ID, jobState{status: models.JobSucceeded, node: "n", attempt: 1, finished: &now})
		requeued := e.job(d.ID, runAt(long)) // finished once, then sent back to pending by an admin
		e.setJob(requeued.ID, jobState{finished: &long})
		n, err := e.Cluster.DeleteFinishedJobs(e.ctx, time.Hour, 100)
		require.NoError(e.t, err)
		require.Equal(e.t, len(old), n)
		for _, id := range old {
			_, err := e.admin.GetJob(e.ctx, id)
			require.ErrorIs(e.t, err, chimedb.ErrNotFound)
			require.Empty(e.t, e.logs(id))
			require.Empty(e.t, e.notices(id))
		}
		e.get(recent.ID)
		e.get(requeued.ID)
	}},
	{"a batch bounds one call", func(e *env) {
		d := e.definition()
		long := e.now().Add(-3 * time.Hour)
		for range 5 {
			j := e.job(d.ID, runAt(long))
			e.setJob(j.ID, jobState{status: models.JobSucceeded, node: "n", attempt: 1, finished: &long})
		}
		var got []int
		for range 4 {
			n, err := e.Cluster.DeleteFinishedJobs(e.ctx, time.Hour, 2)
			require.NoError(e.t, err)
			got = append(got, n)
		}
		require.Equal(e.t, []int{2, 2, 1, 0}, got)
	}},
	{"a non-positive age is refused", func(e *env) {
		d := e.definition()
		now := e.now()
		j := e.job(d.ID)
		e.setJob(j.ID, jobState{status: models.JobSucceeded, node: "n", attempt: 1, finished: &now})
		for _, age := range []time.Duration{0, -time.Hour} {
			_, err := e.Cluster.DeleteFinishedJobs(e.ctx, age, 10)
			require.Error(e.t, err)
		}
		e.get(j.ID)
	}},
}
