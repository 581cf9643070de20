package email_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/chimesched/chime/notify"
	"github.com/chimesched/chime/notify/smtptest"
	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/tasks/email"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mailer(t *testing.T, srv *smtptest.Server) *notify.Mailer {
	t.Helper()
	m, err := notify.New(nil, &notify.Config{Host: srv.Host, Port: srv.Port, TLS: notify.TLSNone, From: "chime@example.com",
		SendTimeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	return m
}

func run(t *testing.T, task tasks.Task, params string) (*tasks.Job, error) {
	t.Helper()
	logger, _ := logtest.NewNullLogger()
	job := &tasks.Job{ID: 5, DefinitionName: "weekly-digest", Params: json.RawMessage(params), Logger: logrus.NewEntry(logger)}
	ctx, cancel := tasks.Prepare(context.Background(), task, job)
	defer cancel()
	return job, task.Execute(ctx, job)
}

func TestEmail(t *testing.T) {
	t.Parallel()

	t.Run("Sends", func(t *testing.T) {
		t.Parallel()
		srv := smtptest.New(t)
		job, err := run(t, email.Factory(mailer(t, srv))(), `{"to":["a@example.com","b@example.com"],"subject":"digest","body":"hello\n"}`)
		require.NoError(t, err)
		require.Equal(t, "sent to a@example.com, b@example.com", job.Result())
		msgs := srv.Messages()
		require.Len(t, msgs, 1)
		require.Equal(t, []string{"a@example.com", "b@example.com"}, msgs[0].To)
		require.Equal(t, "digest", msgs[0].Subject())
		require.Equal(t, "hello\n", msgs[0].Text())
	})

	t.Run("DefaultSubject", func(t *testing.T) {
		t.Parallel()
		srv := smtptest.New(t)
		_, err := run(t, email.NewWithSender(mailer(t, srv)), `{"to":["a@example.com"]}`)
		require.NoError(t, err)
		require.Equal(t, "[chime] weekly-digest", srv.Messages()[0].Subject())
	})

	t.Run("ServerRejects", func(t *testing.T) {
		t.Parallel()
		srv := smtptest.New(t)
		srv.RejectAll(smtptest.PermFailure)
		_, err := run(t, email.NewWithSender(mailer(t, srv)), `{"to":["a@example.com"]}`)
		require.ErrorContains(t, err, "relaying denied")
	})

	t.Run("NotConfigured", func(t *testing.T) {
		t.Parallel()
		_, err := run(t, email.New(), `{"to":["a@example.com"]}`)
		require.ErrorIs(t, err, email.ErrNotConfigured)
		require.EqualError(t, err, "email: smtp not configured")
	})

	t.Run("StopCutsAHungServer", func(t *testing.T) {
		t.Parallel()
		srv := smtptest.New(t)
		srv.Hang()
		task := email.NewWithSender(mailer(t, srv))
		job := &tasks.Job{Params: json.RawMessage(`{"to":["a@example.com"]}`)}
		ctx, cancel := tasks.Prepare(context.Background(), task, job)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- task.Execute(ctx, job) }()
		select {
		case err := <-done:
			t.Fatalf("returned before Stop: %v", err)
		case <-time.After(30 * time.Millisecond):
		}
		require.True(t, task.Stop())
		select {
		case err := <-done:
			require.ErrorIs(t, err, tasks.ErrStopped)
		case <-time.After(5 * time.Second):
			t.Fatal("Stop did not end the send")
		}
	})
}

func TestEmailParams(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, params, wantErr string }{
		{"NoTo", `{"subject":"x"}`, `email: params: field "to": at least one recipient is required`},
		{"BadTo", `{"to":["not-an-address"]}`, `email: params: field "to": "not-an-address" is not an email address`},
		{"ToNotList", `{"to":"a@example.com"}`, `email: params: field "to": expected a list`},
		{"Unknown", `{"to":["a@example.com"],"cc":["b@example.com"]}`, `email: params: unknown field "cc"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			task := email.New()
			require.ErrorContains(t, task.(tasks.Validator).Validate(json.RawMessage(tt.params)), tt.wantErr)
			_, err := run(t, task, tt.params)
			require.ErrorContains(t, err, tt.wantErr, "params are checked before the missing sender")
		})
	}
}

// blockingSender holds Send until released, so a test can act mid-send.
type blockingSender struct{ arrived, release chan struct{} }

func (s *blockingSender) Send(ctx context.Context, _ []string, _, _ string) error {
	close(s.arrived)
	select {
	case <-s.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Pause is honest: a message being sent cannot be held, so Pause says no
// rather than reporting a pause while the SMTP exchange goes on; before
// the send, a pause holds it.
func TestEmailPause(t *testing.T) {
	t.Parallel()

	t.Run("RefusedWhileSending", func(t *testing.T) {
		t.Parallel()
		s := &blockingSender{arrived: make(chan struct{}), release: make(chan struct{})}
		task := email.NewWithSender(s)
		logger, _ := logtest.NewNullLogger()
		job := &tasks.Job{ID: 5, Params: json.RawMessage(`{"to":["a@example.com"]}`), Logger: logrus.NewEntry(logger)}
		ctx, cancel := tasks.Prepare(context.Background(), task, job)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- task.Execute(ctx, job) }()
		<-s.arrived
		paused := task.Pause()
		close(s.release)
		require.False(t, paused, "the send goes on: Pause must refuse")
		require.False(t, job.Paused())
		require.NoError(t, <-done)
		require.False(t, task.Pause(), "sent: nothing left to pause")
	})

	t.Run("HoldsBeforeSending", func(t *testing.T) {
		t.Parallel()
		s := &blockingSender{arrived: make(chan struct{}), release: make(chan struct{})}
		close(s.release)
		task := email.NewWithSender(s)
		logger, _ := logtest.NewNullLogger()
		job := &tasks.Job{ID: 5, Params: json.RawMessage(`{"to":["a@example.com"]}`), Logger: logrus.NewEntry(logger)}
		ctx, cancel := tasks.Prepare(context.Background(), task, job)
		defer cancel()
		require.True(t, task.Pause())
		done := make(chan error, 1)
		go func() { done <- task.Execute(ctx, job) }()
		select {
		case <-s.arrived:
			t.Fatal("sent while paused")
		case <-time.After(30 * time.Millisecond): // nothing to wait on for "did not happen"
		}
		require.True(t, task.Resume())
		require.NoError(t, <-done)
		<-s.arrived
	})
}
