package store

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// Alerting's rows: alert_channels and alert_rules, which admins write (by
// the API or plain SQL, so every read checks them), and alerts, the outbox
// the evaluator fills and every node's dispatcher drains, claimed as
// notifications are. See package alert.

// columnField returns, for a model type, the field column col of its table
// scans into, by the gorm column tags; a column the model has not goes
// nowhere. The alert tables' models are plain (no NULL-as-zero columns),
// so the tags are all readChecked needs.
func columnField[T any](v *T, col string) any {
	idx := columnIndex[T]()
	if i, ok := idx[col]; ok {
		return reflect.ValueOf(v).Elem().Field(i).Addr().Interface()
	}
	return new(any)
}

var columnIndexes sync.Map // reflect.Type → map[string]int

func columnIndex[T any]() map[string]int {
	t := reflect.TypeFor[T]()
	if m, ok := columnIndexes.Load(t); ok {
		return m.(map[string]int)
	}
	m := map[string]int{}
	for i := range t.NumField() {
		for _, part := range strings.Split(t.Field(i).Tag.Get("gorm"), ";") {
			if c, ok := strings.CutPrefix(part, "column:"); ok {
				m[c] = i
			}
		}
	}
	columnIndexes.Store(t, m)
	return m
}

// ListAlertChannels implements chimedb.AlertStore.
func (s *Store) ListAlertChannels(ctx context.Context) ([]models.AlertChannel, error) {
	rows, err := s.db.WithContext(ctx).Model(&models.AlertChannel{}).Order("name").Rows()
	if err != nil {
		return nil, fmt.Errorf("list alert channels: %w", err)
	}
	out, _, err := readChecked(rows, "alert_channels", columnField[models.AlertChannel], (*models.AlertChannel).Check,
		func(c *models.AlertChannel, reason string) { c.Invalid = reason })
	if err != nil {
		return nil, fmt.Errorf("list alert channels: %w", err)
	}
	return out, nil
}

// SaveAlertChannel implements chimedb.AlertStore.
func (s *Store) SaveAlertChannel(ctx context.Context, c *models.AlertChannel) error {
	isNew := c.ID == 0
	return s.audited(ctx, func(db *gorm.DB) error {
		if isNew {
			c.ID = 0 // a retried transaction inserts again
		}
		return saveAlertChannel(db, c)
	})
}

func saveAlertChannel(db *gorm.DB, c *models.AlertChannel) error {
	if c.ID == 0 {
		c.CreatedAt = time.Time{}
		if err := db.Omit("created_at", "updated_at").Create(c).Error; err != nil {
			return fmt.Errorf("create alert channel %q: %w", c.Name, conflict(err))
		}
		return nil
	}
	res := db.Model(&models.AlertChannel{}).Where("id = ?", c.ID).Updates(map[string]any{
		"name": c.Name, "kind": c.Kind, "url": c.URL, "recipients": c.Recipients, "signing_key": c.SigningKey,
		"headers": c.Headers, "timeout_seconds": c.TimeoutSeconds, "enabled": c.Enabled,
	})
	if res.Error != nil {
		return fmt.Errorf("update alert channel %q: %w", c.Name, conflict(res.Error))
	}
	if res.RowsAffected == 0 {
		var n int64
		if err := db.Model(&models.AlertChannel{}).Where("id = ?", c.ID).Count(&n).Error; err != nil || n == 0 {
			return fmt.Errorf("update alert channel %d: %w", c.ID, chimedb.ErrNotFound)
		}
	}
	return nil
}

// DeleteAlertChannel implements chimedb.AlertStore.
func (s *Store) DeleteAlertChannel(ctx context.Context, id int64) error {
	return s.InTx(ctx, func(tx *gorm.DB) error {
		var rules int64
		if err := tx.Model(&models.AlertRule{}).Where("channel_id = ?", id).Count(&rules).Error; err != nil {
			return fmt.Errorf("count the rules of alert channel %d: %w", id, err)
		}
		if rules > 0 {
			return fmt.Errorf("alert channel %d: %d rules send to it: %w", id, rules, chimedb.ErrInUse)
		}
		res := tx.Exec("DELETE FROM alert_channels WHERE id = ?", id)
		if res.Error != nil {
			return fmt.Errorf("delete alert channel %d: %w", id, res.Error)
		}
		if res.RowsAffected == 0 {
			return fmt.Errorf("alert channel %d: %w", id, chimedb.ErrNotFound)
		}
		return nil
	})
}

