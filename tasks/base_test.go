package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/tasks"
)

// recordingNotifier stands in for notify.Mailer, which has its own tests.
type recordingNotifier struct {
	mu       sync.Mutex
	statuses []string
	err      error
}

func (n *recordingNotifier) Notify(_ context.Context, _ *tasks.Job, r tasks.Result) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.statuses = append(n.statuses, r.Status)
	return n.err
}

func (n *recordingNotifier) got() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.statuses...)
}

// requireBlocked fails unless ch stays open for a moment: the only way to show
// that something is held is to watch it not finish.
func requireBlocked(t *testing.T, ch <-chan error) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("returned while it should be held: %v", err)
	case <-time.After(30 * time.Millisecond):
	}
}

func requireReturns(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("did not return")
		return nil
	}
}

func TestBasePauseResume(t *testing.T) {
	t.Parallel()
	task, job := &nopTask{}, &tasks.Job{ID: 1}

	require.False(t, task.Pause(), "no job before Prepare")
	require.False(t, task.Resume())
	require.False(t, task.Stop())

	ctx, cancel := tasks.Prepare(context.Background(), task, job)
	defer cancel()

	require.NoError(t, job.Checkpoint(ctx), "not paused: returns at once")
	require.True(t, task.Pause())
	require.False(t, task.Pause(), "already paused")
	require.True(t, job.Paused())

	done := make(chan error, 1)
	go func() { done <- job.Checkpoint(ctx) }()
	requireBlocked(t, done)

	require.True(t, task.Resume())
	require.False(t, task.Resume(), "already running")
	require.NoError(t, requireReturns(t, done))
	require.GreaterOrEqual(t, job.PausedDuration(), 30*time.Millisecond)
	require.False(t, job.Paused())
}

func TestBaseStop(t *testing.T) {
	t.Parallel()

	t.Run("CancelsContext", func(t *testing.T) {
		t.Parallel()
		task, job := &nopTask{}, &tasks.Job{}
		ctx, cancel := tasks.Prepare(context.Background(), task, job)
		defer cancel()
		require.NoError(t, ctx.Err())
		require.True(t, task.Stop())
		require.ErrorIs(t, ctx.Err(), context.Canceled)
		require.ErrorIs(t, context.Cause(ctx), tasks.ErrStopped)
	})

	t.Run("ReleasesPausedCheckpoint", func(t *testing.T) {
		t.Parallel()
		task, job := &nopTask{}, &tasks.Job{}
		ctx, cancel := tasks.Prepare(context.Background(), task, job)
		defer cancel()
		require.True(t, task.Pause())
		done := make(chan error, 1)
		go func() { done <- job.Checkpoint(ctx) }()
		requireBlocked(t, done)
		require.True(t, task.Stop())
		require.ErrorIs(t, requireReturns(t, done), context.Canceled)
	})

	t.Run("ParentCancelReachesTask", func(t *testing.T) {
		t.Parallel()
		parent, cancelParent := context.WithCancel(context.Background())
		ctx, cancel := tasks.Prepare(parent, &nopTask{}, &tasks.Job{})
		defer cancel()
		cancelParent()
		require.ErrorIs(t, ctx.Err(), context.Canceled)
	})
}

// plainTask implements Task without Base; Prepare must still work.
type plainTask struct{}

func (plainTask) Execute(context.Context, *tasks.Job) error                  { return nil }
func (plainTask) Pause() bool                                                { return false }
func (plainTask) Resume() bool                                               { return false }
func (plainTask) Stop() bool                                                 { return false }
func (plainTask) OnQueue(context.Context, *tasks.Job) error                  { return nil }
func (plainTask) OnComplete(context.Context, *tasks.Job, tasks.Result) error { return nil }

func TestPrepareWithoutBase(t *testing.T) {
	t.Parallel()
	ctx, cancel := tasks.Prepare(context.Background(), plainTask{}, &tasks.Job{})
	require.NoError(t, ctx.Err())
	cancel()
	require.ErrorIs(t, ctx.Err(), context.Canceled)
}

