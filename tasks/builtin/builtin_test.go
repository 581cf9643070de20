package builtin_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/tasks/builtin"
	"github.com/chimesched/chime/tasks/email"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRegister(t *testing.T) {
	t.Parallel()
	r := tasks.NewRegistry()
	require.NoError(t, builtin.Register(r))
	require.Equal(t, builtin.Kinds, r.Kinds())
	require.EqualError(t, builtin.Register(r), `builtin: kind "email" already registered`)

	partial := tasks.NewRegistry()
	partial.MustRegister("shell", func() tasks.Task { return nil })
	require.Error(t, builtin.Register(partial))
	require.Equal(t, []string{"shell"}, partial.Kinds(), "all or nothing")

	for _, kind := range builtin.Kinds {
		task, err := r.New(kind)
		require.NoError(t, err)
		_, ok := task.(tasks.Validator)
		require.True(t, ok, "%s validates params at the door", kind)
		// Their OnQueue is Base's: the engine may claim them straight into running.
		require.True(t, tasks.IsQueueFree(task), "%s is QueueFree", kind)
		require.NoError(t, task.OnQueue(context.Background(), &tasks.Job{}))
	}
	// Embedding Base does not make a task QueueFree: it must say so.
	require.False(t, tasks.IsQueueFree(&plainTask{}))
	require.ErrorContains(t, r.Validate("shell", json.RawMessage(`{"comand":"ls"}`)), `unknown field "comand"`)
	require.ErrorContains(t, r.Validate("httpcall", json.RawMessage(`{"url":"ftp://x"}`)), `field "url"`)
	require.NoError(t, r.Validate("sleep", json.RawMessage(`{"duration":"1s"}`)))
}

// plainTask embeds Base and says nothing about its OnQueue.
type plainTask struct{ tasks.Base }

func (*plainTask) Execute(context.Context, *tasks.Job) error { return nil }

type sender struct{ to []string }

func (s *sender) Send(_ context.Context, to []string, _, _ string) error { s.to = to; return nil }

func TestWithSender(t *testing.T) {
	t.Parallel()
	s := &sender{}
	r := tasks.NewRegistry()
	require.NoError(t, builtin.Register(r, builtin.WithSender(s)))
	task, err := r.New(email.Kind)
	require.NoError(t, err)
	logger, _ := logtest.NewNullLogger()
	job := &tasks.Job{Params: json.RawMessage(`{"to":["a@example.com"]}`), Logger: logrus.NewEntry(logger)}
	ctx, cancel := tasks.Prepare(context.Background(), task, job)
	defer cancel()
	require.NoError(t, task.Execute(ctx, job))
	require.Equal(t, []string{"a@example.com"}, s.to)

	r = tasks.NewRegistry()
	require.NoError(t, builtin.Register(r))
	task, err = r.New(email.Kind)
	require.NoError(t, err)
	require.ErrorIs(t, task.Execute(ctx, job), email.ErrNotConfigured)
}
