package scheduleengine

import (
	"context"
	"github.com/go-co-op/gocron/v2"
	"github.com/jonboulle/clockwork"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

func TestFireWritesJobAndAdvancesTrigger(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st, "n1")
		start := b.clock.Now()
		s := b.schedule(t, models.Schedule{ScheduleType: models.ScheduleInterval, IntervalSeconds: ptr(60), Params: models.JSON(`{"b":3}`), MaxRuns: ptr(5)}, start)

		b.at(t, start.Add(time.Second)) // lease, sync, trigger created, first fire at created_at
		require.True(t, b.e.IsLeader())
		b.at(t, start.Add(30*time.Second)) // nothing due
		b.at(t, start.Add(61*time.Second))

		jobs := jobsOf(t, st, s.ID)
		require.Len(t, jobs, 2)
		require.True(t, start.Equal(jobs[0].ScheduledAt), "scheduled_at is the intended time, not the tick")
		require.True(t, start.Add(time.Minute).Equal(jobs[1].ScheduledAt))
		j := jobs[1]
		require.Equal(t, models.JobPending, j.Status)
		require.True(t, j.ScheduledAt.Equal(j.RunAt))
		require.Equal(t, 3, j.MaxAttempts)
		require.Equal(t, b.def.ID, j.JobDefinitionID)
		require.JSONEq(t, `{"a":1,"b":3}`, string(j.Params))
		require.False(t, j.CatchUp)

		tr := triggerOf(t, st, s.ID)
		require.EqualValues(t, 2, tr.FiredCount)
		require.EqualValues(t, 3, *tr.RemainingCount)
		require.True(t, start.Add(time.Minute).Equal(*tr.LastFireAt))
		require.True(t, start.Add(2*time.Minute).Equal(*tr.NextFireAt))
		require.EqualValues(t, 2, b.fired.Load(), "OnFire after each commit that wrote jobs")
	})
}

func TestRestoreCollapsesMissedFires(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st, "n1")
		start := b.clock.Now()
		s := b.schedule(t, models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("* * * * *")}, start.Add(-time.Hour))
		// A previous leader last fired 10 minutes ago, then the cluster was down.
		last := start.Add(-10 * time.Minute)
		require.NoError(t, st.DB().Create(&models.TimeTrigger{ScheduleID: s.ID, LastFireAt: &last, FiredCount: 50}).Error)

		// The engine comes up 2 s after the tick at start: that tick passed
		// while it was down too, so all 10 fold into one catch-up job,
		// however recent the last of them (the paper's restore rule).
		b.at(t, start.Add(2*time.Second))

		jobs := jobsOf(t, st, s.ID)
		require.Len(t, jobs, 1)
		require.True(t, jobs[0].CatchUp)
		require.Equal(t, 10, jobs[0].MissedFires)
		require.True(t, start.Equal(jobs[0].ScheduledAt), "the catch-up carries the latest missed time")
		tr := triggerOf(t, st, s.ID)
		require.EqualValues(t, 51, tr.FiredCount)
		require.EqualValues(t, 10, tr.MisfiredCount)
		// A row without spec_hash (written before it existed) is adopted
		// as it is, not taken for an edit: the catch-up above still came.
		require.Equal(t, specHash(&s, nil), tr.SpecHash)
		require.Nil(t, tr.SpecChangedAt)

		// Then the normal cadence resumes.
		b.at(t, start.Add(time.Minute))
		jobs = jobsOf(t, st, s.ID)
		require.Len(t, jobs, 2)
		require.False(t, jobs[1].CatchUp)
		require.True(t, start.Add(time.Minute).Equal(jobs[1].ScheduledAt))
	})
}

func TestTwoLeadersWriteEachFireOnce(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		a := setup(t, st, "a")
		b := setupWithClock(t, st, "b", a.clock) // a split brain: both lead
		start := a.clock.Now()
		s := a.schedule(t, models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("*/10 * * * * *")}, start)
		a.at(t, start.Add(time.Second))
		b.at(t, start.Add(time.Second))
		require.True(t, a.e.IsLeader())
		require.True(t, b.e.IsLeader())
		for _, d := range []time.Duration{10, 20, 30} {
			a.at(t, start.Add(d*time.Second))
			b.at(t, start.Add(d*time.Second))
		}
		require.Len(t, jobsOf(t, st, s.ID), 4) // +0s (created_at), +10s, +20s, +30s
		require.EqualValues(t, 4, triggerOf(t, st, s.ID).FiredCount, "absolute trigger state: the duplicate does not count twice")
	})
}

