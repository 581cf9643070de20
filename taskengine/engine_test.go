package taskengine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// An ad hoc job inserted by plain SQL with only job_definition_id runs
// once with the definition's defaults, and every transition is logged.
func TestAdHocJobSucceeds(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "adhoc", DefaultParams: `{"duration":"20ms"}`}).ID
		// The way an admin's SQL would: only the definition.
		require.NoError(t, db.Exec(`INSERT INTO jobs (job_definition_id) VALUES (?)`, def).Error)
		var id int64
		require.NoError(t, db.Raw(`SELECT MAX(id) FROM jobs`).Scan(&id).Error)
		e := startEngine(t, st, testConfig(t, nodeName(t)))
		j := waitOutcome(t, e, st, id, models.JobSucceeded)
		require.Equal(t, 1, j.Attempt)
		require.Equal(t, nodeName(t), j.NodeID)
		require.Equal(t, "slept 20ms", deref(j.Result))
		require.Nil(t, j.Error)
		require.NotNil(t, j.QueuedAt)
		require.NotNil(t, j.StartedAt)
		require.NotNil(t, j.FinishedAt)
		require.NotNil(t, j.HeartbeatAt)
		require.False(t, j.FinishedAt.Before(*j.StartedAt))
		// The plain path's transitions live in the row's columns (node_id,
		// queued_at, started_at, attempt, finished_at, checked above), and
		// so does a success: job_logs gets no row at all, and the log as
		// listed ends with the line the store derives from the row.
		require.Empty(t, jobLogs(t, db, id))
		ctx := context.Background()
		lines, err := st.Admin().ListJobLogs(ctx, id, 0, 10)
		require.NoError(t, err)
		require.Len(t, lines, 1)
		require.Equal(t, models.OutcomeLogID, lines[0].ID)
		require.Contains(t, lines[0].Message, "succeeded (attempt 1, ")
		require.True(t, j.FinishedAt.Equal(lines[0].CreatedAt))
		more, err := st.Admin().ListJobLogs(ctx, id, lines[0].ID, 10)
		require.NoError(t, err)
		require.Empty(t, more, "a follower that has the outcome line gets nothing more")
		tail, err := st.TailLogs(ctx, id, 5)
		require.NoError(t, err)
		require.Len(t, tail, 1)
		require.Contains(t, tail[0], "succeeded (attempt 1, ")
	})
}

// A failing job is retried with exponential, jittered backoff until its
// attempts are used up. The clock is fake, so the test does not wait.
func TestRetriesWithBackoff(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		clock := clockwork.NewFakeClockAt(time.Now().Add(time.Second))
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "flaky", DefaultParams: `{"duration":"0s","fail":true}`, MaxAttempts: 3, RetryBackoffSeconds: 10}).ID
		require.NoError(t, db.Exec(`UPDATE job_definitions SET notify_on = 'failure', notify_emails = 'ops@example.com' WHERE id = ?`, def).Error)
		id := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def}).ID
		cfg := testConfig(t, nodeName(t))
		cfg.Clock = clock
		e := startEngine(t, st, cfg)

		base := 10 * time.Second
		mark := 0
		for attempt := 1; attempt <= 2; attempt++ {
			j := waitOutcomeFrom(t, e, st, mark, id, models.JobPending)
			require.Equal(t, attempt, j.Attempt)
			require.Contains(t, deref(j.Error), "failing as asked")
			require.Empty(t, j.NodeID, "a retry may run on any node")
			require.Nil(t, j.FinishedAt)
			delay := j.RunAt.Sub(clock.Now())
			want := base << (attempt - 1)
			require.GreaterOrEqual(t, delay, want*8/10-time.Millisecond, "attempt %d", attempt)
			require.LessOrEqual(t, delay, want*12/10, "attempt %d", attempt)
			requireLog(t, db, id, fmt.Sprintf("attempt %d of 3 failed", attempt))
			// started_at will be overwritten by the next attempt: the
			// failure line keeps when this one started.
			requireLog(t, db, id, "this attempt started at "+j.StartedAt.UTC().Format(startedLayout))
			if attempt > 1 {
				requireLog(t, db, id, fmt.Sprintf("running: attempt %d of 3", attempt))
			}
			// Not due yet: a claim after a wake-up takes nothing.
			claims := claimMark(e)
			e.Wake()
			require.Empty(t, waitClaimAfter(t, e, claims).ids)
			require.Equal(t, models.JobPending, testdb.GetJob(t, st, id).Status)
			mark = e.signals.flushed.Len()
			clock.Advance(want * 13 / 10)
			e.Wake()
		}
		j := waitOutcomeFrom(t, e, st, mark, id, models.JobFailed)
		require.Equal(t, 3, j.Attempt)
		require.NotNil(t, j.FinishedAt)
		require.Contains(t, deref(j.Error), "failing as asked")
		requireLog(t, db, id, "failed (attempt 3 of 3)")
		// One notice, for the outcome, not one per attempt; written with it.
		var notes []models.Notification
		require.NoError(t, db.Find(&notes).Error)
		require.Len(t, notes, 1)
		require.Equal(t, id, notes[0].JobID)
		require.Equal(t, 3, notes[0].Attempt)
		require.Equal(t, models.JobFailed, notes[0].JobStatus)
		require.Equal(t, "ops@example.com", notes[0].Recipients)
		require.Equal(t, models.NotificationPending, notes[0].Status)
	})
}

