package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// The notification outbox. A notice is written in the transaction that
// writes its job's final state, whichever path that is: the completer
// (CompleteJobs, for runs whose task handed the notice off, and jobs that
// failed before starting), a dead node's recovery (RecoverNode), the
// reconciler (RecoverStalledJobs), and cancels (CancelStopRequested,
// Admin.ControlJob). So no final state is left without its notice, and the
// unique key (job_id, job_status, attempt) keeps two paths from writing two.
// Nodes with SMTP configured claim due rows (ClaimNotifications) and report
// each try (FinishNotification).

// notifyWantsSQL is job_definitions.notify_on asking for a notice of the
// job's status, over the aliases d and j. A stopped or canceled job counts
// as a failure: somebody will want to know it did not finish.
const notifyWantsSQL = `(d.notify_on = 'always' OR (d.notify_on = 'success' AND j.status = 'succeeded')
	OR (d.notify_on = 'failure' AND j.status IN ('failed', 'stopped', 'canceled')))`

// insertIgnoreDup is the suffix that makes an INSERT into notifications skip
// a row whose notice is already there.
func (s *Store) insertIgnoreDup() string {
	if s.dialect == MySQL {
		return " ON DUPLICATE KEY UPDATE id = notifications.id"
	}
	return " ON CONFLICT DO NOTHING"
}

// enqueueNotices records, inside tx, the notices the definitions of jobs
// ids ask for, for those of them that are now in a final state. Callers are
// the paths that end jobs without a task to hand the notice off: recovery,
// the reconciler, cancels, each in the transaction that ended them.
func (s *Store) enqueueNotices(tx *gorm.DB, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	err := tx.Exec(`INSERT INTO notifications (job_id, job_status, attempt, recipients)
		SELECT j.id, j.status, j.attempt, d.notify_emails FROM jobs j JOIN job_definitions d ON d.id = j.job_definition_id
		WHERE j.id IN ? AND j.status IN ? AND d.notify_emails <> '' AND `+notifyWantsSQL+s.insertIgnoreDup(),
		ids, finishedStatuses).Error
	if err != nil {
		return fmt.Errorf("record notices of %d jobs: %w", len(ids), err)
	}
	return nil
}

// noticeBytesPerInsert bounds one multi-row INSERT of notices, far below
// MySQL's default max_allowed_packet (16 MiB on MariaDB, 64 MiB on MySQL 8).
const noticeBytesPerInsert = 6 << 20