func TestLeadershipPassesOn(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		leadB := &switchLeadership{}
		a := setup(t, st, "a")
		b := setupWithClock(t, st, "b", a.clock, func(c *Config) { c.Leadership = leadB })
		start := a.clock.Now()
		s := a.schedule(t, models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("*/10 * * * * *")}, start)
		a.at(t, start.Add(time.Second))
		b.at(t, start.Add(time.Second))
		require.True(t, a.e.IsLeader())
		require.False(t, b.e.IsLeader())

		// a fires +10s and dies; b takes over at +30s and catches up the
		// +20s fire nobody wrote.
		a.at(t, start.Add(10*time.Second))
		a.stop(t)
		b.at(t, start.Add(29*time.Second))
		leadB.set(true)
		b.at(t, start.Add(30*time.Second))
		require.True(t, b.e.IsLeader())
		jobs := jobsOf(t, st, s.ID)
		require.Len(t, jobs, 4) // +0s and +10s by a, +20s (catch-up) and +30s by b
		require.True(t, jobs[2].CatchUp)
		require.True(t, start.Add(20*time.Second).Equal(jobs[2].ScheduledAt))
		require.False(t, jobs[3].CatchUp)
	})
}

func TestInvalidScheduleIsMarked(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st, "n1")
		start := b.clock.Now()
		bad := b.schedule(t, models.Schedule{Name: "bad", ScheduleType: models.ScheduleCron, CronExpr: ptr("not a cron")}, start)
		zone := b.schedule(t, models.Schedule{Name: "zone", ScheduleType: models.ScheduleCron, CronExpr: ptr("@daily"), Timezone: "Nowhere/City"}, start)
		orphan := b.schedule(t, models.Schedule{Name: "orphan", ScheduleType: models.ScheduleCron, CronExpr: ptr("@daily")}, start)
		require.NoError(t, st.DB().Model(&orphan).Update("job_definition_id", 999999).Error)
		good := b.schedule(t, models.Schedule{Name: "good", ScheduleType: models.ScheduleCron, CronExpr: ptr("* * * * * *")}, start)

		b.at(t, start.Add(time.Second))

		for s, reason := range map[int64]string{bad.ID: "bad cron_expr", zone.ID: "unknown timezone", orphan.ID: "does not exist"} {
			got := reload(t, st, models.Schedule{ID: s})
			require.Equal(t, models.ScheduleInvalid, got.Status)
			require.Contains(t, got.StatusReason, reason)
		}
		require.NotEmpty(t, jobsOf(t, st, good.ID), "one bad row does not stop the others")
	})
}

func TestPausedAndDeletedStopFiring(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		// No sync after the first: the fire transaction finds the change.
		b := setupWithClock(t, st, "n1", newClock(), func(c *Config) { c.SyncInterval, c.FullSyncInterval = time.Hour, time.Hour })
		start := b.clock.Now()
		p := b.schedule(t, models.Schedule{Name: "p", ScheduleType: models.ScheduleCron, CronExpr: ptr("*/10 * * * * *")}, start)
		d := b.schedule(t, models.Schedule{Name: "d", ScheduleType: models.ScheduleCron, CronExpr: ptr("*/10 * * * * *")}, start)
		b.at(t, start.Add(time.Second))
		// Plain SQL, between syncs: the fire transaction still sees it.
		require.NoError(t, st.DB().Exec("UPDATE schedules SET status = 'paused' WHERE id = ?", p.ID).Error)
		require.NoError(t, st.DB().Exec("DELETE FROM schedules WHERE id = ?", d.ID).Error)
		b.at(t, start.Add(10*time.Second))
		require.Len(t, jobsOf(t, st, p.ID), 1)
		require.Len(t, jobsOf(t, st, d.ID), 1)
		require.Empty(t, b.e.entries, "they are no longer driven")
	})
}

