package sleep_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/tasks/sleep"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func setup(t *testing.T, params string) (tasks.Task, *tasks.Job, context.Context) {
	t.Helper()
	task := sleep.New()
	job := &tasks.Job{ID: 1, TaskType: sleep.Kind, Params: json.RawMessage(params)}
	ctx, cancel := tasks.Prepare(context.Background(), task, job)
	t.Cleanup(cancel)
	return task, job, ctx
}

func run(ctx context.Context, task tasks.Task, job *tasks.Job) <-chan error {
	done := make(chan error, 1)
	go func() { done <- task.Execute(ctx, job) }()
	return done
}

func TestSleep(t *testing.T) {
	t.Parallel()

	t.Run("Sleeps", func(t *testing.T) {
		t.Parallel()
		task, job, ctx := setup(t, `{"duration":"20ms"}`)
		start := time.Now()
		require.NoError(t, task.Execute(ctx, job))
		require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
		require.Equal(t, "slept 20ms", job.Result())
	})

	t.Run("ZeroByDefault", func(t *testing.T) {
		t.Parallel()
		task, job, ctx := setup(t, ``)
		require.NoError(t, task.Execute(ctx, job))
		require.Equal(t, "slept 0s", job.Result())
	})

	t.Run("Fail", func(t *testing.T) {
		t.Parallel()
		task, job, ctx := setup(t, `{"duration":"1ms","fail":true}`)
		require.ErrorIs(t, task.Execute(ctx, job), sleep.ErrFailed)
		require.Equal(t, "slept 1ms", job.Result())
	})

	t.Run("PauseHolds", func(t *testing.T) {
		t.Parallel()
		task, job, ctx := setup(t, `{"duration":"40ms"}`)
		require.True(t, task.Pause(), "pause before it starts: it must not make progress")
		done := run(ctx, task, job)
		select {
		case err := <-done:
			t.Fatalf("finished while paused: %v", err)
		case <-time.After(80 * time.Millisecond): // twice the duration
		}
		require.True(t, task.Resume())
		start := time.Now()
		require.NoError(t, <-done)
		require.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond, "the full duration still ran after resume")
		require.GreaterOrEqual(t, job.PausedDuration(), 80*time.Millisecond)
	})

	t.Run("StopWhilePaused", func(t *testing.T) {
		t.Parallel()
		task, job, ctx := setup(t, `{"duration":"1h"}`)
		done := run(ctx, task, job)
		require.True(t, task.Pause())
		require.True(t, task.Stop())
		err := <-done
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, context.Cause(ctx), tasks.ErrStopped)
	})

	t.Run("Timeout", func(t *testing.T) {
		t.Parallel()
		task, job, ctx := setup(t, `{"duration":"1h"}`)
		tctx, cancel := tasks.WithActiveTimeout(ctx, job, 20*time.Millisecond)
		defer cancel()
		err := task.Execute(tctx, job)
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, context.Cause(tctx), tasks.ErrTimeout)
		require.Contains(t, err.Error(), "sleep: after")
	})

	t.Run("BadParams", func(t *testing.T) {
		t.Parallel()
		task, job, ctx := setup(t, `{"duration":"soon"}`)
		require.ErrorContains(t, task.Execute(ctx, job), `params: field "duration"`)
		require.ErrorContains(t, task.(tasks.Validator).Validate(json.RawMessage(`{"durration":"1s"}`)), `unknown field "durration"`)
	})
}
