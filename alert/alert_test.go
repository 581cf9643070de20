package alert_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	dto "github.com/prometheus/client_model/go"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/alert"
	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/metrics"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/notify"
	"github.com/chimesched/chime/notify/smtptest"
	"github.com/chimesched/chime/store"
)

// fix is one database with a webhook channel to a receiver on loopback,
// an evaluator and a dispatcher on a fake clock.
type fix struct {
	t     *testing.T
	ctx   context.Context
	st    *store.Store
	clock *clockwork.FakeClock
	ev    *alert.Evaluator
	d     *alert.Dispatcher
	rcv   *receiver
	ch    models.AlertChannel
	n     int
}

func quiet() *logrus.Logger {
	l := logrus.New()
	l.SetLevel(logrus.PanicLevel)
	return l
}

func newFix(t *testing.T, st *store.Store, at time.Time) *fix {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	f := &fix{t: t, ctx: ctx, st: st, clock: clockwork.NewFakeClockAt(at)}
	f.rcv = newReceiver(t, "whsec-test-key", f.clock)
	f.ch = models.AlertChannel{Name: "hook", Kind: models.ChannelWebhook, URL: f.rcv.srv.URL + "/hook?token=s3cret",
		SigningKey: "whsec-test-key", TimeoutSeconds: 5, Enabled: true, Headers: models.JSON(`{"X-Team":"ops"}`)}
	require.NoError(t, st.SaveAlertChannel(ctx, &f.ch))
	f.ev = alert.NewEvaluator(st, &alert.EvaluatorConfig{Clock: f.clock, Logger: quiet()})
	f.d = alert.NewDispatcher(st, &alert.DispatcherConfig{NodeID: "n1", Clock: f.clock, Backoff: time.Millisecond,
		MaxBackoff: time.Millisecond, Logger: quiet()})
	return f
}

// rule creates a rule on the fixture's channel.
func (f *fix) rule(ev models.AlertEvent, mods ...func(r *models.AlertRule)) *models.AlertRule {
	f.t.Helper()
	f.n++
	r := &models.AlertRule{Name: fmt.Sprintf("r%d-%s", f.n, ev), Event: ev, Scope: models.ScopeAll, ChannelID: f.ch.ID, Enabled: true}
	for _, m := range mods {
		m(r)
	}
	_, err := r.ParsedParams()
	require.NoError(f.t, err)
	require.NoError(f.t, f.st.SaveAlertRule(f.ctx, r))
	return r
}

// pass evaluates once and delivers everything due; it returns how many
// alerts the evaluation recorded.
func (f *fix) pass() int {
	f.t.Helper()
	n, err := f.ev.Pass(f.ctx)
	require.NoError(f.t, err)
	f.deliver()
	return n
}

func (f *fix) deliver() {
	for range 20 {
		started := f.d.Pass(f.ctx)
		f.d.Wait()
		if started == 0 {
			return
		}
	}
}

// job inserts a job of def in state st.
func (f *fix) job(def int64, sched *int64, mods ...func(j *models.Job)) *models.Job {
	f.t.Helper()
	f.n++ // (schedule_id, scheduled_at) is unique
	at := store.DBTime(f.clock.Now().Add(-time.Minute - time.Duration(f.n)*time.Second))
	j := &models.Job{JobDefinitionID: def, ScheduleID: sched, ScheduledAt: at, RunAt: at, Status: models.JobPending, MaxAttempts: 1}
	for _, m := range mods {
		m(j)
	}
	require.NoError(f.t, f.st.DB().Create(j).Error)
	return j
}

func finished(status models.JobStatus, at time.Time, attempt int) func(j *models.Job) {
	return func(j *models.Job) {
		at = store.DBTime(at)
		start := at.Add(-10 * time.Second)
		j.Status, j.StartedAt, j.FinishedAt, j.Attempt = status, &start, &at, attempt
	}
}

func (f *fix) alerts() []models.Alert {
	f.t.Helper()
	as, err := f.st.ListAlerts(f.ctx, &chimedb.AdminListParams{Limit: 100})
	require.NoError(f.t, err)
	return as
}