// ListAlertRules implements chimedb.AlertStore. Besides its own columns, a
// rule is invalid when the definition, schedule or channel it names is
// gone: plain SQL can delete them under it.
func (s *Store) ListAlertRules(ctx context.Context) ([]models.AlertRule, error) {
	db := s.db.WithContext(ctx)
	rows, err := db.Model(&models.AlertRule{}).Order("name").Rows()
	if err != nil {
		return nil, fmt.Errorf("list alert rules: %w", err)
	}
	out, _, err := readChecked(rows, "alert_rules", columnField[models.AlertRule],
		func(r *models.AlertRule) error { _, err := r.ParsedParams(); return err },
		func(r *models.AlertRule, reason string) { r.Invalid = reason })
	if err != nil {
		return nil, fmt.Errorf("list alert rules: %w", err)
	}
	var defIDs, schedIDs, chanIDs, wfIDs []int64
	for _, r := range out {
		chanIDs = append(chanIDs, r.ChannelID)
		if r.WorkflowID != nil {
			wfIDs = append(wfIDs, *r.WorkflowID)
		}
		if r.DefinitionID != nil {
			defIDs = append(defIDs, *r.DefinitionID)
		}
		if r.ScheduleID != nil {
			schedIDs = append(schedIDs, *r.ScheduleID)
		}
	}
	exists := func(table string, ids []int64) (map[int64]bool, error) {
		m := map[int64]bool{}
		if len(ids) == 0 {
			return m, nil
		}
		var got []int64
		if err := db.Table(table).Where("id IN ?", ids).Pluck("id", &got).Error; err != nil {
			return nil, fmt.Errorf("list alert rules: read %s: %w", table, err)
		}
		for _, id := range got {
			m[id] = true
		}
		return m, nil
	}
	defs, err := exists("job_definitions", defIDs)
	if err != nil {
		return nil, err
	}
	scheds, err := exists("schedules", schedIDs)
	if err != nil {
		return nil, err
	}
	chans, err := exists("alert_channels", chanIDs)
	if err != nil {
		return nil, err
	}
	wfs, err := exists("workflows", wfIDs)
	if err != nil {
		return nil, err
	}
	for i := range out {
		r := &out[i]
		var why []string
		if r.Scope == models.ScopeDefinition && r.DefinitionID != nil && !defs[*r.DefinitionID] {
			why = append(why, fmt.Sprintf("definition_id: definition %d does not exist (deleted?)", *r.DefinitionID))
		}
		if r.Scope == models.ScopeSchedule && r.ScheduleID != nil && !scheds[*r.ScheduleID] {
			why = append(why, fmt.Sprintf("schedule_id: schedule %d does not exist (deleted?)", *r.ScheduleID))
		}
		if r.Scope == models.ScopeWorkflow && r.WorkflowID != nil && !wfs[*r.WorkflowID] {
			why = append(why, fmt.Sprintf("workflow_id: workflow %d does not exist (deleted?)", *r.WorkflowID))
		}
		if !chans[r.ChannelID] {
			why = append(why, fmt.Sprintf("channel_id: channel %d does not exist", r.ChannelID))
		}
		if len(why) > 0 {
			r.Invalid = strings.Join(append([]string{r.Invalid}, why...), "; ")
			r.Invalid = strings.TrimPrefix(r.Invalid, "; ")
		}
	}
	return out, nil
}

// SaveAlertRule implements chimedb.AlertStore.
func (s *Store) SaveAlertRule(ctx context.Context, r *models.AlertRule) error {
	isNew := r.ID == 0
	return s.audited(ctx, func(db *gorm.DB) error {
		if isNew {
			r.ID = 0 // a retried transaction inserts again
		}
		return saveAlertRule(db, r)
	})
}