// insertOutcomeNotices records the notices of the final outcomes in outs
// that carry one (only those in keep, when keep is not nil), inside the
// completer's transaction.
func (s *Store) insertOutcomeNotices(tx *gorm.DB, outs []chimedb.JobOutcome, keep map[int64]bool) error {
	var b strings.Builder
	var args []any
	size := 0
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		err := tx.Exec(b.String()+s.insertIgnoreDup(), args...).Error
		b.Reset()
		args, size = args[:0], 0
		if err != nil {
			return fmt.Errorf("record completion notices: %w", err)
		}
		return nil
	}
	for i := range outs {
		o := &outs[i]
		if o.Notice == nil || o.Status == models.JobPending || (keep != nil && !keep[o.ID]) {
			continue
		}
		var att any
		if len(o.Notice.Attachments) > 0 {
			raw, err := json.Marshal(o.Notice.Attachments)
			if err != nil {
				return fmt.Errorf("encode attachments of job %d: %w", o.ID, err)
			}
			att, size = string(raw), size+len(raw)
		}
		if len(args) == 0 {
			b.WriteString("INSERT INTO notifications (job_id, job_status, attempt, recipients, attachments) VALUES (?,?,?,?,?)")
		} else {
			b.WriteString(",(?,?,?,?,?)")
		}
		args = append(args, o.ID, string(o.Status), o.Notice.Attempt, o.Notice.Recipients, att)
		if size >= noticeBytesPerInsert {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// ClaimNotifications takes up to p.Limit due pending notices for p.NodeID
// and returns them. A notice is due when next_attempt_at has passed by the
// database's clock; claiming it counts an attempt and moves next_attempt_at
// to the end of the lease. Each row is taken by an UPDATE guarded by the
// attempts count it was read with, so of several nodes claiming at once
// exactly one gets each notice.
//
// A notice that cannot be sent as it is (a value its field cannot hold,
// or out of its models.Bound: see readNotices), or whose job's row cannot
// be read, is failed with the reason as last_error, and logged; the
// others are claimed.
func (s *Store) ClaimNotifications(ctx context.Context, p *models.NotificationClaim) ([]models.NotificationDelivery, error) {
	now, err := s.DBNow(ctx)
	if err != nil {
		return nil, err
	}
	db := s.db.WithContext(ctx)
	if p.MaxAge > 0 {
		if err := db.Exec(`UPDATE notifications SET status = ?, last_error = ? WHERE status = ? AND created_at < ?`,
			models.NotificationFailed, fmt.Sprintf("expired: not sent within %s of the job's end", p.MaxAge),
			models.NotificationPending, now.Add(-p.MaxAge)).Error; err != nil {
			return nil, fmt.Errorf("expire old notices: %w", err)
		}
	}
	due, bad, err := readNotices(db.Model(&models.Notification{}).Select("id, attempts").
		Where("status = ? AND next_attempt_at <= ? AND created_at <= ?", models.NotificationPending, now, now.Add(-p.Settle)).
		Order("next_attempt_at, id").Limit(max(p.Limit, 1)), false)
	if err != nil {
		return nil, fmt.Errorf("find due notices: %w", err)
	}
	if err := s.failBadNotices(ctx, bad); err != nil {
		return nil, err
	}
	var ids []int64
	for _, n := range due {
		res := db.Exec(`UPDATE notifications SET attempts = attempts + 1, node_id = ?, next_attempt_at = ?
			WHERE id = ? AND status = ? AND attempts = ?`,
			p.NodeID, now.Add(p.Lease), n.ID, models.NotificationPending, n.Attempts)
		if res.Error != nil {
			return nil, fmt.Errorf("claim notice %d: %w", n.ID, res.Error)
		}
		if res.RowsAffected == 1 {
			ids = append(ids, n.ID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return s.notificationDeliveries(ctx, ids)
}

// notificationDeliveries reads notices ids with their jobs, definitions
// and schedules.
func (s *Store) notificationDeliveries(ctx context.Context, ids []int64) ([]models.NotificationDelivery, error) {
	db := s.db.WithContext(ctx)
	ns, bad, err := readNotices(db.Model(&models.Notification{}).Where("id IN ?", ids).Order("id"), true)
	if err != nil {
		return nil, fmt.Errorf("read claimed notices: %w", err)
	}
	jobIDs := make([]int64, 0, len(ns))
	for _, n := range ns {
		jobIDs = append(jobIDs, n.JobID)
	}
	// Only unreadable: a job's counters and times out of their bounds
	// harm no email.
	jobs, badJobRows, err := readJobs(db.Model(&models.Job{}).Where("id IN ?", jobIDs), false)
	if err != nil {
		return nil, fmt.Errorf("read the jobs of notices: %w", err)
	}
	for _, b := range badJobRows {
		for _, n := range ns {
			if n.JobID == b.id {
				bad = append(bad, badRow{id: n.ID, reason: "its job's row cannot be read: " + b.reason})
			}
		}
	}
	if err := s.failBadNotices(ctx, bad); err != nil {
		return nil, err
	}
	ns = slices.DeleteFunc(ns, func(n models.Notification) bool {
		return slices.ContainsFunc(bad, func(b badRow) bool { return b.id == n.ID })
	})
	byID := make(map[int64]*models.Job, len(jobs))
	var defIDs, schedIDs []int64
	for i := range jobs {
		byID[jobs[i].ID] = &jobs[i]
		defIDs = append(defIDs, jobs[i].JobDefinitionID)
		if jobs[i].ScheduleID != nil {
			schedIDs = append(schedIDs, *jobs[i].ScheduleID)
		}
	}
	defs := map[int64]models.JobDefinition{}
	if len(defIDs) > 0 {
		var ds []models.JobDefinition
		if err := db.Select("id, name, task_type, max_attempts").Where("id IN ?", defIDs).Find(&ds).Error; err != nil {
			return nil, fmt.Errorf("read the definitions of notices: %w", err)
		}
		for _, d := range ds {
			defs[d.ID] = d
		}
	}
	scheds := map[int64]string{}
	if len(schedIDs) > 0 {
		var ss []models.Schedule
		if err := db.Select("id, name").Where("id IN ?", schedIDs).Find(&ss).Error; err != nil {
			return nil, fmt.Errorf("read the schedules of notices: %w", err)
		}
		for _, sc := range ss {
			scheds[sc.ID] = sc.Name
		}
	}
	out := make([]models.NotificationDelivery, 0, len(ns))
	for _, n := range ns {
		if n.RunID != nil {
			d := models.NotificationDelivery{Notification: n}
			if err := s.runDelivery(ctx, &d); err != nil {
				return nil, err
			}
			out = append(out, d)
			continue
		}
		d := models.NotificationDelivery{Notification: n, Job: byID[n.JobID]}
		if j := d.Job; j != nil {
			def := defs[j.JobDefinitionID]
			d.DefinitionName, d.TaskType = def.Name, def.TaskType
			d.MaxAttempts = j.MaxAttempts
			if d.MaxAttempts <= 0 {
				d.MaxAttempts = max(def.MaxAttempts, 1)
			}
			if j.ScheduleID != nil {
				d.ScheduleName = scheds[*j.ScheduleID]
			}
		}
		out = append(out, d)
	}
	return out, nil
}

// failBadNotices fails the pending notices of bad, with their reasons as
// last_error, and logs them.
func (s *Store) failBadNotices(ctx context.Context, bad []badRow) error {
	for _, b := range bad {
		msg := "the notice cannot be sent as it is (written without the API?): " + b.reason
		res := s.db.WithContext(ctx).Exec(`UPDATE notifications SET status = ?, last_error = ? WHERE id = ? AND status = ?`,
			models.NotificationFailed, msg, b.id, models.NotificationPending)
		if res.Error != nil {
			return fmt.Errorf("fail notice %d: %w", b.id, res.Error)
		}
		if res.RowsAffected > 0 {
			s.log.WithField("notification_id", b.id).WithField("reason", b.reason).Error("the outbox failed a notice that cannot be sent as it is")
		}
	}
	return nil
}

// FinishNotification records the end of one claimed try. The write is
// guarded by the attempts count of the claim, so a node whose lease ran
// out (another node has claimed the notice since) changes nothing; it
// reports whether the row was still its own.
func (s *Store) FinishNotification(ctx context.Context, r *models.NotificationResult) (bool, error) {
	var mine bool
	err := s.InTx(ctx, func(tx *gorm.DB) error {
		mine = false
		now, arg := s.dbNowExpr(0)
		var q string
		var args []any
		switch {
		case r.Sent:
			q, args = "UPDATE notifications SET status = ?, sent_at = "+now, []any{models.NotificationSent, arg}
		case r.RetryIn > 0:
			next, narg := s.dbNowExpr(r.RetryIn)
			q, args = "UPDATE notifications SET last_error = ?, next_attempt_at = "+next, []any{r.Error, narg}
		default:
			q, args = "UPDATE notifications SET status = ?, last_error = ?", []any{models.NotificationFailed, r.Error}
		}
		res := tx.Exec(q+" WHERE id = ? AND status = ? AND attempts = ?", append(args, r.ID, models.NotificationPending, r.Attempts)...)
		if res.Error != nil {
			return res.Error
		}
		if mine = res.RowsAffected == 1; !mine || r.JobLog == "" || r.JobID == 0 {
			return nil
		}
		level := "info"
		if !r.Sent {
			level = "warning"
		}
		return s.insertJobLogs(tx, []models.JobLog{{JobID: r.JobID, Level: level, Message: r.JobLog}})
	})
	if err != nil {
		return false, fmt.Errorf("record the try of notice %d: %w", r.ID, err)
	}
	return mine, nil
}

// NotifyingDefinitions returns the names of up to limit definitions whose
// notify_on asks for email, and how many there are in all.
func (s *Store) NotifyingDefinitions(ctx context.Context, limit int) ([]string, int64, error) {
	db := s.db.WithContext(ctx).Model(&models.JobDefinition{}).Where("notify_on <> ? AND notify_on <> ''", models.NotifyNever)
	var total int64
	if err := db.Count(&total).Error; err != nil {
		return nil, 0, fmt.Errorf("count definitions that notify: %w", err)
	}
	var names []string
	if total > 0 {
		if err := db.Order("name").Limit(limit).Pluck("name", &names).Error; err != nil {
			return nil, 0, fmt.Errorf("list definitions that notify: %w", err)
		}
	}
	return names, total, nil
}

// ListNotifications returns a page of notices, newest first, of job jobID
// when it is not 0 and of status p.Status when set; a row written without
// the API that cannot be sent as it is comes back with Unreadable set.
func (a *Admin) ListNotifications(ctx context.Context, p *chimedb.AdminListParams, jobID int64) ([]models.Notification, error) {
	q := a.s.db.WithContext(ctx).Model(&models.Notification{})
	if jobID > 0 {
		q = q.Where("job_id = ?", jobID)
	}
	if p.Status != "" {
		q = q.Where("status = ?", p.Status)
	}
	if p.BeforeID > 0 {
		q = q.Where("id < ?", p.BeforeID)
	}
	if p.DefinitionPrefix != "" {
		q = q.Where("job_id IN (?)", inScope(a.s.db.WithContext(ctx).Model(&models.Job{}).Select("id"), "job_definition_id", p.DefinitionPrefix))
	}
	out, err := shownNotices(q.Order("id DESC").Limit(max(p.Limit, 1)))
	if err != nil {
		return nil, fmt.Errorf("list notifications: %w", err)
	}
	return out, nil
}