func TestBaseOnComplete(t *testing.T) {
	t.Parallel()
	statuses := []string{tasks.StatusSucceeded, tasks.StatusFailed, tasks.StatusStopped}
	tests := []struct {
		on   string
		want []string
	}{
		{on: tasks.NotifyNever, want: nil},
		{on: "", want: nil},
		{on: tasks.NotifyFailure, want: []string{tasks.StatusFailed, tasks.StatusStopped}},
		{on: tasks.NotifySuccess, want: []string{tasks.StatusSucceeded}},
		{on: tasks.NotifyAlways, want: statuses},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("On=%q", tt.on), func(t *testing.T) {
			t.Parallel()
			n := &recordingNotifier{}
			job := &tasks.Job{Notify: tasks.NotifySpec{On: tt.on, Emails: []string{"ops@example.com"}}, Notifier: n}
			task := &nopTask{}
			for _, s := range statuses {
				require.NoError(t, task.OnComplete(context.Background(), job, tasks.Result{Status: s}))
			}
			require.Equal(t, tt.want, n.got())
		})
	}

	t.Run("RetryingAttempt", func(t *testing.T) {
		t.Parallel()
		n := &recordingNotifier{}
		job := &tasks.Job{Notify: tasks.NotifySpec{On: tasks.NotifyAlways}, Notifier: n}
		require.NoError(t, (&nopTask{}).OnComplete(context.Background(), job, tasks.Result{Status: tasks.StatusFailed, Retrying: true}))
		require.Empty(t, n.got(), "an attempt that will be retried is not the outcome")
		require.NoError(t, (&nopTask{}).OnComplete(context.Background(), job, tasks.Result{Status: tasks.StatusFailed}))
		require.Equal(t, []string{tasks.StatusFailed}, n.got())
	})

	t.Run("NilNotifier", func(t *testing.T) {
		t.Parallel()
		job := &tasks.Job{Notify: tasks.NotifySpec{On: tasks.NotifyAlways}}
		require.NoError(t, (&nopTask{}).OnComplete(context.Background(), job, tasks.Result{Status: tasks.StatusFailed}))
	})

	t.Run("NotifierError", func(t *testing.T) {
		t.Parallel()
		n := &recordingNotifier{err: errors.New("queue full")}
		job := &tasks.Job{ID: 9, Notify: tasks.NotifySpec{On: tasks.NotifyAlways}, Notifier: n}
		err := (&nopTask{}).OnComplete(context.Background(), job, tasks.Result{Status: tasks.StatusFailed})
		require.EqualError(t, err, "tasks: notify job 9: queue full")
	})
}

func TestWithActiveTimeout(t *testing.T) {
	t.Parallel()

	t.Run("Fires", func(t *testing.T) {
		t.Parallel()
		job := &tasks.Job{}
		ctx, cancel := tasks.WithActiveTimeout(context.Background(), job, 10*time.Millisecond)
		defer cancel()
		<-ctx.Done()
		require.ErrorIs(t, context.Cause(ctx), tasks.ErrTimeout)
	})

	t.Run("PauseStopsTheClock", func(t *testing.T) {
		t.Parallel()
		task, job := &nopTask{}, &tasks.Job{}
		pctx, pcancel := tasks.Prepare(context.Background(), task, job)
		defer pcancel()
		ctx, cancel := tasks.WithActiveTimeout(pctx, job, 40*time.Millisecond)
		defer cancel()
		require.True(t, task.Pause())
		select {
		case <-ctx.Done():
			t.Fatal("timed out while paused")
		case <-time.After(80 * time.Millisecond):
		}
		require.True(t, task.Resume())
		<-ctx.Done()
		require.ErrorIs(t, context.Cause(ctx), tasks.ErrTimeout)
	})

	t.Run("Zero", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := tasks.WithActiveTimeout(context.Background(), &tasks.Job{}, 0)
		require.NoError(t, ctx.Err())
		cancel()
		require.ErrorIs(t, context.Cause(ctx), context.Canceled)
	})
}

