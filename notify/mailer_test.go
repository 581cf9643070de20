package notify_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/chimesched/chime/notify"
	"github.com/chimesched/chime/notify/smtptest"
	"github.com/chimesched/chime/tasks"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixedTailer stands in for the store, which implements LogTailer over
// job_logs and is tested there.
type fixedTailer struct {
	lines []string
	err   error
}

func (f fixedTailer) TailLogs(_ context.Context, _ int64, n int) ([]string, error) {
	if len(f.lines) > n {
		return f.lines[len(f.lines)-n:], f.err
	}
	return f.lines, f.err
}

type bundle struct {
	srv      *smtptest.Server
	mailer   *notify.Mailer
	logs     *logtest.Hook // the mailer's own log
	mu       sync.Mutex
	failures []int64 // job ids passed to OnFailure
}

// setup starts a mailer on a test SMTP server; cfg tunes it (its SMTP
// fields are the server's), tail gives notices their log tail.
func setup(t *testing.T, tail notify.LogTailer, cfg *notify.Config, srvOpts ...smtptest.Option) *bundle {
	t.Helper()
	b := &bundle{srv: smtptest.New(t, srvOpts...)}
	logger, hook := logtest.NewNullLogger()
	b.logs = hook
	c := notify.Config{Backoff: 5 * time.Millisecond, SendTimeout: 5 * time.Second}
	if cfg != nil {
		c = *cfg
	}
	c.Host, c.Port, c.TLS, c.From = b.srv.Host, b.srv.Port, notify.TLSNone, "chime <chime@example.com>"
	c.Logger = logger
	c.OnFailure = func(jobID int64, _ error) {
		b.mu.Lock()
		b.failures = append(b.failures, jobID)
		b.mu.Unlock()
	}
	m, err := notify.New(tail, &c)
	require.NoError(t, err)
	b.mailer = m
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = m.Close(ctx)
	})
	return b
}

func (b *bundle) close(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, b.mailer.Close(ctx))
}

func (b *bundle) failedJobs() []int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int64(nil), b.failures...)
}

var t0 = time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)

func newJob(logger *logrus.Logger) *tasks.Job {
	if logger == nil {
		logger, _ = logtest.NewNullLogger()
	}
	return &tasks.Job{
		ID: 42, ScheduleID: 7, DefinitionID: 3,
		DefinitionName: "nightly-report", ScheduleName: "nightly", TaskType: "shell", NodeID: "node-a",
		ScheduledAt: t0, Attempt: 2, MaxAttempts: 3,
		Notify: tasks.NotifySpec{On: tasks.NotifyAlways, Emails: []string{"ops@example.com", "dev@example.com"}},
		Logger: logrus.NewEntry(logger),
	}
}

func succeeded() tasks.Result {
	return tasks.Result{Status: tasks.StatusSucceeded, Output: "rows: 1200", StartedAt: t0.Add(time.Second), FinishedAt: t0.Add(2500 * time.Millisecond)}
}

func TestSendMessage(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	err := b.mailer.SendMessage(context.Background(), notify.Message{
		To:      []string{"a@example.com"},
		Subject: "weekly numbers",
		Text:    "see attached\n",
		HTML:    "<p>see attached</p>",
		Attachments: []notify.Attachment{
			{Name: "report.csv", Data: []byte("day,rows\nmon,3\n")},
			{Name: "blob", ContentType: "application/x-chime", Data: []byte{0, 1, 2}},
		},
	})
	require.NoError(t, err)
	msgs := b.srv.Messages()
	require.Len(t, msgs, 1)
	m := msgs[0]
	require.Equal(t, "chime@example.com", m.From)
	require.Equal(t, []string{"a@example.com"}, m.To)
	require.Equal(t, "weekly numbers", m.Subject())
	require.Equal(t, "see attached\n", m.Text())

	parts, err := m.Parts()
	require.NoError(t, err)
	byName := map[string]smtptest.Part{}
	var html string
	for _, p := range parts {
		byName[p.Filename] = p
		if p.ContentType == "text/html" {
			html = string(p.Data)
		}
	}
	require.Equal(t, "day,rows\nmon,3\n", string(byName["report.csv"].Data))
	require.Equal(t, "text/csv", byName["report.csv"].ContentType)
	require.Equal(t, []byte{0, 1, 2}, byName["blob"].Data)
	require.Equal(t, "application/x-chime", byName["blob"].ContentType)
	require.Equal(t, "<p>see attached</p>", html, "the HTML alternative")

	require.ErrorContains(t, b.mailer.SendMessage(context.Background(), notify.Message{}), "no recipients")
}