func TestRetryBackoffBounds(t *testing.T) {
	t.Parallel()
	for attempt := 1; attempt <= 20; attempt++ {
		d := retryBackoff(10*time.Second, attempt, time.Hour)
		want := min(10*time.Second<<min(attempt-1, 20), time.Hour)
		require.GreaterOrEqual(t, d, min(want*8/10, time.Hour))
		require.LessOrEqual(t, d, time.Hour)
	}
	require.Zero(t, retryBackoff(0, 3, time.Hour))
}

func TestTimeoutFailsTheAttempt(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "slow", DefaultParams: `{"duration":"30s"}`, TimeoutSeconds: 1}).ID
		id := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def}).ID
		e := startEngine(t, st, testConfig(t, nodeName(t)))
		j := waitOutcome(t, e, st, id, models.JobFailed)
		require.Contains(t, deref(j.Error), "timeout")
		require.Less(t, j.FinishedAt.Sub(*j.StartedAt), 20*time.Second)
	})
}

// A panicking task fails its job, with the stack in job_logs, and the
// engine goes on running other jobs.
func TestPanicFailsOnlyThatJob(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		bad := adHocJob(t, st, &testdb.DefinitionOpts{Name: "panics", TaskType: "panic"})
		e := startEngine(t, st, testConfig(t, nodeName(t)))
		j := waitOutcome(t, e, st, bad, models.JobFailed)
		require.Contains(t, deref(j.Error), "boom in the task")
		requireLog(t, db, bad, "goroutine")
		requireLog(t, db, bad, "panicTask")

		good := adHocJob(t, st, &testdb.DefinitionOpts{Name: "fine", DefaultParams: `{"duration":"0s"}`})
		waitOutcome(t, e, st, good, models.JobSucceeded)
	})
}

func TestUnknownTaskTypeFails(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		id := adHocJob(t, st, &testdb.DefinitionOpts{Name: "typo", TaskType: "slep"})
		e := startEngine(t, st, testConfig(t, nodeName(t)))
		j := waitOutcome(t, e, st, id, models.JobFailed)
		require.Contains(t, deref(j.Error), `"slep"`)
		require.Contains(t, deref(j.Error), "registered: panic, sleep, sleep-queued, slowqueue, stubborn")
		requireLog(t, db, id, "failed before starting")
	})
}

// A pause does not count against the timeout: paused on the engine's clock
// for thirty times its timeout, the job still succeeds once let go, and
// without the pause the same clock times it out.
func TestPauseDoesNotCountAgainstTimeout(t *testing.T) {
	t.Parallel()
	for _, pause := range []bool{true, false} {
		t.Run(fmt.Sprintf("pause=%v", pause), func(t *testing.T) {
			t.Parallel()
			testdb.ForEach(t, func(t *testing.T, st *store.Store) {
				db := st.DB()
				gate, open := openGate(t)
				id := adHocJob(t, st, &testdb.DefinitionOpts{Name: "timed", TaskType: "wait", DefaultParams: `{"gate":"` + gate + `"}`, TimeoutSeconds: 2})
				clock := clockwork.NewFakeClockAt(time.Now().Add(time.Second))
				cfg := testConfig(t, nodeName(t))
				cfg.Clock = clock
				e := startEngine(t, st, cfg)
				waitStarted(t, e, id) // its timeout is armed on the clock
				control := func(c models.JobControl, want models.JobStatus) {
					require.NoError(t, db.Exec(`UPDATE jobs SET control = ? WHERE id = ?`, c, id).Error)
					clock.Advance(cfg.ControlInterval) // the control tick reads it
					require.Equal(t, want, waitControlled(t, e, id, c).to)
				}
				if pause {
					control(models.ControlPause, models.JobPaused)
				}
				clock.Advance(time.Minute)
				if !pause {
					j := waitOutcome(t, e, st, id, models.JobFailed)
					require.Contains(t, deref(j.Error), "timeout")
					return
				}
				control(models.ControlResume, models.JobRunning)
				open()
				waitOutcome(t, e, st, id, models.JobSucceeded)
			})
		})
	}
}

