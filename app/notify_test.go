package app

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/configs"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/notify"
	"github.com/chimesched/chime/notify/smtptest"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/tasks"
)

func init() {
	// Seconds-long production timing would make these tests wait for
	// nothing; the settle delay stays well above the 20 ms job log flush.
	senderTuning = notify.SenderConfig{
		Interval: 100 * time.Millisecond, Settle: 300 * time.Millisecond,
		Backoff: 200 * time.Millisecond, MaxBackoff: time.Second,
	}
}

// chatty logs lines of its own, the ones a completion email's log tail
// must show.
type chatty struct{ tasks.Base }

func (*chatty) Execute(_ context.Context, job *tasks.Job) error {
	job.Log().Info("chatty: step one")
	job.Log().Info("chatty: step two")
	job.SetResult("chatted")
	return nil
}

// nodeEnv is one test's database and settings for the nodes it starts.
type nodeEnv struct {
	t    *testing.T
	st   *store.Store
	cfg  configs.Config
	log  *logrus.Logger
	hook *logtest.Hook
}

// newNodeEnv creates a fresh database of dialect d, migrated, and a node
// configuration that sends mail to smtpPort on loopback (0: no SMTP).
func newNodeEnv(t *testing.T, d store.Dialect, smtpPort int) *nodeEnv {
	t.Helper()
	scfg := testdb.MigratedConfig(t, d)
	ctx := context.Background()
	st, err := store.Open(ctx, scfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, err = st.Migrate(ctx)
	require.NoError(t, err)

	cfg, err := configs.Load("", func(string) string { return "" })
	require.NoError(t, err)
	cfg.Database.Driver, cfg.Database.DSN = string(d), scfg.DSN
	cfg.Node.ID = "n-" + strings.ReplaceAll(t.Name(), "/", "-")
	cfg.API.Addr = "127.0.0.1:0"
	cfg.ScheduleEngine.Enabled = false
	cfg.TaskEngine.PollInterval = configs.Duration(100 * time.Millisecond)
	cfg.TaskEngine.ControlInterval = configs.Duration(100 * time.Millisecond)
	cfg.Cluster.Heartbeat = configs.Duration(250 * time.Millisecond)
	cfg.Cluster.FailoverAfter = configs.Duration(2 * time.Second)
	cfg.ShutdownGrace = configs.Duration(2 * time.Second)
	cfg.RetentionDays = 0
	if smtpPort != 0 {
		cfg.SMTP.Host, cfg.SMTP.Port = "127.0.0.1", smtpPort
		cfg.SMTP.From, cfg.SMTP.TLS = "chime <chime@example.com>", "none"
	}
	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.InfoLevel)
	return &nodeEnv{t: t, st: st, cfg: *cfg, log: log, hook: hook}
}

// serve runs a node (app.Serve, as `chime serve` does), once it has
// started, until the returned function stops it.
func (e *nodeEnv) serve() (stop func()) {
	t := e.t
	t.Helper()
	cfg := e.cfg
	id := cfg.Node.ID // Serve writes cfg
	reg := tasks.NewRegistry()
	reg.MustRegister("chatty", func() tasks.Task { return &chatty{} })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, &cfg, Options{NoMigrate: true, Logger: e.log, Registry: reg}) }()
	var once bool
	stop = func() {
		if once {
			return
		}
		once = true
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("node did not stop within 30s")
		}
	}
	t.Cleanup(stop)
	// A stop while the node starts would fail its start: its services do
	// not all start at once, and one may act before another has started.
	waitFor(t, 30*time.Second, "the node to start", func() bool {
		for _, en := range e.hook.AllEntries() {
			if en.Message == "chime node started" && en.Data["node_id"] == id {
				return true
			}
		}
		return false
	})
	return stop
}

func (e *nodeEnv) definition(name, taskType string, on models.NotifyOn) models.JobDefinition {
	e.t.Helper()
	d := models.JobDefinition{Name: name, TaskType: taskType, MaxAttempts: 1, RetryBackoffSeconds: 1,
		NotifyOn: on, NotifyEmails: "ops@example.com"}
	require.NoError(e.t, e.st.DB().Create(&d).Error)
	return d
}

func (e *nodeEnv) job(def models.JobDefinition, runAt time.Time) models.Job {
	e.t.Helper()
	now := store.DBTime(time.Now())
	j := models.Job{JobDefinitionID: def.ID, ScheduledAt: now, RunAt: store.DBTime(runAt), Status: models.JobPending}
	require.NoError(e.t, e.st.DB().Create(&j).Error)
	return j
}

// waitFor polls cond until it holds or timeout passes: the nodes under
// test are real and run on their own timers.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond) // the poll step: real nodes on their own timers
	}
}

func forEachDialect(t *testing.T, fn func(t *testing.T, d store.Dialect)) {
	for _, d := range testdb.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			fn(t, d)
		})
	}
}

// The email's log tail holds the task's own lines: it is rendered after the
// job is final and its log lines are written, not when OnComplete runs.
func TestNotifyEmailCarriesTheTaskLog(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		smtp := smtptest.New(t)
		e := newNodeEnv(t, d, smtp.Port)
		def := e.definition("chatty", "chatty", models.NotifyAlways)
		j := e.job(def, time.Now())
		e.serve()
		require.True(t, smtp.WaitAttempts(1, 30*time.Second), "no email")
		m := smtp.Messages()[0]
		require.Equal(t, fmt.Sprintf("[chime] chatty succeeded (ad hoc, job %d)", j.ID), m.Subject())
		require.Contains(t, m.Text(), "chatty: step one")
		require.Contains(t, m.Text(), "chatty: step two")
		require.Contains(t, m.Text(), "chatted")
	})
}