func saveAlertRule(db *gorm.DB, r *models.AlertRule) error {
	if r.ID == 0 {
		if err := db.Omit("created_at", "updated_at").Create(r).Error; err != nil {
			return fmt.Errorf("create alert rule %q: %w", r.Name, conflict(err))
		}
		return nil
	}
	res := db.Model(&models.AlertRule{}).Where("id = ?", r.ID).Updates(map[string]any{
		"name": r.Name, "event": r.Event, "scope": r.Scope, "definition_id": r.DefinitionID, "schedule_id": r.ScheduleID,
		"queue": r.Queue, "workflow_id": r.WorkflowID, "channel_id": r.ChannelID, "throttle_seconds": r.ThrottleSeconds, "params": r.Params, "enabled": r.Enabled,
	})
	if res.Error != nil {
		return fmt.Errorf("update alert rule %q: %w", r.Name, conflict(res.Error))
	}
	if res.RowsAffected == 0 {
		var n int64
		if err := db.Model(&models.AlertRule{}).Where("id = ?", r.ID).Count(&n).Error; err != nil || n == 0 {
			return fmt.Errorf("update alert rule %d: %w", r.ID, chimedb.ErrNotFound)
		}
	}
	return nil
}

// DeleteAlertRule implements chimedb.AlertStore. The rule's alerts stay,
// as history.
func (s *Store) DeleteAlertRule(ctx context.Context, id int64) error {
	var res *gorm.DB
	err := s.audited(ctx, func(tx *gorm.DB) error {
		res = tx.Exec("DELETE FROM alert_rules WHERE id = ?", id)
		return res.Error
	})
	if err != nil {
		return fmt.Errorf("delete alert rule %d: %w", id, err)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("alert rule %d: %w", id, chimedb.ErrNotFound)
	}
	return nil
}

// AlertJobs implements chimedb.AlertStore.
func (s *Store) AlertJobs(ctx context.Context, q *chimedb.AlertJobQuery) ([]models.Job, error) {
	db := s.db.WithContext(ctx).Model(&models.Job{})
	if len(q.Statuses) > 0 {
		db = db.Where("status IN ?", q.Statuses)
	}
	if q.ScheduleID != 0 {
		db = db.Where("schedule_id = ?", q.ScheduleID)
	}
	if q.DefinitionID != 0 {
		db = db.Where("job_definition_id = ?", q.DefinitionID)
	}
	if q.Queue != "" {
		// A job runs in its own queue, else its schedule's, else its
		// definition's (as the claim reads them), else the default one.
		db = db.Where(`COALESCE(NULLIF(jobs.queue, ''), (SELECT NULLIF(s.queue, '') FROM schedules s WHERE s.id = jobs.schedule_id),
			(SELECT NULLIF(d.queue, '') FROM job_definitions d WHERE d.id = jobs.job_definition_id), ?) = ?`, models.DefaultQueue, q.Queue)
	}
	if q.CatchUp {
		db = db.Where("catch_up = ? AND missed_fires > 0", true)
	}
	if q.MinRecoveries > 0 {
		db = db.Where("recoveries >= ?", q.MinRecoveries)
	}
	if q.WorkflowID != 0 {
		db = db.Where("jobs.run_id IN (SELECT r.id FROM workflow_runs r WHERE r.workflow_id = ?)", q.WorkflowID)
	}
	if !q.FinishedFrom.IsZero() {
		db = db.Where("finished_at >= ?", DBTime(q.FinishedFrom))
	}
	if !q.FinishedTo.IsZero() {
		db = db.Where("finished_at < ?", DBTime(q.FinishedTo))
	}
	if !q.ScheduledFrom.IsZero() {
		db = db.Where("scheduled_at >= ?", DBTime(q.ScheduledFrom))
	}
	if !q.ScheduledTo.IsZero() {
		db = db.Where("scheduled_at < ?", DBTime(q.ScheduledTo))
	}
	if !q.RunAtTo.IsZero() {
		db = db.Where("run_at <= ?", DBTime(q.RunAtTo))
	}
	switch q.Order {
	case chimedb.ByFinishedAtDesc:
		db = db.Order("finished_at DESC, id DESC")
	case chimedb.ByRunAt:
		db = db.Order("run_at, id")
	case chimedb.ByStartedAt:
		db = db.Order("started_at, id")
	default:
		db = db.Order("finished_at, id")
	}
	limit := q.Limit
	if limit <= 0 || limit > chimedb.MaxAlertJobs {
		limit = chimedb.MaxAlertJobs
	}
	jobs, _, err := readJobs(db.Limit(limit), false)
	if err != nil {
		return nil, fmt.Errorf("read jobs for alerts: %w", err)
	}
	return jobs, nil
}