// Pause, resume and stop through jobs.control, and a refusal.
func TestControlPauseResumeStop(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		long := adHocJob(t, st, &testdb.DefinitionOpts{Name: "long", DefaultParams: `{"duration":"60s"}`})
		stubborn := adHocJob(t, st, &testdb.DefinitionOpts{Name: "stubborn", TaskType: "stubborn"})
		e := startEngine(t, st, testConfig(t, nodeName(t)))
		for _, id := range []int64{long, stubborn} {
			waitStarted(t, e, id)
		}
		setControl := func(id int64, c models.JobControl) {
			require.NoError(t, db.Exec(`UPDATE jobs SET control = ? WHERE id = ?`, c, id).Error)
		}

		setControl(long, models.ControlPause)
		setControl(stubborn, models.ControlPause)
		require.Equal(t, models.JobPaused, waitControlled(t, e, long, models.ControlPause).to)
		require.Empty(t, waitControlled(t, e, stubborn, models.ControlPause).to, "refused")
		j := testdb.GetJob(t, st, stubborn)
		require.Equal(t, models.JobRunning, j.Status)
		require.Equal(t, models.ControlNone, j.Control)
		require.Equal(t, models.JobPaused, testdb.GetJob(t, st, long).Status)
		waitLogged(t, e, stubborn, "pause refused")
		waitLogged(t, e, long, "paused (control = pause)")

		setControl(long, models.ControlResume)
		require.Equal(t, models.JobRunning, waitControlled(t, e, long, models.ControlResume).to)
		require.Equal(t, models.JobRunning, testdb.GetJob(t, st, long).Status)
		waitLogged(t, e, long, "resumed")

		setControl(long, models.ControlStop)
		setControl(stubborn, models.ControlStop)
		j = waitOutcome(t, e, st, long, models.JobStopped)
		require.Contains(t, deref(j.Error), "stopped")
		require.Equal(t, models.ControlNone, j.Control)
		waitOutcome(t, e, st, stubborn, models.JobStopped)
		requireLog(t, db, long, "stop requested")
	})
}

// control = stop on a job that has not started cancels it.
func TestStopCancelsPendingJob(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "later", DefaultParams: `{"duration":"0s"}`}).ID
		require.NoError(t, db.Exec(`INSERT INTO jobs (job_definition_id, run_at) VALUES (?, ?)`,
			def, store.DBTime(time.Now().Add(time.Hour))).Error)
		var id int64
		require.NoError(t, db.Raw(`SELECT MAX(id) FROM jobs`).Scan(&id).Error)
		e := startEngine(t, st, testConfig(t, nodeName(t)))
		require.NoError(t, db.Exec(`UPDATE jobs SET control = 'stop' WHERE id = ?`, id).Error)
		require.Equal(t, models.JobCanceled, waitControlled(t, e, id, models.ControlStop).to)
		j := testdb.GetJob(t, st, id)
		require.Equal(t, models.JobCanceled, j.Status)
		require.Equal(t, 0, j.Attempt)
		require.Equal(t, models.ControlNone, j.Control)
		require.NotNil(t, j.FinishedAt)
		requireLog(t, db, id, "canceled")
	})
}

// concurrency = 'forbid': the second job of a schedule waits until the
// first is done, and says so once.
func TestForbidConcurrency(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "exclusive", DefaultParams: `{"duration":"600ms"}`}).ID
		sid := insertForbidSchedule(t, db, def)
		now := time.Now()
		var ids []int64
		for i := 3; i >= 1; i-- {
			at := store.DBTime(now.Add(-time.Duration(i) * time.Second))
			j := models.Job{ScheduleID: &sid, JobDefinitionID: def, ScheduledAt: at, RunAt: at, Status: models.JobPending}
			require.NoError(t, db.Create(&j).Error)
			ids = append(ids, j.ID)
		}
		e := startEngine(t, st, testConfig(t, nodeName(t)))
		var prev models.Job
		for i, id := range ids {
			j := waitOutcome(t, e, st, id, models.JobSucceeded)
			if i > 0 {
				require.False(t, j.StartedAt.Before(*prev.FinishedAt), "job %d started before job %d finished", id, prev.ID)
			}
			prev = j
		}
		for _, id := range ids[1:] {
			require.Equal(t, 1, countLogs(t, db, id, "concurrency = forbid"), "job %d: %v", id, jobLogs(t, db, id))
		}
	})
}