// TestJobEvents: each job event reaches a real webhook receiver, signed
// and as documented, once, however often and by however many evaluators
// the jobs are judged.
func TestJobEvents(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		f := newFix(t, st, time.Now().Add(time.Minute))
		a := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "nightly", MaxAttempts: 3})
		b := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "adhoc"})
		every := 60
		s := models.Schedule{Name: "nightly-s", JobDefinitionID: a.ID, ScheduleType: models.ScheduleInterval, IntervalSeconds: &every,
			Timezone: "UTC", MisfirePolicy: models.MisfireFireOnce, Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive}
		require.NoError(t, st.Admin().CreateSchedule(f.ctx, &s))
		for _, ev := range []models.AlertEvent{models.EventJobFailed, models.EventRetriesExhausted, models.EventJobCanceled,
			models.EventCatchUp, models.EventJobRescued} {
			f.rule(ev)
		}
		f.rule(models.EventJobRecovered, func(r *models.AlertRule) { r.Scope, r.ScheduleID = models.ScopeSchedule, &s.ID })
		now := f.clock.Now()
		j1 := f.job(a.ID, &s.ID, finished(models.JobFailed, now.Add(-40*time.Second), 3), func(j *models.Job) {
			j.MaxAttempts = 3
			msg := "exit status 1"
			j.Error = &msg
		})
		j2 := f.job(a.ID, &s.ID, finished(models.JobSucceeded, now.Add(-30*time.Second), 1))
		f.job(b.ID, nil, finished(models.JobCanceled, now.Add(-25*time.Second), 1))
		f.job(a.ID, &s.ID, finished(models.JobSucceeded, now.Add(-20*time.Second), 1), func(j *models.Job) {
			j.CatchUp, j.MissedFires = true, 4
		})
		f.job(b.ID, nil, finished(models.JobFailed, now.Add(-10*time.Second), 1), func(j *models.Job) { j.Recoveries = 2 })
		f.job(b.ID, nil) // pending: no event
		require.Equal(t, 7, f.pass())
		require.Equal(t, []string{"catch_up/firing", "job_canceled/firing", "job_failed/firing", "job_failed/firing",
			"job_recovered/firing", "job_rescued/firing", "retries_exhausted/firing"}, f.rcv.events())
		for _, p := range f.rcv.payloads() {
			require.NotZero(t, p.AlertID)
			require.NotNil(t, p.Rule)
			switch p.Event {
			case models.EventCatchUp:
				require.EqualValues(t, 4, p.Details["missed_fires"])
				require.Contains(t, p.Summary, "4 missed fires")
			case models.EventRetriesExhausted:
				require.Equal(t, j1.ID, p.Job.ID)
				require.Equal(t, "exit status 1", p.Job.Error)
				require.Equal(t, &alert.Ref{ID: s.ID, Name: "nightly-s"}, p.Schedule)
				require.Equal(t, fmt.Sprintf("schedule:%d", s.ID), p.Subject)
			case models.EventJobRecovered:
				require.Equal(t, j2.ID, p.Job.ID)
			}
		}
		for _, h := range f.rcv.headers {
			require.Equal(t, "ops", h.Get("X-Team"), "the channel's headers")
			require.NotEmpty(t, h.Get("X-Chime-Alert-Id"))
		}
		// Judged again, and by a new leader that reads back an hour: nothing twice.
		f.clock.Advance(time.Minute)
		require.Zero(t, f.pass())
		other := alert.NewEvaluator(st, &alert.EvaluatorConfig{Clock: f.clock, Logger: quiet()})
		n, err := other.Pass(f.ctx)
		require.NoError(t, err)
		require.Zero(t, n)
		f.deliver()
		require.Len(t, f.rcv.payloads(), 7)
		for _, a := range f.alerts() {
			require.Equal(t, models.AlertSent, a.Status, a.DedupeKey)
		}
		var m dto.Metric
		require.NoError(t, metrics.AlertsSent.WithLabelValues("hook").Write(&m))
		require.GreaterOrEqual(t, m.GetCounter().GetValue(), 7.0)
	})
}

// TestThrottle: one alert per rule and subject per window; the next one
// after the window says how many were held back.
func TestThrottle(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		f := newFix(t, st, time.Now().Add(time.Minute))
		d := testdb.Definition(t, st, nil)
		f.rule(models.EventJobFailed, func(r *models.AlertRule) { r.ThrottleSeconds = 600 })
		for range 3 {
			f.job(d.ID, nil, finished(models.JobFailed, f.clock.Now().Add(-time.Second), 1))
			f.pass()
			f.clock.Advance(time.Minute)
		}
		require.Len(t, f.rcv.payloads(), 1)
		f.clock.Advance(10 * time.Minute)
		f.job(d.ID, nil, finished(models.JobFailed, f.clock.Now().Add(-time.Second), 1))
		f.pass()
		got := f.rcv.payloads()
		require.Len(t, got, 2)
		require.Equal(t, 0, got[0].Suppressed)
		require.Equal(t, 2, got[1].Suppressed)
		var suppressed int
		for _, a := range f.alerts() {
			if a.Status == models.AlertSuppressed {
				suppressed++
			}
		}
		require.Equal(t, 2, suppressed)
	})
}

