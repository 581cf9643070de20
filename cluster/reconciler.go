package cluster

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// anomalyLimit bounds how many schedules one pass reports of each kind.
const anomalyLimit = 100

// renudgeAfter is how long the reconciler waits before touching the same
// schedule again: if one touch did not fix it, touching it every pass will
// not either, and the log line has been written.
const renudgeAfter = 10 * time.Minute

// ReconcileReport says what one reconcile pass found and did.
type ReconcileReport struct {
	// Stalled is what happened to running or paused jobs without a heartbeat
	// for FailoverAfter.
	Stalled *chimedb.RecoverNodeResult
	// Released lists jobs queued for QueuedAfter without starting, sent
	// back to pending.
	Released []int64
	// Schedules lists active schedules without a trigger, or with one far
	// overdue.
	Schedules *chimedb.ScheduleAnomalies
	// Nudged lists the schedules whose updated_at was touched so the
	// schedule engine looks at them again.
	Nudged []int64
}

// Reconcile repairs what should never happen, now, on this node, whether
// or not it leads: the admin's "reconcile now", and the body of the
// maintenance leader's periodic pass. Jobs are recovered; schedules are
// logged and handed to the schedule engine by touching updated_at (when a
// scheduler lease is live, so that someone is there to act on it).
func (n *Node) Reconcile(ctx context.Context) (*ReconcileReport, error) {
	rep := &ReconcileReport{}
	stalled, err := n.st.RecoverStalledJobs(ctx, n.cfg.FailoverAfter)
	if err != nil {
		return rep, err
	}
	rep.Stalled = stalled
	for _, ids := range []struct {
		what string
		ids  []int64
	}{{"recovered", stalled.Recovered}, {"retried", stalled.Retried}, {"failed", stalled.Failed}, {"stopped", stalled.Stopped}} {
		for _, id := range ids.ids {
			n.log.WithFields(logrus.Fields{"job_id": id, "outcome": ids.what}).
				Warn("reconciler: job had no heartbeat for longer than the failover window")
		}
	}
	rep.Released, err = n.st.ReleaseStuckQueued(ctx, n.cfg.QueuedAfter)
	if err != nil {
		return rep, err
	}
	for _, id := range rep.Released {
		n.log.WithField("job_id", id).Warn("reconciler: job was queued on a node that never started it; released to pending")
	}
	an, err := n.st.FindScheduleAnomalies(ctx, n.cfg.OverdueAfter, anomalyLimit)
	if err != nil {
		return rep, err
	}
	rep.Schedules = an
	if an.Empty() {
		return rep, nil
	}
	for _, id := range an.MissingTrigger {
		n.log.WithField("schedule_id", id).Warn("reconciler: active schedule has no time_triggers row")
	}
	for _, o := range an.Overdue {
		n.log.WithFields(logrus.Fields{"schedule_id": o.ScheduleID, "next_fire_at": o.NextFireAt, "overdue": o.Overdue.Round(time.Second).String()}).
			Warn("reconciler: active schedule's next fire is far in the past")
	}
	lease, err := n.st.GetLease(ctx, chimedb.SchedulerLease)
	if err != nil {
		return rep, err
	}
	if !lease.Live {
		n.log.Warn("reconciler: no node holds the scheduler lease; schedules fire again when a scheduler node runs")
		return rep, nil
	}
	rep.Nudged = n.dueForNudge(an)
	if err := n.st.TouchSchedules(ctx, rep.Nudged); err != nil {
		return rep, err
	}
	return rep, nil
}

// dueForNudge picks the anomalous schedules not touched in renudgeAfter.
func (n *Node) dueForNudge(an *chimedb.ScheduleAnomalies) []int64 {
	now := n.cfg.Clock.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []int64
	add := func(id int64) {
		if at, ok := n.nudged[id]; ok && now.Sub(at) < renudgeAfter {
			return
		}
		n.nudged[id] = now
		out = append(out, id)
	}
	for _, id := range an.MissingTrigger {
		add(id)
	}
	for _, o := range an.Overdue {
		add(o.ScheduleID)
	}
	for id, at := range n.nudged {
		if now.Sub(at) >= renudgeAfter {
			delete(n.nudged, id)
		}
	}
	return out
}

// ResetJob forces a queued, running or paused job back to pending (see
// store.ResetJob): `chime job reset ID` and the API's reset action.
func (n *Node) ResetJob(ctx context.Context, id int64) (*models.Job, error) {
	j, err := n.st.ResetJob(ctx, id, "an admin")
	if err != nil {
		return nil, err
	}
	n.log.WithFields(logrus.Fields{"job_id": id, "schedule_id": j.ScheduleID}).Warn("job reset to pending by an admin")
	return j, nil
}

// retain deletes finished jobs older than RetentionDays in batches until
// none are left, or this node stops leading. It pauses briefly between
// batches so fires and claims on the same tables get their turn.
func (n *Node) retain(ctx context.Context, leading func() bool) (int, error) {
	days := n.RetentionDays()
	if days <= 0 {
		return 0, nil
	}
	age, err := models.RetentionBound.Duration(int64(days))
	if err != nil {
		return 0, err
	}
	total := 0
	for leading() {
		got, err := n.st.DeleteFinishedJobs(ctx, age, n.cfg.RetentionBatch)
		total += got
		if err != nil {
			return total, err
		}
		if got < n.cfg.RetentionBatch {
			break
		}
		t := n.cfg.Clock.NewTimer(20 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return total, ctx.Err()
		case <-t.Chan():
		}
	}
	if total > 0 {
		n.log.WithFields(logrus.Fields{"jobs": total, "retention_days": days}).Info("deleted finished jobs past retention, with their logs")
	}
	if err := n.retainAudit(ctx, leading, age, days); err != nil {
		return total, err
	}
	gone, err := n.st.DeleteGoneNodes(ctx, age)
	if err != nil {
		return total, err
	}
	if gone > 0 {
		n.log.WithFields(logrus.Fields{"nodes": gone, "retention_days": days}).Info("deleted the rows of nodes gone for longer than retention")
	}
	return total, nil
}

// retainAudit deletes audit rows older than the job history's retention,
// in batches, while this node leads: one setting says how far back chime
// remembers what happened and who changed what.
func (n *Node) retainAudit(ctx context.Context, leading func() bool, age time.Duration, days int) error {
	as, ok := n.st.(chimedb.AuditStore)
	if !ok {
		return nil
	}
	total := 0
	for leading() {
		got, err := as.DeleteOldAudit(ctx, age, n.cfg.RetentionBatch)
		total += got
		if err != nil {
			return err
		}
		if got < n.cfg.RetentionBatch {
			break
		}
		t := n.cfg.Clock.NewTimer(20 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.Chan():
		}
	}
	if total > 0 {
		n.log.WithFields(logrus.Fields{"audit_rows": total, "retention_days": days}).Info("deleted audit log rows past retention")
	}
	return nil
}
