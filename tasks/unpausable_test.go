package tasks_test

import (
	"context"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/tasks"
)

const refusal = "test: cannot pause: the exchange is under way"

// prepared returns a Base task prepared with a job whose log lines land in
// the returned hook.
func prepared(t *testing.T) (*nopTask, *tasks.Job, context.Context, *logtest.Hook) {
	t.Helper()
	logger, hook := logtest.NewNullLogger()
	task, job := &nopTask{}, &tasks.Job{ID: 1, Logger: logrus.NewEntry(logger)}
	ctx, cancel := tasks.Prepare(context.Background(), task, job)
	t.Cleanup(cancel)
	return task, job, ctx, hook
}

// heldAtGate returns a prepared task whose BeginUnpausable is held by a
// pause; done receives what it returns.
func heldAtGate(t *testing.T) (*nopTask, *tasks.Job, <-chan error, *logtest.Hook) {
	t.Helper()
	task, job, ctx, hook := prepared(t)
	require.True(t, task.Pause())
	done := make(chan error, 1)
	go func() { done <- task.BeginUnpausable(ctx, job, refusal) }()
	requireBlocked(t, done)
	return task, job, done, hook
}

func refusals(hook *logtest.Hook) int {
	n := 0
	for _, e := range hook.AllEntries() {
		if e.Message == refusal && e.Level == logrus.WarnLevel {
			n++
		}
	}
	return n
}

func TestBaseBeginUnpausable(t *testing.T) {
	t.Parallel()

	t.Run("RefusesAfter", func(t *testing.T) {
		t.Parallel()
		task, job, ctx, hook := prepared(t)
		require.NoError(t, task.BeginUnpausable(ctx, job, refusal), "not paused: passes at once")
		require.False(t, task.Pause(), "the work has started: Pause must refuse")
		require.False(t, job.Paused())
		require.Equal(t, 1, refusals(hook), "the refusal says why")
		require.True(t, task.Stop(), "Stop still works")
	})

	t.Run("HoldsAPauseBefore", func(t *testing.T) {
		t.Parallel()
		task, _, done, hook := heldAtGate(t)
		require.True(t, task.Resume())
		require.NoError(t, requireReturns(t, done))
		require.False(t, task.Pause())
		require.Equal(t, 1, refusals(hook))
	})

	t.Run("StopWhileHeld", func(t *testing.T) {
		t.Parallel()
		task, job, done, _ := heldAtGate(t)
		require.True(t, task.Stop())
		require.ErrorIs(t, requireReturns(t, done), context.Canceled)
		require.True(t, job.Paused(), "pauses left as they were")
		require.True(t, task.Resume())
	})

	// Pause and the gate race: either the pause lands first and the gate
	// waits for Resume, or the gate closes first and Pause refuses; never a
	// granted pause with the work under way.
	t.Run("RacesWithPause", func(t *testing.T) {
		t.Parallel()
		for range 200 {
			task, job, ctx, _ := prepared(t)
			done := make(chan error, 1)
			go func() { done <- task.BeginUnpausable(ctx, job, refusal) }()
			if task.Pause() {
				select {
				case err := <-done:
					t.Fatalf("the gate passed (%v) under a granted pause", err)
				default:
				}
				require.True(t, task.Resume())
			}
			require.NoError(t, requireReturns(t, done))
			require.False(t, job.Paused(), "the gate passed: the job runs")
			require.False(t, task.Pause())
		}
	})
}

func TestBaseRefusePauses(t *testing.T) {
	t.Parallel()

	t.Run("Refuses", func(t *testing.T) {
		t.Parallel()
		task, job, _, hook := prepared(t)
		task.RefusePauses(refusal)
		task.RefusePauses("a later refusal")
		require.False(t, task.Pause())
		require.False(t, job.Paused())
		require.Equal(t, 1, refusals(hook), "the first refusal stays")
	})

	t.Run("KeepsAPauseInPlace", func(t *testing.T) {
		t.Parallel()
		task, job, _, _ := prepared(t)
		require.True(t, task.Pause())
		task.RefusePauses(refusal)
		require.True(t, job.Paused())
		require.True(t, task.Resume(), "Resume still releases it")
		require.False(t, task.Pause())
	})

	t.Run("EmptyRefusalStillRefuses", func(t *testing.T) {
		t.Parallel()
		task, _, _, hook := prepared(t)
		task.RefusePauses("")
		require.False(t, task.Pause())
		require.NotEmpty(t, hook.LastEntry().Message)
	})
}