// TestDeadlineAcrossDST: "done by 07:00 Europe/Berlin" is 06:00 UTC on
// the Saturday before the spring change and 05:00 UTC on the Sunday of it;
// a run done late sends the resolved message.
func TestDeadlineAcrossDST(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		sat := time.Date(2027, 3, 27, 0, 0, 0, 0, time.UTC) // CET (+1); Sunday 28th 02:00 → 03:00 CEST (+2)
		require.True(t, sat.After(time.Now()), "the test's dates must be ahead of the database's clock")
		f := newFix(t, st, sat)
		d := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "report"})
		cron := "0 5 * * *"
		s := models.Schedule{Name: "report-0500", JobDefinitionID: d.ID, ScheduleType: models.ScheduleCron, CronExpr: &cron,
			CronSyntax: models.SyntaxStandard, DSTPolicy: models.DSTOnce, Timezone: "Europe/Berlin", MisfirePolicy: models.MisfireFireOnce,
			Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive}
		require.NoError(t, st.Admin().CreateSchedule(f.ctx, &s))
		r := f.rule(models.EventDeadline, func(r *models.AlertRule) {
			r.Scope, r.ScheduleID, r.Params = models.ScopeSchedule, &s.ID, models.JSON(`{"by":"07:00"}`)
		})
		// The rule exists from Saturday on: Friday's deadline is not its business.
		require.NoError(t, st.DB().Exec("UPDATE alert_rules SET created_at = ? WHERE id = ?", sat, r.ID).Error)

		at := func(day, h, m int) { f.clock.Advance(time.Date(2027, 3, day, h, m, 0, 0, time.UTC).Sub(f.clock.Now())) }
		satRun := f.job(d.ID, &s.ID, func(j *models.Job) {
			j.ScheduledAt = time.Date(2027, 3, 27, 4, 0, 0, 0, time.UTC) // 05:00 CET
			j.RunAt = j.ScheduledAt
		})
		at(27, 5, 59) // 06:59 CET
		require.Zero(t, f.pass())
		at(27, 6, 1) // 07:01 CET
		require.Equal(t, 1, f.pass())
		require.Equal(t, []string{"deadline/firing"}, f.rcv.events())
		p := f.rcv.payloads()[0]
		require.Contains(t, p.Summary, "2027-03-27")
		require.Equal(t, time.Date(2027, 3, 27, 6, 0, 0, 0, time.UTC), p.OccurredAt)
		require.Equal(t, satRun.ID, p.Job.ID)
		require.Zero(t, f.pass(), "still missed: no second alert")

		done := time.Date(2027, 3, 27, 6, 30, 0, 0, time.UTC)
		require.NoError(t, st.DB().Exec("UPDATE jobs SET status = ?, started_at = ?, finished_at = ? WHERE id = ?",
			models.JobSucceeded, done.Add(-time.Minute), done, satRun.ID).Error)
		at(27, 6, 31)
		require.Equal(t, 1, f.pass())
		require.Equal(t, []string{"deadline/firing", "deadline/resolved"}, f.rcv.events())
		res := f.rcv.payloads()[1]
		require.Contains(t, res.Summary, "finished late, at 07:30:00")
		require.Equal(t, p.Subject, res.Subject)

		// Sunday, summer time from 02:00: 07:00 CEST is 05:00 UTC.
		f.job(d.ID, &s.ID, func(j *models.Job) {
			j.ScheduledAt = time.Date(2027, 3, 28, 3, 0, 0, 0, time.UTC) // 05:00 CEST
			j.RunAt = j.ScheduledAt
		})
		at(28, 4, 59) // 06:59 CEST
		require.Zero(t, f.pass())
		at(28, 5, 1) // 07:01 CEST; still before 07:00 by Saturday's offset
		require.Equal(t, 1, f.pass())
		got := f.rcv.payloads()
		require.Len(t, got, 3)
		require.Equal(t, time.Date(2027, 3, 28, 5, 0, 0, 0, time.UTC), got[2].OccurredAt)
		require.Contains(t, got[2].Summary, "2027-03-28")
	})
}

