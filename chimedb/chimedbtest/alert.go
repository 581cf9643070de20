package chimedbtest

import (
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

func alertMethods() []method {
	return []method{
		{"AlertStore.ListAlertChannels", listAlertChannelsCases},
		{"AlertStore.SaveAlertChannel", saveAlertChannelCases},
		{"AlertStore.DeleteAlertChannel", deleteAlertChannelCases},
		{"AlertStore.ListAlertRules", listAlertRulesCases},
		{"AlertStore.SaveAlertRule", saveAlertRuleCases},
		{"AlertStore.DeleteAlertRule", deleteAlertRuleCases},
		{"AlertStore.AlertJobs", alertJobsCases},
		{"AlertStore.RecordAlerts", recordAlertsCases},
		{"AlertStore.OpenAlerts", openAlertsCases},
		{"AlertStore.ClaimAlerts", claimAlertsCases},
		{"AlertStore.FinishAlert", finishAlertCases},
		{"AlertStore.ListAlerts", listAlertsCases},
		{"AlertStore.LeaseChanges", leaseChangesCases},
		{"AlertStore.AlertRuns", alertRunsCases},
		{"AlertStore.PruneLeaseChanges", pruneLeaseChangesCases},
	}
}

// alertStore is the case's AlertStore; it skips the case when the store
// has none.
func (e *env) alertStore() chimedb.AlertStore {
	e.t.Helper()
	if e.Alert == nil {
		e.t.Skip("no AlertStore")
	}
	return e.Alert
}

func (e *env) channel() *models.AlertChannel {
	e.t.Helper()
	c := &models.AlertChannel{Name: e.name("chan"), Kind: models.ChannelWebhook, URL: "https://example.com/hook?token=s3cret",
		SigningKey: "key", TimeoutSeconds: 10, Enabled: true}
	require.NoError(e.t, e.alertStore().SaveAlertChannel(e.ctx, c))
	require.NotZero(e.t, c.ID)
	return c
}

func (e *env) rule(channel int64, mods ...func(r *models.AlertRule)) *models.AlertRule {
	e.t.Helper()
	r := &models.AlertRule{Name: e.name("rule"), Event: models.EventJobFailed, Scope: models.ScopeAll, ChannelID: channel, Enabled: true}
	for _, m := range mods {
		m(r)
	}
	require.NoError(e.t, e.alertStore().SaveAlertRule(e.ctx, r))
	return r
}

func (e *env) record(rs ...chimedb.AlertRecord) int {
	e.t.Helper()
	n, err := e.alertStore().RecordAlerts(e.ctx, rs)
	require.NoError(e.t, err)
	return n
}

func alertRecord(rule, channel int64, key string, at time.Time) chimedb.AlertRecord {
	return chimedb.AlertRecord{At: at, Alert: models.Alert{RuleID: rule, ChannelID: channel, Event: models.EventJobFailed,
		Subject: "schedule:1", DedupeKey: key, Summary: "s", Payload: models.JSON(`{"a":1}`)}}
}

var listAlertChannelsCases = []tcase{
	{"returns channels by name, a bad row invalid with the reason", func(e *env) {
		a := e.channel()
		e.exec("INSERT INTO alert_channels (name, kind, url, timeout_seconds) VALUES (?, ?, ?, ?)", "aaa-bad", "pager", "ftp://x", 0)
		got, err := e.alertStore().ListAlertChannels(e.ctx)
		require.NoError(e.t, err)
		require.Len(e.t, got, 2)
		require.Equal(e.t, "aaa-bad", got[0].Name)
		require.Contains(e.t, got[0].Invalid, "kind")
		require.Contains(e.t, got[0].Invalid, "timeout_seconds")
		require.Equal(e.t, a.Name, got[1].Name)
		require.Empty(e.t, got[1].Invalid)
		require.Equal(e.t, a.URL, got[1].URL, "the store returns the secret; the doors hide it")
	}},
}

var saveAlertChannelCases = []tcase{
	{"creates, updates, refuses a duplicate name and a missing id", func(e *env) {
		a := e.channel()
		a.URL = "https://example.com/other"
		require.NoError(e.t, e.alertStore().SaveAlertChannel(e.ctx, a))
		got, err := e.alertStore().ListAlertChannels(e.ctx)
		require.NoError(e.t, err)
		require.Equal(e.t, "https://example.com/other", got[0].URL)
		b := e.channel()
		b.Name = a.Name
		require.ErrorIs(e.t, e.alertStore().SaveAlertChannel(e.ctx, b), chimedb.ErrConflict)
		missing := *a
		missing.ID, missing.Name = a.ID+1000, "missing"
		require.ErrorIs(e.t, e.alertStore().SaveAlertChannel(e.ctx, &missing), chimedb.ErrNotFound)
	}},
}

var deleteAlertChannelCases = []tcase{
	{"refuses a channel a rule names, deletes one none does", func(e *env) {
		a := e.channel()
		r := e.rule(a.ID)
		require.ErrorIs(e.t, e.alertStore().DeleteAlertChannel(e.ctx, a.ID), chimedb.ErrInUse)
		require.NoError(e.t, e.alertStore().DeleteAlertRule(e.ctx, r.ID))
		require.NoError(e.t, e.alertStore().DeleteAlertChannel(e.ctx, a.ID))
		require.ErrorIs(e.t, e.alertStore().DeleteAlertChannel(e.ctx, a.ID), chimedb.ErrNotFound)
	}},
}

var listAlertRulesCases = []tcase{
	{"a rule whose params, definition or channel are bad is invalid with the reason", func(e *env) {
		c := e.channel()
		d := e.definition()
		ok := e.rule(c.ID, func(r *models.AlertRule) { r.Name = "a-ok"; r.Scope = models.ScopeDefinition; r.DefinitionID = &d.ID })
		e.exec("INSERT INTO alert_rules (name, event, scope, schedule_id, channel_id, params) VALUES (?, ?, ?, ?, ?, ?)",
			"b-deadline", "deadline", "schedule", int64(99999), c.ID, `{"by":"25:00","time_zone":"Mars/Olympus"}`)
		e.exec("INSERT INTO alert_rules (name, event, scope, channel_id, throttle_seconds) VALUES (?, ?, ?, ?, ?)",
			"c-nochan", "job_failed", "all", c.ID+1000, -1)
		got, err := e.alertStore().ListAlertRules(e.ctx)
		require.NoError(e.t, err)
		require.Len(e.t, got, 3)
		require.Equal(e.t, ok.Name, got[0].Name)
		require.Empty(e.t, got[0].Invalid)
		require.Contains(e.t, got[1].Invalid, "25:00")
		require.Contains(e.t, got[1].Invalid, "Mars/Olympus")
		require.Contains(e.t, got[1].Invalid, "schedule 99999 does not exist")
		require.Contains(e.t, got[2].Invalid, "channel")
		require.Contains(e.t, got[2].Invalid, "throttle_seconds")
		require.NoError(e.t, e.admin.DeleteDefinition(e.ctx, d.ID))
		got, err = e.alertStore().ListAlertRules(e.ctx)
		require.NoError(e.t, err)
		require.Contains(e.t, got[0].Invalid, "does not exist", "a rule of a deleted definition")
	}},
}

var saveAlertRuleCases = []tcase{
	{"creates and updates, refuses a duplicate name", func(e *env) {
		c := e.channel()
		r := e.rule(c.ID)
		r.ThrottleSeconds = 60
		r.Params = models.JSON(`{"max_seconds":5}`)
		r.Event = models.EventSlow
		require.NoError(e.t, e.alertStore().SaveAlertRule(e.ctx, r))
		got, err := e.alertStore().ListAlertRules(e.ctx)
		require.NoError(e.t, err)
		require.Equal(e.t, 60, got[0].ThrottleSeconds)
		require.Equal(e.t, models.EventSlow, got[0].Event)
		require.JSONEq(e.t, `{"max_seconds":5}`, string(got[0].Params))
		dup := &models.AlertRule{Name: r.Name, Event: models.EventJobFailed, Scope: models.ScopeAll, ChannelID: c.ID}
		require.ErrorIs(e.t, e.alertStore().SaveAlertRule(e.ctx, dup), chimedb.ErrConflict)
	}},
}

var deleteAlertRuleCases = []tcase{
	{"deletes, then not found", func(e *env) {
		r := e.rule(e.channel().ID)
		require.NoError(e.t, e.alertStore().DeleteAlertRule(e.ctx, r.ID))
		require.ErrorIs(e.t, e.alertStore().DeleteAlertRule(e.ctx, r.ID), chimedb.ErrNotFound)
	}},
}

var alertJobsCases = []tcase{
	{"filters by status, definition, finished and due times, in order", func(e *env) {
		s := e.alertStore()
		d, other := e.definition(), e.definition()
		now := e.now()
		a, b, c := e.job(d.ID), e.job(d.ID), e.job(other.ID)
		t1, t2 := now.Add(-2*time.Minute), now.Add(-time.Minute)
		e.setJob(a.ID, jobState{status: models.JobFailed, finished: &t2})
		e.setJob(b.ID, jobState{status: models.JobSucceeded, finished: &t1})
		e.setJob(c.ID, jobState{status: models.JobFailed, finished: &t1})
		got, err := s.AlertJobs(e.ctx, &chimedb.AlertJobQuery{FinishedFrom: now.Add(-time.Hour), FinishedTo: now})
		require.NoError(e.t, err)
		require.Equal(e.t, []int64{b.ID, c.ID, a.ID}, ids(got))
		got, err = s.AlertJobs(e.ctx, &chimedb.AlertJobQuery{DefinitionID: d.ID, Order: chimedb.ByFinishedAtDesc})
		require.NoError(e.t, err)
		require.Equal(e.t, []int64{a.ID, b.ID}, ids(got))
		got, err = s.AlertJobs(e.ctx, &chimedb.AlertJobQuery{Statuses: []models.JobStatus{models.JobFailed}, FinishedFrom: t2})
		require.NoError(e.t, err)
		require.Equal(e.t, []int64{a.ID}, ids(got))
		p := e.job(d.ID)
		got, err = s.AlertJobs(e.ctx, &chimedb.AlertJobQuery{Statuses: []models.JobStatus{models.JobPending}, RunAtTo: now, Order: chimedb.ByRunAt})
		require.NoError(e.t, err)
		require.Equal(e.t, []int64{p.ID}, ids(got))
		got, err = s.AlertJobs(e.ctx, &chimedb.AlertJobQuery{Statuses: []models.JobStatus{models.JobPending}, RunAtTo: now.Add(-time.Hour)})
		require.NoError(e.t, err)
		require.Empty(e.t, got)
	}},
}

func ids(jobs []models.Job) []int64 {
	out := make([]int64, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

var recordAlertsCases = []tcase{
	{"records an occurrence once, throttles per rule and subject, counts what it suppressed", func(e *env) {
		c := e.channel()
		r := e.rule(c.ID)
		at := e.now()
		require.Equal(e.t, 1, e.record(alertRecord(r.ID, c.ID, "k1", at)))
		require.Zero(e.t, e.record(alertRecord(r.ID, c.ID, "k1", at)), "the same occurrence twice")
		thr := func(key string, at time.Time) chimedb.AlertRecord {
			a := alertRecord(r.ID, c.ID, key, at)
			a.ThrottleSeconds = 600
			return a
		}
		require.Equal(e.t, 2, e.record(thr("k2", at.Add(time.Minute)), thr("k3", at.Add(2*time.Minute))))
		require.Equal(e.t, 1, e.record(thr("k4", at.Add(11*time.Minute))))
		got, err := e.alertStore().ListAlerts(e.ctx, &chimedb.AdminListParams{Limit: 10})
		require.NoError(e.t, err)
		require.Len(e.t, got, 4)
		require.Equal(e.t, "k4", got[0].DedupeKey)
		require.Equal(e.t, models.AlertPending, got[0].Status)
		require.Equal(e.t, 2, got[0].Suppressed)
		require.Equal(e.t, models.AlertSuppressed, got[1].Status)
		require.Equal(e.t, models.AlertSuppressed, got[2].Status)
	}},
	{"a resolved alert marks the firing one resolved", func(e *env) {
		c := e.channel()
		r := e.rule(c.ID)
		at := e.now()
		e.record(alertRecord(r.ID, c.ID, "f", at))
		res := alertRecord(r.ID, c.ID, "f:resolved", at.Add(time.Minute))
		res.Alert.State, res.Resolves = models.AlertResolved, "f"
		require.Equal(e.t, 1, e.record(res))
		got, err := e.alertStore().ListAlerts(e.ctx, &chimedb.AdminListParams{Limit: 10})
		require.NoError(e.t, err)
		require.Equal(e.t, models.AlertResolved, got[0].State)
		require.NotNil(e.t, got[1].ResolvedAt)
	}},
}

var openAlertsCases = []tcase{
	{"returns firing alerts of the events not yet resolved", func(e *env) {
		c := e.channel()
		r := e.rule(c.ID)
		at := e.now()
		a := alertRecord(r.ID, c.ID, "open", at)
		a.Alert.Event = models.EventDeadline
		b := alertRecord(r.ID, c.ID, "closed", at)
		b.Alert.Event = models.EventDeadline
		res := alertRecord(r.ID, c.ID, "closed:resolved", at)
		res.Alert.Event, res.Alert.State, res.Resolves = models.EventDeadline, models.AlertResolved, "closed"
		e.record(a, b, res, alertRecord(r.ID, c.ID, "other-event", at))
		got, err := e.alertStore().OpenAlerts(e.ctx, []models.AlertEvent{models.EventDeadline}, at.Add(-time.Hour), 10)
		require.NoError(e.t, err)
		require.Len(e.t, got, 1)
		require.Equal(e.t, "open", got[0].DedupeKey)
		got, err = e.alertStore().OpenAlerts(e.ctx, []models.AlertEvent{models.EventDeadline}, at.Add(time.Hour), 10)
		require.NoError(e.t, err)
		require.Empty(e.t, got)
	}},
}

var claimAlertsCases = []tcase{
	{"claims each due alert once, not suppressed ones, and fails an unreadable row", func(e *env) {
		c := e.channel()
		r := e.rule(c.ID)
		at := e.now()
		e.record(alertRecord(r.ID, c.ID, "a", at), alertRecord(r.ID, c.ID, "b", at))
		e.exec("UPDATE alerts SET status = ? WHERE dedupe_key = ?", "suppressed", "b")
		e.exec("INSERT INTO alerts (rule_id, channel_id, event, subject, dedupe_key, attempts) VALUES (?,?,?,?,?,?)",
			r.ID, c.ID, "job_failed", "x", "bad", -5)
		p := &models.NotificationClaim{NodeID: "n1", Limit: 10, Lease: time.Minute}
		got, err := e.alertStore().ClaimAlerts(e.ctx, p)
		require.NoError(e.t, err)
		require.Len(e.t, got, 1)
		require.Equal(e.t, "a", got[0].DedupeKey)
		require.Equal(e.t, 1, got[0].Attempts)
		require.Equal(e.t, "n1", got[0].NodeID)
		again, err := e.alertStore().ClaimAlerts(e.ctx, p)
		require.NoError(e.t, err)
		require.Empty(e.t, again, "claimed: not due until the lease ends")
		failed, err := e.alertStore().ListAlerts(e.ctx, &chimedb.AdminListParams{Limit: 10, Status: "failed"})
		require.NoError(e.t, err)
		require.Len(e.t, failed, 1)
		require.Contains(e.t, *failed[0].LastError, "attempts")
	}},
}

var finishAlertCases = []tcase{
	{"records sent, retry and failed, only for the current claim", func(e *env) {
		c := e.channel()
		r := e.rule(c.ID)
		e.record(alertRecord(r.ID, c.ID, "a", e.now()))
		p := &models.NotificationClaim{NodeID: "n1", Limit: 10, Lease: time.Minute}
		got, err := e.alertStore().ClaimAlerts(e.ctx, p)
		require.NoError(e.t, err)
		require.Len(e.t, got, 1)
		mine, err := e.alertStore().FinishAlert(e.ctx, &models.NotificationResult{ID: got[0].ID, Attempts: 0, Sent: true})
		require.NoError(e.t, err)
		require.False(e.t, mine, "a stale attempts count changes nothing")
		mine, err = e.alertStore().FinishAlert(e.ctx, &models.NotificationResult{ID: got[0].ID, Attempts: 1, Error: "boom", RetryIn: time.Millisecond})
		require.NoError(e.t, err)
		require.True(e.t, mine)
		time.Sleep(5 * time.Millisecond)
		got, err = e.alertStore().ClaimAlerts(e.ctx, p)
		require.NoError(e.t, err)
		require.Len(e.t, got, 1)
		require.Equal(e.t, "boom", *got[0].LastError)
		mine, err = e.alertStore().FinishAlert(e.ctx, &models.NotificationResult{ID: got[0].ID, Attempts: 2, Sent: true})
		require.NoError(e.t, err)
		require.True(e.t, mine)
		all, err := e.alertStore().ListAlerts(e.ctx, &chimedb.AdminListParams{Limit: 10})
		require.NoError(e.t, err)
		require.Equal(e.t, models.AlertSent, all[0].Status)
		require.NotNil(e.t, all[0].SentAt)
	}},
}

var listAlertsCases = []tcase{
	{"pages newest first and filters by status", func(e *env) {
		c := e.channel()
		r := e.rule(c.ID)
		at := e.now()
		e.record(alertRecord(r.ID, c.ID, "a", at), alertRecord(r.ID, c.ID, "b", at), alertRecord(r.ID, c.ID, "c", at))
		first, err := e.alertStore().ListAlerts(e.ctx, &chimedb.AdminListParams{Limit: 2})
		require.NoError(e.t, err)
		require.Len(e.t, first, 2)
		require.Equal(e.t, "c", first[0].DedupeKey)
		rest, err := e.alertStore().ListAlerts(e.ctx, &chimedb.AdminListParams{Limit: 2, BeforeID: first[1].ID})
		require.NoError(e.t, err)
		require.Len(e.t, rest, 1)
		require.Equal(e.t, "a", rest[0].DedupeKey)
		none, err := e.alertStore().ListAlerts(e.ctx, &chimedb.AdminListParams{Limit: 2, Status: "sent"})
		require.NoError(e.t, err)
		require.Empty(e.t, none)
	}},
}

// takeLease writes the lease row as a node, or an admin, would: the
// triggers on leases record the changes of holder.
func (e *env) takeLease(name, holder string) {
	e.t.Helper()
	e.exec("UPDATE leases SET holder = ? WHERE name = ?", holder, name)
}

var leaseChangesCases = []tcase{
	{"records each new holder, not renewals or releases, oldest first", func(e *env) {
		e.exec("INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?)", "scheduler", "a", e.now().Add(time.Minute))
		e.exec("INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?)", "other", "", e.now())
		e.takeLease("scheduler", "a")
		e.exec("UPDATE leases SET expires_at = ? WHERE name = ?", e.now().Add(2*time.Minute), "scheduler")
		e.takeLease("scheduler", "b")
		e.takeLease("scheduler", "")
		e.takeLease("scheduler", "a")
		got, err := e.alertStore().LeaseChanges(e.ctx, "scheduler", time.Time{}, 0)
		require.NoError(e.t, err)
		var seen []string
		for _, c := range got {
			seen = append(seen, c.Previous+">"+c.Holder)
			require.WithinDuration(e.t, e.now(), c.ChangedAt, time.Minute, "changed_at is the database's now")
		}
		require.Equal(e.t, []string{">a", "a>b", ">a"}, seen)
		last, err := e.alertStore().LeaseChanges(e.ctx, "scheduler", got[2].ChangedAt, 1)
		require.NoError(e.t, err)
		require.Len(e.t, last, 1)
		none, err := e.alertStore().LeaseChanges(e.ctx, "other", time.Time{}, 0)
		require.NoError(e.t, err)
		require.Empty(e.t, none, "a free lease created by nobody is no change")
	}},
}

var pruneLeaseChangesCases = []tcase{
	{"deletes the changes before a time", func(e *env) {
		e.exec("INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?)", "scheduler", "a", e.now())
		e.takeLease("scheduler", "b")
		e.exec("UPDATE lease_changes SET changed_at = ? WHERE holder = ?", e.now().Add(-10*24*time.Hour), "a")
		n, err := e.alertStore().PruneLeaseChanges(e.ctx, e.now().Add(-24*time.Hour))
		require.NoError(e.t, err)
		require.EqualValues(e.t, 1, n)
		got, err := e.alertStore().LeaseChanges(e.ctx, "scheduler", time.Time{}, 0)
		require.NoError(e.t, err)
		require.Len(e.t, got, 1)
		require.Equal(e.t, "b", got[0].Holder)
	}},
}

var alertRunsCases = []tcase{
	{"returns the runs finished in a window, by status and workflow, with the workflow's name", func(e *env) {
		now := e.now()
		// Explicit ids: the suite reads rows only through the interfaces.
		wf, other := int64(901), int64(902)
		e.exec("INSERT INTO workflows (id, name, failure_policy) VALUES (?, ?, ?), (?, ?, ?)",
			wf, "nightly", models.FailStop, other, "other", models.FailStop)
		add := func(w int64, status models.RunStatus, finished *time.Time) {
			e.exec("INSERT INTO workflow_runs (workflow_id, status, generation, finished_at) VALUES (?, ?, 0, ?)", w, status, finished)
		}
		at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
		add(wf, models.RunFailed, at(-time.Minute))
		add(wf, models.RunFailed, at(-2*time.Hour))
		add(other, models.RunFailed, at(-30*time.Second))
		add(wf, models.RunSucceeded, at(-10*time.Second))
		add(wf, models.RunRunning, nil)
		got, err := e.alertStore().AlertRuns(e.ctx, &chimedb.AlertRunQuery{Statuses: []models.RunStatus{models.RunFailed},
			FinishedFrom: now.Add(-time.Hour), FinishedTo: now.Add(time.Second)})
		require.NoError(e.t, err)
		require.Len(e.t, got, 2)
		require.Equal(e.t, "nightly", got[0].WorkflowName, "oldest first")
		require.Equal(e.t, "other", got[1].WorkflowName)
		mine, err := e.alertStore().AlertRuns(e.ctx, &chimedb.AlertRunQuery{WorkflowID: wf, FinishedFrom: now.Add(-time.Hour), Limit: 1})
		require.NoError(e.t, err)
		require.Len(e.t, mine, 1)
		require.Equal(e.t, models.RunFailed, mine[0].Status)
	}},
}