func TestSendWithAuth(t *testing.T) {
	t.Parallel()
	srv := smtptest.New(t, smtptest.WithAuth("chime", "s3cret"))
	for _, tt := range []struct {
		password string
		wantErr  bool
	}{{"s3cret", false}, {"wrong", true}} {
		m, err := notify.New(nil, &notify.Config{
			Host: srv.Host, Port: srv.Port, TLS: notify.TLSNone, From: "chime@example.com",
			Username: "chime", Password: tt.password, SendTimeout: 5 * time.Second,
		})
		require.NoError(t, err)
		err = m.Send(context.Background(), []string{"a@example.com"}, "hi", "body")
		if tt.wantErr {
			require.ErrorContains(t, err, "AUTH")
		} else {
			require.NoError(t, err)
		}
		require.NoError(t, m.Close(context.Background()))
	}
	require.Len(t, srv.Messages(), 1)
}

func TestNotify(t *testing.T) {
	t.Parallel()

	t.Run("CompletionEmail", func(t *testing.T) {
		t.Parallel()
		tail := make([]string, 30)
		for i := range tail {
			tail[i] = fmt.Sprintf("line %d", i+1)
		}
		b := setup(t, fixedTailer{lines: tail}, &notify.Config{LogTailLines: 5})
		job := newJob(nil)
		job.Attach(tasks.Attachment{Name: "rows.csv", Data: []byte("a,b\n")})
		require.NoError(t, b.mailer.Notify(context.Background(), job, succeeded()))
		b.close(t)

		msgs := b.srv.Messages()
		require.Len(t, msgs, 1)
		m := msgs[0]
		require.ElementsMatch(t, []string{"ops@example.com", "dev@example.com"}, m.To)
		require.Equal(t, "[chime] nightly-report succeeded (schedule nightly)", m.Subject())
		text := m.Text()
		for _, want := range []string{
			"nightly-report succeeded.",
			"Job:        42",
			"Schedule:   nightly (id 7)",
			"Attempt:    2 of 3",
			"Node:       node-a",
			"Scheduled:  2026-03-01 02:00:00.000 UTC",
			"Started:    2026-03-01 02:00:01.000 UTC",
			"Finished:   2026-03-01 02:00:02.500 UTC",
			"Duration:   1.5s",
			"Result:\n  rows: 1200",
			"Last 5 log lines:\n  line 26\n  line 27\n  line 28\n  line 29\n  line 30",
			"Attached: rows.csv",
		} {
			require.Contains(t, text, want)
		}
		require.NotContains(t, text, "line 25")
		require.Equal(t, uint64(1), b.mailer.Sent())
	})

	t.Run("FailureEmail", func(t *testing.T) {
		t.Parallel()
		b := setup(t, fixedTailer{err: errors.New("db gone")}, nil)
		job := newJob(nil)
		job.ScheduleID, job.ScheduleName = 0, ""
		r := tasks.Result{Status: tasks.StatusFailed, Err: errors.New("shell: command failed: exit status 3"), StartedAt: t0, FinishedAt: t0}
		require.NoError(t, b.mailer.Notify(context.Background(), job, r))
		b.close(t)

		msgs := b.srv.Messages()
		require.Len(t, msgs, 1)
		require.Equal(t, "[chime] nightly-report failed (ad hoc, job 42)", msgs[0].Subject())
		text := msgs[0].Text()
		require.Contains(t, text, "Error:\n  shell: command failed: exit status 3")
		require.Contains(t, text, "Schedule:   none (ad hoc run)")
		require.Contains(t, text, "Log: unavailable (db gone)")
	})

	t.Run("RetriesATemporaryRejection", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil, nil)
		b.srv.RejectNext(smtptest.TempFailure)
		require.NoError(t, b.mailer.Notify(context.Background(), newJob(nil), succeeded()))
		b.close(t)
		require.Equal(t, 2, b.srv.Attempts())
		require.Len(t, b.srv.Messages(), 1)
		require.Zero(t, b.mailer.Failures())
		var warned bool
		for _, e := range b.logs.AllEntries() {
			warned = warned || (e.Level == logrus.WarnLevel && strings.Contains(e.Message, "retry 1 of 2"))
		}
		require.True(t, warned)
	})

	t.Run("GivesUpAfterAttempts", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil, &notify.Config{Attempts: 3, Backoff: time.Millisecond, SendTimeout: 5 * time.Second})
		b.srv.RejectAll(smtptest.TempFailure)
		jobLogger, jobLogs := logtest.NewNullLogger()
		require.NoError(t, b.mailer.Notify(context.Background(), newJob(jobLogger), succeeded()))
		b.close(t)
		require.Equal(t, 3, b.srv.Attempts())
		require.Equal(t, uint64(1), b.mailer.Failures())
		require.Equal(t, []int64{42}, b.failedJobs())

		last := b.logs.LastEntry()
		require.Equal(t, logrus.ErrorLevel, last.Level)
		require.Equal(t, int64(42), last.Data["job_id"])
		require.Equal(t, "notify: completion email not sent", jobLogs.LastEntry().Message, "the job's own log says so too")
	})

	t.Run("PermanentRejectionIsNotRetried", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil, nil)
		b.srv.RejectAll(smtptest.PermFailure)
		require.NoError(t, b.mailer.Notify(context.Background(), newJob(nil), succeeded()))
		b.close(t)
		require.Equal(t, 1, b.srv.Attempts())
		require.Equal(t, uint64(1), b.mailer.Failures())
	})

	t.Run("NoRecipients", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil, nil)
		job := newJob(nil)
		job.Notify.Emails = nil
		require.NoError(t, b.mailer.Notify(context.Background(), job, succeeded()))
		b.close(t)
		require.Zero(t, b.srv.Attempts())
	})

	t.Run("AfterClose", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil, nil)
		b.close(t)
		require.ErrorIs(t, b.mailer.Notify(context.Background(), newJob(nil), succeeded()), notify.ErrClosed)
		b.close(t) // idempotent
	})

	t.Run("DoesNotBlockOnAHungServer", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil, &notify.Config{Workers: 1, QueueSize: 2, SendTimeout: time.Minute})
		b.srv.Hang()

		start := time.Now()
		var full int
		for range 10 {
			if errors.Is(b.mailer.Notify(context.Background(), newJob(nil), succeeded()), notify.ErrQueueFull) {
				full++
			}
		}
		require.Less(t, time.Since(start), time.Second, "Notify must only enqueue")
		// One in the worker (maybe), two queued: the rest are dropped.
		require.GreaterOrEqual(t, full, 7)
		require.Equal(t, uint64(full), b.mailer.Dropped())

		// Close cannot drain a hung server; when its ctx ends it cuts the
		// connection instead of waiting a minute.
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		start = time.Now()
		require.ErrorIs(t, b.mailer.Close(ctx), context.DeadlineExceeded)
		require.Less(t, time.Since(start), 5*time.Second)
		require.Equal(t, uint64(10), b.mailer.Failures(), "every notice is accounted for")
		require.Len(t, b.failedJobs(), 10)
	})

	t.Run("CloseDrains", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil, &notify.Config{Workers: 2, QueueSize: 20})
		for i := range 10 {
			job := newJob(nil)
			job.ID = int64(i + 1)
			require.NoError(t, b.mailer.Notify(context.Background(), job, succeeded()))
		}
		b.close(t)
		require.Len(t, b.srv.Messages(), 10)
		require.Equal(t, uint64(10), b.mailer.Sent())
	})
}

func TestBaseOnCompleteSendsThroughMailer(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	type task struct{ tasks.Base }
	job := newJob(nil)
	job.Notify.On = tasks.NotifyFailure
	job.Notifier = b.mailer
	tk := &task{}
	require.NoError(t, tk.OnComplete(context.Background(), job, succeeded()))
	require.NoError(t, tk.OnComplete(context.Background(), job, tasks.Result{Status: tasks.StatusStopped}))
	b.close(t)
	msgs := b.srv.Messages()
	require.Len(t, msgs, 1)
	require.Equal(t, "[chime] nightly-report stopped (schedule nightly)", msgs[0].Subject())
}