// TestDeadlineNotStarted: a run not started within N of its instant
// alerts; its start resolves it.
func TestDeadlineNotStarted(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		f := newFix(t, st, time.Now().Add(time.Minute))
		d := testdb.Definition(t, st, nil)
		every := 3600
		s := models.Schedule{Name: "hourly", JobDefinitionID: d.ID, ScheduleType: models.ScheduleInterval, IntervalSeconds: &every,
			Timezone: "UTC", MisfirePolicy: models.MisfireFireOnce, Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive}
		require.NoError(t, st.Admin().CreateSchedule(f.ctx, &s))
		f.rule(models.EventDeadline, func(r *models.AlertRule) {
			r.Scope, r.ScheduleID, r.Params = models.ScopeSchedule, &s.ID, models.JSON(`{"start_within_seconds":600}`)
		})
		j := f.job(d.ID, &s.ID, func(j *models.Job) { j.ScheduledAt = store.DBTime(f.clock.Now()); j.RunAt = j.ScheduledAt })
		f.clock.Advance(9 * time.Minute)
		require.Zero(t, f.pass())
		f.clock.Advance(2 * time.Minute)
		require.Equal(t, 1, f.pass())
		started := store.DBTime(f.clock.Now())
		require.NoError(t, st.DB().Exec("UPDATE jobs SET status = ?, started_at = ? WHERE id = ?", models.JobRunning, started, j.ID).Error)
		f.clock.Advance(time.Minute)
		require.Equal(t, 1, f.pass())
		require.Equal(t, []string{"deadline/firing", "deadline/resolved"}, f.rcv.events())
	})
}

// TestSlowAndBacklog: a run slower than 3 × its definition's median, and
// a due job waiting too long, alert and resolve.
func TestSlowAndBacklog(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		f := newFix(t, st, time.Now().Add(time.Minute))
		d := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "etl"})
		f.rule(models.EventSlow, func(r *models.AlertRule) { r.Params = models.JSON(`{"median_factor":3}`) })
		for i := range 3 {
			f.job(d.ID, nil, finished(models.JobSucceeded, f.clock.Now().Add(-time.Duration(i+1)*time.Minute), 1)) // 10s each
		}
		started := store.DBTime(f.clock.Now().Add(-20 * time.Second))
		run := f.job(d.ID, nil, func(j *models.Job) { j.Status, j.StartedAt = models.JobRunning, &started })
		require.Zero(t, f.pass(), "20s is not above 3 × 10s")
		f.clock.Advance(15 * time.Second)
		require.Equal(t, 1, f.pass())
		require.Zero(t, f.pass())
		require.NoError(t, st.DB().Exec("UPDATE jobs SET status = ?, finished_at = ? WHERE id = ?", models.JobSucceeded,
			store.DBTime(f.clock.Now()), run.ID).Error)
		require.Equal(t, 1, f.pass())
		require.Equal(t, []string{"slow/firing", "slow/resolved"}, f.rcv.events())
		require.Contains(t, f.rcv.payloads()[0].Summary, "recent median of 10s")

		f.rule(models.EventBacklog, func(r *models.AlertRule) { r.Params = models.JSON(`{"wait_seconds":300}`) })
		f.rule(models.EventBacklog, func(r *models.AlertRule) { r.Params = models.JSON(`{"max_due":2,"for_seconds":60}`) })
		var waiting []int64
		for range 3 {
			waiting = append(waiting, f.job(d.ID, nil, func(j *models.Job) {
				j.RunAt = store.DBTime(f.clock.Now().Add(-4 * time.Minute))
			}).ID)
		}
		require.Zero(t, f.pass(), "4 minutes, and 3 due for no time yet")
		f.clock.Advance(61 * time.Second)
		require.Equal(t, 2, f.pass())
		f.clock.Advance(time.Minute)
		require.Zero(t, f.pass(), "one alert per episode")
		require.NoError(t, st.DB().Exec("UPDATE jobs SET status = ? WHERE id IN ?", models.JobSucceeded, waiting).Error)
		require.Equal(t, 2, f.pass())
		require.Equal(t, []string{"backlog/firing", "backlog/firing", "backlog/resolved", "backlog/resolved",
			"slow/firing", "slow/resolved"}, f.rcv.events())
	})
}