// Stop lets short jobs finish, sends never-started jobs back to pending
// without using an attempt, and cuts off jobs that outlive the grace period.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		short := adHocJob(t, st, &testdb.DefinitionOpts{Name: "short", DefaultParams: `{"duration":"300ms"}`})
		long := adHocJob(t, st, &testdb.DefinitionOpts{Name: "long", DefaultParams: `{"duration":"60s"}`, MaxAttempts: 2})
		queued := adHocJob(t, st, &testdb.DefinitionOpts{Name: "queued", TaskType: "slowqueue"})
		cfg := testConfig(t, nodeName(t))
		cfg.ShutdownGrace = 800 * time.Millisecond
		e := newTestEngine(t, st, cfg)
		require.NoError(t, e.Start(context.Background()))
		// A claim writes running before the job reaches its worker; a
		// Stop in between rightly gives the attempt back. This test is
		// about runs under way, so it waits for them.
		waitStarted(t, e, short)
		waitStarted(t, e, long)
		waitClaimed(t, e, queued)

		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		require.NoError(t, e.Stop(ctx))
		require.NoError(t, e.Stop(ctx), "Stop is idempotent")

		require.Equal(t, models.JobSucceeded, testdb.GetJob(t, st, short).Status)
		q := testdb.GetJob(t, st, queued)
		require.Equal(t, models.JobPending, q.Status)
		require.Equal(t, 0, q.Attempt)
		require.Empty(t, q.NodeID)
		l := testdb.GetJob(t, st, long)
		require.Equal(t, models.JobPending, l.Status, "cut off with an attempt left: retried")
		require.Equal(t, 1, l.Attempt)
		require.Contains(t, deref(l.Error), "grace period")
		// Buffers were flushed before Stop returned.
		require.Positive(t, countLogs(t, db, queued, "released to pending"))
		require.Zero(t, countLogs(t, db, short, "succeeded"), "a success is in the row, not in job_logs")
		require.Positive(t, countLogs(t, db, long, "attempt 1 of 2 failed"))
	})
}

func TestStartStopIdempotent(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		e := newTestEngine(t, st, testConfig(t, nodeName(t)))
		require.NoError(t, e.Stop(ctx), "stop before start")
		// A stopped engine starts again, and runs jobs again.
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "again", DefaultParams: `{"duration":"0s"}`}).ID
		for i := 0; i < 3; i++ {
			require.NoError(t, e.Start(ctx))
			require.NoError(t, e.Start(ctx))
			e.Wake()
			e.Wake()
			id := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def}).ID
			e.Wake()
			waitOutcome(t, e, st, id, models.JobSucceeded)
			require.NoError(t, e.Stop(ctx))
			require.NoError(t, e.Stop(ctx))
		}
	})
}

// An engine whose Start's ctx ends stops by itself, as gracefully as Stop:
// a job that never started goes back to pending.
func TestStopsWithItsContext(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		queued := adHocJob(t, st, &testdb.DefinitionOpts{Name: "queued", TaskType: "slowqueue"})
		e := newTestEngine(t, st, testConfig(t, nodeName(t)))
		ctx, cancel := context.WithCancel(context.Background())
		require.NoError(t, e.Start(ctx))
		waitClaimed(t, e, queued)
		cancel()
		select {
		case <-e.Stopped():
		case <-time.After(20 * time.Second):
			t.Fatal("the engine did not stop with its context")
		}
		require.NoError(t, e.Stop(context.Background()))
		q := testdb.GetJob(t, st, queued)
		require.Equal(t, models.JobPending, q.Status)
		require.Equal(t, 0, q.Attempt)
		require.Positive(t, countLogs(t, db, queued, "released to pending"))
	})
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	_, err := New(nil, nil)
	require.ErrorContains(t, err, "nil store")
	err = Config{}.WithDefaults().validate()
	require.ErrorContains(t, err, "NodeID")
	err = Config{NodeID: "n", PoolSize: -1, PollInterval: -time.Second}.validate()
	require.ErrorContains(t, err, "PoolSize")
	require.ErrorContains(t, err, "PollInterval")
	c := Config{NodeID: "n"}.WithDefaults()
	require.Equal(t, DefaultPollInterval, c.PollInterval)
	require.Equal(t, DefaultPoolSize, c.PoolSize)
	require.Equal(t, DefaultShutdownGrace, c.ShutdownGrace)
}