func TestSyncPicksUpChanges(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st, "n1")
		start := b.clock.Now()
		b.at(t, start)
		s := b.schedule(t, models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("0 0 1 1 *")}, start)
		b.at(t, start.Add(3*time.Second)) // incremental sync
		require.Contains(t, b.e.entries, s.ID)
		require.NoError(t, st.DB().Exec("UPDATE schedules SET cron_expr = '*/10 * * * * *' WHERE id = ?", s.ID).Error)
		b.e.Refresh()
		b.at(t, start.Add(10*time.Second))
		// A new expression starts the schedule afresh from when the sync
		// saw it: +0s, due under the new expression since the creation, is
		// not caught up.
		jobs := jobsOf(t, st, s.ID)
		require.Len(t, jobs, 1)
		require.False(t, jobs[0].CatchUp)
		require.True(t, start.Add(10*time.Second).Equal(jobs[0].ScheduledAt))
	})
}

func TestMaxRunsCompletesSchedule(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st, "n1")
		start := b.clock.Now()
		s := b.schedule(t, models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("*/10 * * * * *"), MaxRuns: ptr(2)}, start)
		once := b.schedule(t, models.Schedule{Name: "once", ScheduleType: models.ScheduleOnce, RunAt: ptr(start.Add(5 * time.Second))}, start)
		for d := time.Duration(0); d <= 40; d += 5 {
			b.at(t, start.Add(d*time.Second+time.Millisecond))
		}
		require.Len(t, jobsOf(t, st, s.ID), 2)
		require.Len(t, jobsOf(t, st, once.ID), 1)
		require.Equal(t, models.ScheduleCompleted, reload(t, st, s).Status)
		require.Equal(t, models.ScheduleCompleted, reload(t, st, once).Status)
		tr := triggerOf(t, st, s.ID)
		require.EqualValues(t, 0, *tr.RemainingCount)
		require.Nil(t, tr.NextFireAt)
	})
}

func TestForbidSkipsWhileJobUnfinished(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st, "n1")
		start := b.clock.Now()
		s := b.schedule(t, models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("*/10 * * * * *"), Concurrency: models.ConcurrencyForbid}, start)
		b.at(t, start.Add(time.Millisecond))
		b.at(t, start.Add(10*time.Second))
		require.Len(t, jobsOf(t, st, s.ID), 1, "the first job is still pending")
		require.NoError(t, st.DB().Exec("UPDATE jobs SET status = 'succeeded' WHERE schedule_id = ?", s.ID).Error)
		b.at(t, start.Add(20*time.Second))
		require.Len(t, jobsOf(t, st, s.ID), 2)
	})
}

// With sync out of the way, every fire after the first must come from the
// gocron alarm; the jobs still carry the Trigger's intended times.
func TestGocronDrivesFires(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		clock := newClock()
		b := setupWithClock(t, st, "n1", clock, func(c *Config) { c.SyncInterval, c.FullSyncInterval = time.Hour, time.Hour })
		start := clock.Now()
		s := b.schedule(t, models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("*/10 * * * * *"), Timezone: "Europe/Berlin"}, start)
		once := b.schedule(t, models.Schedule{Name: "once", ScheduleType: models.ScheduleOnce, RunAt: ptr(start.Add(25 * time.Second))}, start)
		b.at(t, start.Add(time.Second)) // lease, the only sync, the fire at created_at
		require.Len(t, b.e.cron.Jobs(), 1, "one gocron job: the alarm")
		for _, d := range []time.Duration{10, 20, 30} {
			b.at(t, start.Add(d*time.Second+time.Millisecond))
		}
		// Several occurrences at once: the alarm for +40 wakes the loop at
		// +62, and the plan from the trigger row writes +40 and +50 as
		// one catch-up.
		b.at(t, start.Add(62*time.Second))
		jobs := jobsOf(t, st, s.ID)
		require.Len(t, jobs, 6) // +0 … +30, +50 (catch-up for +40, +50), +60
		for i, want := range []time.Duration{0, 10, 20, 30, 50, 60} {
			require.True(t, start.Add(want*time.Second).Equal(jobs[i].ScheduledAt), "job %d at %s", i, jobs[i].ScheduledAt)
		}
		require.True(t, jobs[4].CatchUp)
		require.Equal(t, 2, jobs[4].MissedFires)
		require.Len(t, jobsOf(t, st, once.ID), 1)
		require.Equal(t, models.ScheduleCompleted, reload(t, st, once).Status)
		require.Len(t, b.e.cron.Jobs(), 1)
	})
}