// RecordAlerts implements chimedb.AlertStore.
func (s *Store) RecordAlerts(ctx context.Context, rs []chimedb.AlertRecord) (int, error) {
	var n int
	err := s.InTx(ctx, func(tx *gorm.DB) error {
		n = 0
		for i := range rs {
			ok, err := s.recordAlert(tx, &rs[i])
			if err != nil {
				return err
			}
			if ok {
				n++
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("record %d alerts: %w", len(rs), err)
	}
	return n, nil
}

func (s *Store) recordAlert(tx *gorm.DB, r *chimedb.AlertRecord) (bool, error) {
	a := r.Alert
	at := DBTime(r.At)
	var seen int64
	if err := tx.Model(&models.Alert{}).Where("dedupe_key = ?", a.DedupeKey).Count(&seen).Error; err != nil {
		return false, err
	}
	if seen > 0 {
		return false, nil
	}
	a.Status = models.AlertPending
	if a.State == "" {
		a.State = models.AlertFiring
	}
	if a.State == models.AlertFiring && r.ThrottleSeconds > 0 {
		var last []models.Alert
		if err := tx.Select("id, created_at").Where("rule_id = ? AND subject = ? AND state = ? AND status <> ?",
			a.RuleID, a.Subject, models.AlertFiring, models.AlertSuppressed).Order("id DESC").Limit(1).Find(&last).Error; err != nil {
			return false, err
		}
		if len(last) == 1 && last[0].CreatedAt.After(at.Add(-time.Duration(r.ThrottleSeconds)*time.Second)) {
			a.Status = models.AlertSuppressed
		} else {
			q := tx.Model(&models.Alert{}).Where("rule_id = ? AND subject = ? AND status = ?", a.RuleID, a.Subject, models.AlertSuppressed)
			if len(last) == 1 {
				q = q.Where("id > ?", last[0].ID)
			}
			var sup int64
			if err := q.Count(&sup).Error; err != nil {
				return false, err
			}
			a.Suppressed = int(min(sup, 1<<30))
		}
	}
	a.ID, a.Attempts, a.CreatedAt = 0, 0, at
	if len(a.Summary) > 2048 {
		a.Summary = strings.ToValidUTF8(a.Summary[:2045], "") + "..."
	}
	res := tx.Exec(`INSERT INTO alerts (rule_id, channel_id, event, state, subject, dedupe_key, summary, payload, suppressed, status, created_at)
		VALUES (?,?,?,?,?,?,?,?,?,?,?)`+s.insertIgnoreDupOn("alerts"),
		a.RuleID, a.ChannelID, a.Event, a.State, a.Subject, a.DedupeKey, a.Summary, a.Payload, a.Suppressed, a.Status, at)
	if res.Error != nil {
		return false, res.Error
	}
	if res.RowsAffected > 0 && r.Resolves != "" {
		if err := tx.Exec("UPDATE alerts SET resolved_at = ? WHERE dedupe_key = ? AND resolved_at IS NULL", at, r.Resolves).Error; err != nil {
			return false, err
		}
	}
	return res.RowsAffected > 0, nil
}

// insertIgnoreDupOn is insertIgnoreDup for table.
func (s *Store) insertIgnoreDupOn(table string) string {
	if s.dialect == MySQL {
		return " ON DUPLICATE KEY UPDATE id = " + table + ".id"
	}
	return " ON CONFLICT DO NOTHING"
}

// OpenAlerts implements chimedb.AlertStore.
func (s *Store) OpenAlerts(ctx context.Context, events []models.AlertEvent, since time.Time, limit int) ([]models.Alert, error) {
	rows, err := s.db.WithContext(ctx).Model(&models.Alert{}).
		Where("state = ? AND resolved_at IS NULL AND event IN ? AND created_at >= ?", models.AlertFiring, events, DBTime(since)).
		Order("id").Limit(max(limit, 1)).Rows()
	if err != nil {
		return nil, fmt.Errorf("read open alerts: %w", err)
	}
	out, _, err := readChecked(rows, "alerts", columnField[models.Alert], nil, nil)
	if err != nil {
		return nil, fmt.Errorf("read open alerts: %w", err)
	}
	return out, nil
}

// ClaimAlerts implements chimedb.AlertStore, as ClaimNotifications.
func (s *Store) ClaimAlerts(ctx context.Context, p *models.NotificationClaim) ([]models.Alert, error) {
	// The database's clock inside the statements: on SQLite, where times
	// compare as text, next_attempt_at's default and the lease are then
	// written in the same form as what they are compared with.
	nowExpr, nowArg := s.dbNowExpr(0)
	leaseExpr, leaseArg := s.dbNowExpr(p.Lease)
	db := s.db.WithContext(ctx)
	rows, err := db.Model(&models.Alert{}).Select("id, attempts").
		Where("status = ? AND next_attempt_at <= "+nowExpr, models.AlertPending, nowArg).
		Order("next_attempt_at, id").Limit(max(p.Limit, 1)).Rows()
	if err != nil {
		return nil, fmt.Errorf("find due alerts: %w", err)
	}
	due, bad, err := readChecked(rows, "alerts", columnField[models.Alert], nil, nil)
	if err != nil {
		return nil, fmt.Errorf("find due alerts: %w", err)
	}
	var ids []int64
	for _, a := range due {
		if a.Attempts < 0 || a.Attempts >= 1<<30 {
			bad = append(bad, badRow{id: a.ID, reason: fmt.Sprintf("alerts.attempts: %d is out of range", a.Attempts)})
			continue
		}
		res := db.Exec(`UPDATE alerts SET attempts = attempts + 1, node_id = ?, next_attempt_at = `+leaseExpr+`
			WHERE id = ? AND status = ? AND attempts = ?`, p.NodeID, leaseArg, a.ID, models.AlertPending, a.Attempts)
		if res.Error != nil {
			return nil, fmt.Errorf("claim alert %d: %w", a.ID, res.Error)
		}
		if res.RowsAffected == 1 {
			ids = append(ids, a.ID)
		}
	}
	if err := s.failBadAlerts(ctx, bad); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err = db.Model(&models.Alert{}).Where("id IN ?", ids).Order("id").Rows()
	if err != nil {
		return nil, fmt.Errorf("read claimed alerts: %w", err)
	}
	out, bad, err := readChecked(rows, "alerts", columnField[models.Alert], nil, nil)
	if err != nil {
		return nil, fmt.Errorf("read claimed alerts: %w", err)
	}
	return out, s.failBadAlerts(ctx, bad)
}

func (s *Store) failBadAlerts(ctx context.Context, bad []badRow) error {
	for _, b := range bad {
		err := s.db.WithContext(ctx).Exec(`UPDATE alerts SET status = ?, last_error = ? WHERE id = ? AND status = ?`,
			models.AlertFailed, "the alert cannot be sent as it is (written without chime?): "+b.reason, b.id, models.AlertPending).Error
		if err != nil {
			return fmt.Errorf("fail alert %d: %w", b.id, err)
		}
		s.log.WithField("alert_id", b.id).WithField("reason", b.reason).Error("the alerts outbox failed an alert that cannot be sent as it is")
	}
	return nil
}

// FinishAlert implements chimedb.AlertStore, as FinishNotification.
func (s *Store) FinishAlert(ctx context.Context, r *models.NotificationResult) (bool, error) {
	now, arg := s.dbNowExpr(0)
	var q string
	var args []any
	switch {
	case r.Sent:
		q, args = "UPDATE alerts SET status = ?, last_error = NULL, sent_at = "+now, []any{models.AlertSent, arg}
	case r.RetryIn > 0:
		next, narg := s.dbNowExpr(r.RetryIn)
		q, args = "UPDATE alerts SET last_error = ?, next_attempt_at = "+next, []any{r.Error, narg}
	default:
		q, args = "UPDATE alerts SET status = ?, last_error = ?", []any{models.AlertFailed, r.Error}
	}
	res := s.db.WithContext(ctx).Exec(q+" WHERE id = ? AND status = ? AND attempts = ?", append(args, r.ID, models.AlertPending, r.Attempts)...)
	if res.Error != nil {
		return false, fmt.Errorf("record the try of alert %d: %w", r.ID, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// ListAlerts implements chimedb.AlertStore.
func (s *Store) ListAlerts(ctx context.Context, p *chimedb.AdminListParams) ([]models.Alert, error) {
	q := s.db.WithContext(ctx).Model(&models.Alert{})
	if p.Status != "" {
		q = q.Where("status = ?", p.Status)
	}
	if p.BeforeID > 0 {
		q = q.Where("id < ?", p.BeforeID)
	}
	rows, err := q.Order("id DESC").Limit(max(p.Limit, 1)).Rows()
	if err != nil {
		return nil, fmt.Errorf("list alerts: %w", err)
	}
	out, _, err := readChecked(rows, "alerts", columnField[models.Alert], nil, func(a *models.Alert, reason string) { a.Invalid = reason })
	if err != nil {
		return nil, fmt.Errorf("list alerts: %w", err)
	}
	return out, nil
}

var _ chimedb.AlertStore = (*Store)(nil)

// LeaseChanges implements chimedb.AlertStore.
func (s *Store) LeaseChanges(ctx context.Context, name string, since time.Time, limit int) ([]models.LeaseChange, error) {
	if limit <= 0 || limit > chimedb.MaxAlertJobs {
		limit = chimedb.MaxAlertJobs
	}
	var out []models.LeaseChange
	if err := s.db.WithContext(ctx).Where("name = ? AND changed_at >= ?", name, DBTime(since)).Order("changed_at, id").
		Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("read the changes of lease %q: %w", name, err)
	}
	return out, nil
}

// PruneLeaseChanges implements chimedb.AlertStore.
func (s *Store) PruneLeaseChanges(ctx context.Context, before time.Time) (int64, error) {
	res := s.db.WithContext(ctx).Exec("DELETE FROM lease_changes WHERE changed_at < ?", DBTime(before))
	if res.Error != nil {
		return 0, fmt.Errorf("delete old lease changes: %w", res.Error)
	}
	return res.RowsAffected, nil
}

// AlertRuns implements chimedb.AlertStore.
func (s *Store) AlertRuns(ctx context.Context, q *chimedb.AlertRunQuery) ([]chimedb.AlertRun, error) {
	db := s.db.WithContext(ctx).Model(&models.WorkflowRun{})
	if len(q.Statuses) > 0 {
		db = db.Where("status IN ?", q.Statuses)
	}
	if q.WorkflowID != 0 {
		db = db.Where("workflow_id = ?", q.WorkflowID)
	}
	if !q.FinishedFrom.IsZero() {
		db = db.Where("finished_at >= ?", DBTime(q.FinishedFrom))
	}
	if !q.FinishedTo.IsZero() {
		db = db.Where("finished_at < ?", DBTime(q.FinishedTo))
	}
	limit := q.Limit
	if limit <= 0 || limit > chimedb.MaxAlertJobs {
		limit = chimedb.MaxAlertJobs
	}
	var runs []models.WorkflowRun
	if err := db.Order("finished_at, id").Limit(limit).Find(&runs).Error; err != nil {
		return nil, fmt.Errorf("read workflow runs for alerts: %w", err)
	}
	out := make([]chimedb.AlertRun, len(runs))
	ids := make([]int64, 0, len(runs))
	for i, r := range runs {
		out[i].WorkflowRun = r
		ids = append(ids, r.WorkflowID)
	}
	if len(ids) == 0 {
		return out, nil
	}
	var wfs []models.Workflow
	if err := s.db.WithContext(ctx).Select("id, name").Where("id IN ?", ids).Find(&wfs).Error; err != nil {
		return nil, fmt.Errorf("read workflow names for alerts: %w", err)
	}
	names := map[int64]string{}
	for _, w := range wfs {
		names[w.ID] = w.Name
	}
	for i := range out {
		out[i].WorkflowName = names[out[i].WorkflowID]
	}
	return out, nil
}