// TestNodeLost: a node declared dead alerts once.
func TestNodeLost(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		f := newFix(t, st, time.Now().Add(time.Minute))
		f.rule(models.EventNodeLost)
		require.NoError(t, st.RegisterNode(f.ctx, &chimedb.RegisterNodeParams{ID: "web-1", Hostname: "web", PID: 7, Version: "t", Roles: "worker"}))
		require.Zero(t, f.pass())
		require.NoError(t, st.SetNodeStatus(f.ctx, "web-1", chimedb.NodeDead))
		require.Equal(t, 1, f.pass())
		require.Zero(t, f.pass())
		p := f.rcv.payloads()
		require.Len(t, p, 1)
		require.Equal(t, "web-1", p[0].Node)
	})
}

// TestHostileReceivers: a redirect loop, a 100 MB answer, a receiver that
// hangs, one that refuses, one that fails, a URL aimed at chime itself:
// each ends as documented, none holds up the others, and no error shows
// the URL's token.
func TestHostileReceivers(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		f := newFix(t, st, time.Now())
		stop := make(chan struct{})
		mux := http.NewServeMux()
		mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
		mux.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			chunk := make([]byte, 1<<20)
			for range 100 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		})
		mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-stop:
			case <-r.Context().Done():
			}
		})
		mux.HandleFunc("/refuse", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no such hook", http.StatusNotFound) })
		mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusBadGateway) })
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		t.Cleanup(func() { close(stop) })
		chime := httptest.NewServer(http.NotFoundHandler()) // stands for chime's own API
		t.Cleanup(chime.Close)
		self := strings.TrimPrefix(chime.URL, "http://")
		f.d = alert.NewDispatcher(st, &alert.DispatcherConfig{NodeID: "n1", Clock: f.clock, Attempts: 2, Backoff: time.Hour,
			SelfHosts: []string{self}, Logger: quiet()})

		r := f.rule(models.EventJobFailed)
		payload, err := json.Marshal(alert.TestPayload(&f.ch, f.clock.Now()))
		require.NoError(t, err)
		want := map[string]models.AlertStatus{}
		var recs []chimedb.AlertRecord
		add := func(name, url string, timeout int, status models.AlertStatus) {
			c := models.AlertChannel{Name: name, Kind: models.ChannelWebhook, URL: url + "?token=s3cret", TimeoutSeconds: timeout,
				Enabled: true, SigningKey: "whsec-test-key"}
			require.NoError(t, st.SaveAlertChannel(f.ctx, &c))
			key := "k-" + name
			want[key] = status
			recs = append(recs, chimedb.AlertRecord{At: f.clock.Now(), Alert: models.Alert{RuleID: r.ID, ChannelID: c.ID,
				Event: models.EventJobFailed, Subject: "s-" + name, DedupeKey: key, Summary: name,
				Payload: payload}})
		}
		add("loop", srv.URL+"/loop", 5, models.AlertFailed)
		add("huge", srv.URL+"/huge", 5, models.AlertSent)
		add("hang", srv.URL+"/hang", 1, models.AlertPending) // timed out: retried after the backoff
		add("refuse", srv.URL+"/refuse", 5, models.AlertFailed)
		add("fail", srv.URL+"/fail", 5, models.AlertPending)
		add("self", "http://"+self+"/api/v1/jobs", 5, models.AlertFailed)
		add("ok", f.rcv.srv.URL+"/x", 5, models.AlertSent)
		// A channel row written by SQL that cannot deliver.
		require.NoError(t, st.DB().Exec("INSERT INTO alert_channels (name, kind, url, timeout_seconds) VALUES (?, ?, ?, ?)",
			"ftp", "webhook", "ftp://example.com/x?token=s3cret", 5).Error)
		var ftp []int64
		require.NoError(t, st.DB().Raw("SELECT id FROM alert_channels WHERE name = 'ftp'").Scan(&ftp).Error)
		recs = append(recs, chimedb.AlertRecord{At: f.clock.Now(), Alert: models.Alert{RuleID: r.ID, ChannelID: ftp[0],
			Event: models.EventJobFailed, Subject: "s-ftp", DedupeKey: "k-ftp", Payload: models.JSON(`{}`)}})
		want["k-ftp"] = models.AlertFailed
		_, err = st.RecordAlerts(f.ctx, recs)
		require.NoError(t, err)

		began := time.Now()
		require.Equal(t, len(want), f.d.Pass(f.ctx))
		f.d.Wait()
		// Deliveries run side by side: the whole pass costs about the
		// slowest channel's timeout (1s), not the sum.
		require.Less(t, time.Since(began), 10*time.Second)
		for _, a := range f.alerts() {
			why := ""
			if a.LastError != nil {
				why = *a.LastError
			}
			require.Equal(t, want[a.DedupeKey], a.Status, "%s: %s", a.DedupeKey, why)
			if a.LastError != nil {
				require.NotContains(t, *a.LastError, "s3cret", "an error must not show the URL's token")
			}
			switch a.DedupeKey {
			case "k-loop":
				require.Contains(t, *a.LastError, "redirect refused")
			case "k-self":
				require.Contains(t, *a.LastError, "chime itself")
			case "k-ftp":
				require.Contains(t, *a.LastError, "scheme")
			case "k-refuse":
				require.Contains(t, *a.LastError, "404")
			case "k-hang":
				require.Contains(t, *a.LastError, "deadline exceeded")
			}
		}
		require.Len(t, f.rcv.payloads(), 1)
	})
}