func TestAlarmNeverReturnsZero(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	a := &alarm{at: at}
	require.True(t, at.Equal(a.Next(at.Add(-time.Minute))))
	// gocron's catch-up loops call Next until the result is not before
	// now; a zero or earlier time would never get there.
	require.True(t, a.Next(at).After(at))
	require.True(t, a.Next(at.Add(time.Hour)).After(at.Add(time.Hour)))
}

// The loop itself, on the real clock: start, fire, stop, restart.
func TestStartStop(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		log := logrus.New()
		log.SetLevel(logrus.WarnLevel)
		e, err := New(st, &Config{NodeID: "n1", Leadership: leading(), Logger: log, SyncInterval: 200 * time.Millisecond})
		require.NoError(t, err)
		e.testSignals.fired.Init(t)
		ctx := t.Context()
		require.NoError(t, e.Stop(ctx), "stop before start is harmless")
		<-e.Stopped()
		def := models.JobDefinition{Name: "d", TaskType: "sleep", NotifyOn: models.NotifyNever}
		require.NoError(t, st.DB().Create(&def).Error)

		require.NoError(t, e.Start(ctx))
		require.NoError(t, e.Start(ctx), "start twice is harmless")
		s := models.Schedule{Name: "s", JobDefinitionID: def.ID, ScheduleType: models.ScheduleCron, CronExpr: ptr("* * * * * *"),
			Timezone: "UTC", MisfirePolicy: models.MisfireFireOnce, Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive}
		require.NoError(t, st.DB().Create(&s).Error)
		e.Refresh()
		waitFired(t, e, func() bool { return len(jobsOf(t, st, s.ID)) >= 2 })
		require.NoError(t, e.Stop(ctx))
		require.NoError(t, e.Stop(ctx))
		<-e.Stopped()
		require.False(t, e.IsLeader())

		n := len(jobsOf(t, st, s.ID))
		require.NoError(t, e.Start(ctx), "an engine restarts")
		waitFired(t, e, func() bool { return len(jobsOf(t, st, s.ID)) > n })
		require.NoError(t, e.Stop(ctx))

		// A context that ends stops the engine too, and it may start again.
		cctx, cancel := context.WithCancel(ctx)
		require.NoError(t, e.Start(cctx))
		cancel()
		<-e.Stopped()
		require.NoError(t, e.Start(ctx))
		require.NoError(t, e.Stop(ctx))
	})
}

// An alarm in the same wall-clock second as the clock's now is armed at
// once. gocron takes a cron job's next run in the same second as its last
// (here: now) for a daylight-saving fall-back and asks Next again; the
// alarm answered that second call with an hour on, setAlarm saw its
// instant not armed and reported false, and the run loop went round
// again at once: a busy loop until the instant passed, every time the
// next wake-up fell within the current second.
func TestAlarmWithinTheCurrentSecond(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 12, 0, 0, 100e6, time.UTC)
	clock := clockwork.NewFakeClockAt(now)
	// setAlarm needs only the clock, a logger, the wake channel and gocron.
	e := &Engine{cfg: Config{Clock: clock}, log: logrus.New(), wake: make(chan struct{}, 1)}
	cron, err := gocron.NewScheduler(gocron.WithClock(clock), gocron.WithLocation(time.UTC))
	require.NoError(t, err)
	cron.Start()
	t.Cleanup(func() { _ = cron.Shutdown() })
	e.cron = cron

	at := now.Add(500 * time.Millisecond)
	require.True(t, e.setAlarm(at), "an alarm 500 ms ahead, in the same second, is armed")
	require.True(t, e.setAlarm(at), "and stays armed")
	select {
	case <-e.wake:
		t.Fatal("woken before the alarm's instant")
	default:
	}
	require.NoError(t, clock.BlockUntilContext(t.Context(), 1))
	clock.Advance(500 * time.Millisecond)
	select {
	case <-e.wake:
	case <-time.After(5 * time.Second):
		t.Fatal("the alarm did not wake the loop at its instant")
	}
	// Once: gocron's next run after it is an hour on.
	clock.Advance(time.Minute)
	select {
	case <-e.wake:
		t.Fatal("the alarm woke the loop twice")
	case <-time.After(200 * time.Millisecond):
	}
}