// A job that fails before Execute (a task type no node knows) is mailed.
func TestNotifyFailureBeforeExecute(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		smtp := smtptest.New(t)
		e := newNodeEnv(t, d, smtp.Port)
		def := e.definition("ghostly", "no_such_task", models.NotifyFailure)
		j := e.job(def, time.Now())
		e.serve()
		require.True(t, smtp.WaitAttempts(1, 30*time.Second), "no email")
		m := smtp.Messages()[0]
		require.Equal(t, fmt.Sprintf("[chime] ghostly failed (ad hoc, job %d)", j.ID), m.Subject())
		require.Contains(t, m.Text(), "no_such_task")
	})
}

// Canceled jobs count as failures: a stop through SQL on a job not yet
// claimed, and a stop through the API on a pending one, each send one.
func TestNotifyCanceled(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		smtp := smtptest.New(t)
		e := newNodeEnv(t, d, smtp.Port)
		def := e.definition("later", "chatty", models.NotifyFailure)
		bySQL := e.job(def, time.Now().Add(time.Hour))
		byAPI := e.job(def, time.Now().Add(time.Hour))
		e.serve()
		require.NoError(t, e.st.DB().Exec("UPDATE jobs SET control = 'stop' WHERE id = ?", bySQL.ID).Error)
		_, err := e.st.Admin().ControlJob(context.Background(), byAPI.ID, models.ControlStop)
		require.NoError(t, err)
		require.True(t, smtp.WaitAttempts(2, 30*time.Second), "want two emails, got %d", smtp.Attempts())
		var subjects []string
		for _, m := range smtp.Messages() {
			subjects = append(subjects, m.Subject())
		}
		require.ElementsMatch(t, []string{
			fmt.Sprintf("[chime] later canceled (ad hoc, job %d)", bySQL.ID),
			fmt.Sprintf("[chime] later canceled (ad hoc, job %d)", byAPI.ID),
		}, subjects)
	})
}

// A job failed by failover (its node died with no attempt left) is mailed.
func TestNotifyFailover(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		smtp := smtptest.New(t)
		e := newNodeEnv(t, d, smtp.Port)
		def := e.definition("orphan", "chatty", models.NotifyFailure)
		old := store.DBTime(time.Now().Add(-time.Hour))
		require.NoError(t, e.st.DB().Create(&models.Node{ID: "ghost", StartedAt: old, HeartbeatAt: old, Status: chimedb.NodeDead}).Error)
		j := testdb.Job(t, e.st, &testdb.JobOpts{DefinitionID: def.ID, Status: models.JobRunning, NodeID: "ghost", Attempt: 1, Heartbeat: &old})
		e.serve()
		require.True(t, smtp.WaitAttempts(1, 30*time.Second), "no email")
		m := smtp.Messages()[0]
		require.Equal(t, fmt.Sprintf("[chime] orphan failed (ad hoc, job %d)", j.ID), m.Subject())
		// The reaper (node died) or the reconciler (no heartbeat) may get
		// there first; either way one notice.
		require.Contains(t, m.Text(), "ghost")
		require.Contains(t, m.Text(), "no attempts left")
		require.Len(t, e.notifications(), 1)
	})
}

// closedPort returns a loopback port nothing listens on (it was free a
// moment ago).
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

func (e *nodeEnv) notifications() []models.Notification {
	e.t.Helper()
	var ns []models.Notification
	require.NoError(e.t, e.st.DB().Order("id").Find(&ns).Error)
	return ns
}

// The outbox survives a restart while the SMTP server is down: the first
// node records the notice and fails to send it; a second node on the same
// database, started after the server came up, sends it once.
func TestNotifyOutboxSurvivesRestart(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		port := closedPort(t)
		e := newNodeEnv(t, d, port)
		def := e.definition("chatty", "chatty", models.NotifyAlways)
		j := e.job(def, time.Now())
		stop := e.serve()
		waitFor(t, 30*time.Second, "a failed send attempt recorded", func() bool {
			ns := e.notifications()
			return len(ns) == 1 && ns[0].Attempts >= 1 && ns[0].LastError != nil
		})
		stop()
		n := e.notifications()[0]
		require.Equal(t, models.NotificationPending, n.Status)
		require.Equal(t, j.ID, n.JobID)

		smtp := smtptest.New(t, smtptest.WithPort(port))
		e.cfg.Node.ID += "-2"
		e.serve()
		waitFor(t, 30*time.Second, "the notice sent", func() bool {
			return e.notifications()[0].Status == models.NotificationSent
		})
		require.Len(t, smtp.Messages(), 1)
		require.Contains(t, smtp.Messages()[0].Text(), "chatty: step two")
		n = e.notifications()[0]
		require.Greater(t, n.Attempts, 1)
		require.NotNil(t, n.SentAt)
	})
}

// A definition that wants email on a node without smtp.host is named in a
// warning at start.
func TestNotifyWarnsWithoutSMTP(t *testing.T) {
	t.Parallel()
	e := newNodeEnv(t, store.SQLite, 0)
	e.definition("quiet", "chatty", models.NotifyNever)
	e.definition("loud", "chatty", models.NotifyFailure)
	stop := e.serve()
	waitFor(t, 30*time.Second, "the node to start", func() bool {
		for _, en := range e.hook.AllEntries() {
			if en.Message == "chime node started" {
				return true
			}
		}
		return false
	})
	stop()
	var warned []string
	for _, en := range e.hook.AllEntries() {
		if en.Level == logrus.WarnLevel && strings.Contains(en.Message, "smtp.host") {
			warned = append(warned, fmt.Sprint(en.Data["definitions"]))
		}
	}
	require.Equal(t, []string{"loud"}, warned)
}