// TestRetriesUntilTheReceiverIsBack: a receiver down for a while gets the
// alert once it answers again; one alert, not one per try.
func TestRetriesUntilTheReceiverIsBack(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		f := newFix(t, st, time.Now().Add(time.Minute))
		d := testdb.Definition(t, st, nil)
		f.rule(models.EventJobFailed)
		f.rcv.mu.Lock()
		f.rcv.fail = 3
		f.rcv.mu.Unlock()
		f.job(d.ID, nil, finished(models.JobFailed, f.clock.Now().Add(-time.Second), 1))
		_, err := f.ev.Pass(f.ctx)
		require.NoError(t, err)
		for range 50 {
			f.deliver()
			if len(f.rcv.payloads()) > 0 {
				break
			}
			time.Sleep(20 * time.Millisecond) // the backoff, 1ms, is on the database's clock
		}
		require.Len(t, f.rcv.payloads(), 1)
		as := f.alerts()
		require.Equal(t, models.AlertSent, as[0].Status)
		require.Equal(t, 4, as[0].Attempts)
	})
}

// TestEmailAndSlackChannels: the same alert by email through a real SMTP
// server, and as a Slack-compatible {"text": ...} body.
func TestEmailAndSlackChannels(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		f := newFix(t, st, time.Now().Add(time.Minute))
		smtp := smtptest.New(t)
		m, err := notify.New(nil, &notify.Config{Host: smtp.Host, Port: smtp.Port, From: "chime@example.com", TLS: notify.TLSNone})
		require.NoError(t, err)
		t.Cleanup(func() { _ = m.Close(context.Background()) })
		var slackBodies []string
		slack := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var b strings.Builder
			_, _ = fmt.Fprint(&b, readAll(r))
			slackBodies = append(slackBodies, b.String())
			_, _ = w.Write([]byte("ok"))
		}))
		t.Cleanup(slack.Close)
		f.d = alert.NewDispatcher(st, &alert.DispatcherConfig{NodeID: "n1", Clock: f.clock, Mailer: func() *notify.Mailer { return m },
			Logger: quiet(), InFlight: 1})
		mail := models.AlertChannel{Name: "oncall-mail", Kind: models.ChannelEmail, Recipients: "oncall@example.com", TimeoutSeconds: 10, Enabled: true}
		require.NoError(t, st.SaveAlertChannel(f.ctx, &mail))
		sl := models.AlertChannel{Name: "chat", Kind: models.ChannelSlack, URL: slack.URL + "/services/T0/B0/XXXX", TimeoutSeconds: 10, Enabled: true}
		require.NoError(t, st.SaveAlertChannel(f.ctx, &sl))
		d := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "billing"})
		f.rule(models.EventJobFailed, func(r *models.AlertRule) { r.ChannelID = mail.ID })
		f.rule(models.EventJobFailed, func(r *models.AlertRule) { r.ChannelID = sl.ID })
		f.job(d.ID, nil, finished(models.JobFailed, f.clock.Now().Add(-time.Second), 1))
		require.Equal(t, 2, f.pass())
		msgs := smtp.Messages()
		require.Len(t, msgs, 1)
		require.Contains(t, msgs[0].Subject(), "[chime] ALERT job_failed: billing")
		require.Len(t, slackBodies, 1)
		require.Contains(t, slackBodies[0], `{"text":":rotating_light: *job_failed* billing`)

		// chime alert test: one message now, outside the outbox.
		require.NoError(t, f.d.Send(f.ctx, &sl, alert.TestPayload(&sl, f.clock.Now())))
		require.Len(t, slackBodies, 2)
		require.Contains(t, slackBodies[1], "test")
	})
}

func readAll(r *http.Request) string {
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := r.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}