func TestJob(t *testing.T) {
	t.Parallel()

	t.Run("LogFallback", func(t *testing.T) {
		t.Parallel()
		e := (&tasks.Job{ID: 4, ScheduleID: 2}).Log()
		require.NotNil(t, e)
		require.Equal(t, int64(4), e.Data["job_id"])
		require.Equal(t, int64(2), e.Data["schedule_id"])
	})

	t.Run("ResultAndAttachments", func(t *testing.T) {
		t.Parallel()
		job := &tasks.Job{}
		job.SetResult("a")
		job.SetResult("b")
		require.Equal(t, "b", job.Result())
		job.Attach(tasks.Attachment{Name: "r.csv", Data: []byte("x,y")})
		got := job.Attachments()
		require.Len(t, got, 1)
		require.Equal(t, "r.csv", got[0].Name)
	})

	t.Run("CheckpointHonoursCancel", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		require.ErrorIs(t, (&tasks.Job{}).Checkpoint(ctx), context.Canceled)
	})

	t.Run("ResultDuration", func(t *testing.T) {
		t.Parallel()
		start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		r := tasks.Result{StartedAt: start, FinishedAt: start.Add(time.Second)}
		require.Equal(t, time.Second, r.Duration())
		require.Zero(t, tasks.Result{}.Duration())
	})
}

func TestContextError(t *testing.T) {
	t.Parallel()
	task := &nopTask{}
	ctx, cancel := tasks.Prepare(context.Background(), task, &tasks.Job{})
	defer cancel()
	require.NoError(t, tasks.ContextError(ctx))
	task.Stop()
	err := tasks.ContextError(ctx)
	require.EqualError(t, err, "tasks: job stopped (context canceled)")
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, tasks.ErrStopped)

	plain, cancelPlain := context.WithCancel(context.Background())
	cancelPlain()
	require.EqualError(t, tasks.ContextError(plain), "context canceled")
}

// The active timeout and pause accounting run on the job's clock: with a
// fake one, time spent paused is left out of the budget without the test
// sleeping.
func TestActiveTimeoutOnJobClock(t *testing.T) {
	t.Parallel()
	clock := clockwork.NewFakeClock()
	task, job := &nopTask{}, &tasks.Job{Clock: clock}
	pctx, pcancel := tasks.Prepare(context.Background(), task, job)
	defer pcancel()
	ctx, cancel := tasks.WithActiveTimeout(pctx, job, time.Minute)
	defer cancel()

	clock.Advance(40 * time.Second)
	require.True(t, task.Pause())
	clock.Advance(time.Hour) // paused: none of this counts
	require.NoError(t, ctx.Err(), "timed out while paused")
	require.Equal(t, time.Hour, job.PausedDuration())
	require.True(t, task.Resume())
	require.Equal(t, time.Hour, job.PausedDuration())

	clock.Advance(19 * time.Second) // 59s of active time
	require.NoError(t, ctx.Err(), "timed out before its minute of active time")
	clock.Advance(time.Second)
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second): // AfterFunc runs on its own goroutine
		t.Fatal("no timeout after a minute of active time")
	}
	require.ErrorIs(t, context.Cause(ctx), tasks.ErrTimeout)
}

// The typed outcomes are found through wrapping, keep their cause, and a
// cancel is notified as a failure while a snooze is never notified.
func TestOutcomes(t *testing.T) {
	t.Parallel()
	cause := errors.New("401 unauthorized")
	var skip *tasks.SkipRetryError
	require.ErrorAs(t, fmt.Errorf("call: %w", tasks.SkipRetry(cause)), &skip)
	require.ErrorIs(t, skip, cause)
	var cancel *tasks.CancelError
	require.ErrorAs(t, fmt.Errorf("call: %w", tasks.Cancel(cause)), &cancel)
	require.ErrorIs(t, cancel, cause)
	require.Equal(t, "canceled by the task: no reason given", tasks.Cancel(nil).Error())
	var snooze *tasks.SnoozeError
	require.ErrorAs(t, tasks.Snooze(time.Minute), &snooze)
	require.Equal(t, time.Minute, snooze.Delay)
	require.Equal(t, tasks.MaxSnoozeDelay, tasks.Snooze(100*365*24*time.Hour).(*tasks.SnoozeError).Delay)

	failure := tasks.NotifySpec{On: tasks.NotifyFailure}
	require.True(t, failure.Wants(tasks.StatusCanceled))
	require.False(t, failure.Wants(tasks.StatusSnoozed))
	require.False(t, tasks.NotifySpec{On: tasks.NotifyAlways}.Wants(tasks.StatusSnoozed))
}
