package scheduleengine

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// bundle is one engine on a fresh database with a fake clock.
type bundle struct {
	st    *store.Store
	e     *Engine
	clock *clockwork.FakeClock
	def   models.JobDefinition
	fired *atomic.Int64
}

func setup(t *testing.T, st *store.Store, nodeID string) *bundle {
	t.Helper()
	clock := clockwork.NewFakeClockAt(time.Now().UTC().Truncate(time.Minute).Add(time.Minute))
	return setupWithClock(t, st, nodeID, clock)
}

func setupWithClock(t *testing.T, st *store.Store, nodeID string, clock *clockwork.FakeClock, opts ...func(*Config)) *bundle {
	t.Helper()
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	b := &bundle{st: st, clock: clock, fired: &atomic.Int64{}}
	cfg := &Config{NodeID: nodeID, Clock: clock, Logger: log, OnFire: func() { b.fired.Add(1) }}
	for _, o := range opts {
		o(cfg)
	}
	e, err := New(st, cfg)
	require.NoError(t, err)
	b.e = e
	require.NoError(t, e.open())
	t.Cleanup(e.closeCron)
	db := st.DB()
	var def models.JobDefinition
	if db.Where("name = ?", "def").First(&def).Error != nil {
		def = models.JobDefinition{Name: "def", TaskType: "sleep", DefaultParams: models.JSON(`{"a":1,"b":2}`), MaxAttempts: 3, NotifyOn: models.NotifyNever}
		require.NoError(t, db.Create(&def).Error)
	}
	b.def = def
	return b
}

// schedule inserts an active schedule created at created.
func (b *bundle) schedule(t *testing.T, s models.Schedule, created time.Time) models.Schedule {
	t.Helper()
	s.JobDefinitionID = b.def.ID
	if s.Name == "" {
		s.Name = t.Name()
	}
	if s.Timezone == "" {
		s.Timezone = "UTC"
	}
	if s.MisfirePolicy == "" {
		s.MisfirePolicy = models.MisfireFireOnce
	}
	if s.Concurrency == "" {
		s.Concurrency = models.ConcurrencyAllow
	}
	if s.Status == "" {
		s.Status = models.ScheduleActive
	}
	s.CreatedAt = store.DBTime(created)
	require.NoError(t, b.st.DB().Create(&s).Error)
	return s
}

// at moves the fake clock to now, runs one tick there (lease, sync, what
// sync found due), then plays the run goroutine's part for gocron: it takes
// the fires gocron's timers hand over until every occurrence up to now is
// written. gocron runs its timers on goroutines of its own, so this waits on
// that hand-over, not on time.
func (b *bundle) at(t *testing.T, now time.Time) {
	t.Helper()
	b.clock.Advance(now.Sub(b.clock.Now()))
	ctx := t.Context()
	b.e.tick(ctx, now)
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for b.e.IsLeader() && pendingAt(b.e, now) {
		select {
		case m := <-b.e.fires:
			b.e.enqueue(m)
		case <-timeout.C:
			t.Fatalf("gocron handed over no fire for a schedule due at %s", now)
		}
		require.NoError(t, b.e.runOnce(ctx, now))
	}
}

// pendingAt reports whether a schedule has an occurrence at or before now
// that is not written yet.
func pendingAt(e *Engine, now time.Time) bool {
	for _, en := range e.entries {
		if !e.complete[en.sched.ID] && !en.next.IsZero() && !en.next.After(now) {
			return true
		}
	}
	return false
}

// cronJobs counts the gocron jobs of e.
func cronJobs(e *Engine) int { return len(e.cron.Jobs()) }

func jobsOf(t *testing.T, st *store.Store, scheduleID int64) []models.Job {
	t.Helper()
	var jobs []models.Job
	require.NoError(t, st.DB().Where("schedule_id = ?", scheduleID).Order("scheduled_at").Find(&jobs).Error)
	return jobs
}

func triggerOf(t *testing.T, st *store.Store, scheduleID int64) models.TimeTrigger {
	t.Helper()
	var tt models.TimeTrigger
	require.NoError(t, st.DB().Where("schedule_id = ?", scheduleID).First(&tt).Error)
	return tt
}

func reload(t *testing.T, st *store.Store, s models.Schedule) models.Schedule {
	t.Helper()
	require.NoError(t, st.DB().First(&s, s.ID).Error)
	return s
}

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
		require.Equal(t, specHash(&s), tr.SpecHash)
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
		b := setupWithClock(t, st, "b", a.clock)
		b.e.cfg.LeaseName = "scheduler-b" // a split brain: both think they lead
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

func TestLeaseElectsOneNode(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		a := setup(t, st, "a")
		b := setupWithClock(t, st, "b", a.clock)
		start := a.clock.Now()
		s := a.schedule(t, models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("*/10 * * * * *")}, start)
		a.at(t, start.Add(time.Second))
		b.at(t, start.Add(time.Second))
		require.True(t, a.e.IsLeader())
		require.False(t, b.e.IsLeader())

		// a renews at +10s (lease until +25s) and dies; b, retrying every
		// TTL/3, takes over at +30s and catches up the +20s fire nobody wrote.
		a.at(t, start.Add(10*time.Second))
		for d := 12 * time.Second; d <= 30*time.Second; d += 2 * time.Second {
			b.at(t, start.Add(d))
			require.Equal(t, d >= 30*time.Second, b.e.IsLeader(), "at +%s", d)
		}
		jobs := jobsOf(t, st, s.ID)
		require.Len(t, jobs, 4) // +0s and +10s by a, +20s (catch-up) and +30s by b
		require.True(t, jobs[2].CatchUp)
		require.True(t, start.Add(20*time.Second).Equal(jobs[2].ScheduledAt))
		require.False(t, jobs[3].CatchUp)

		// A clean stop releases the lease at once.
		b.e.resign(t.Context())
		a.at(t, start.Add(31*time.Second))
		require.True(t, a.e.IsLeader())
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
		b := setup(t, st, "n1")
		start := b.clock.Now()
		p := b.schedule(t, models.Schedule{Name: "p", ScheduleType: models.ScheduleCron, CronExpr: ptr("*/10 * * * * *")}, start)
		d := b.schedule(t, models.Schedule{Name: "d", ScheduleType: models.ScheduleCron, CronExpr: ptr("*/10 * * * * *")}, start)
		b.at(t, start.Add(time.Second))
		// Plain SQL, between syncs: the fire transaction still sees it.
		require.NoError(t, st.DB().Exec("UPDATE schedules SET status = 'paused' WHERE id = ?", p.ID).Error)
		require.NoError(t, st.DB().Exec("DELETE FROM schedules WHERE id = ?", d.ID).Error)
		b.e.syncDue = start.Add(time.Hour)
		b.at(t, start.Add(10*time.Second))
		require.Len(t, jobsOf(t, st, p.ID), 1)
		require.Len(t, jobsOf(t, st, d.ID), 1)
		require.Empty(t, b.e.entries)
		require.Zero(t, cronJobs(b.e), "their gocron jobs are removed")
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
		<-b.e.refresh // what run does with the signal
		b.e.syncDue = time.Time{}
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

// With sync out of the way, every fire after the first must come from a
// gocron timer; the jobs still carry the Trigger's intended times.
func TestGocronDrivesFires(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		clock := clockwork.NewFakeClockAt(time.Now().UTC().Truncate(time.Minute).Add(time.Minute))
		b := setupWithClock(t, st, "n1", clock, func(c *Config) { c.SyncInterval, c.FullSyncInterval = time.Hour, time.Hour })
		start := clock.Now()
		s := b.schedule(t, models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("*/10 * * * * *"), Timezone: "Europe/Berlin"}, start)
		once := b.schedule(t, models.Schedule{Name: "once", ScheduleType: models.ScheduleOnce, RunAt: ptr(start.Add(25 * time.Second))}, start)
		b.at(t, start.Add(time.Second)) // lease, the only sync, the fire at created_at
		require.Equal(t, 2, cronJobs(b.e), "one gocron job per active schedule")
		for _, d := range []time.Duration{10, 20, 30} {
			b.at(t, start.Add(d*time.Second+time.Millisecond))
		}
		// Several occurrences at once: gocron re-arms only future times, and
		// the skipped ones still reach the writer, as a catch-up.
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
		require.Equal(t, 1, cronJobs(b.e), "a completed schedule's gocron job is removed")
	})
}

func TestTimerNeverReturnsZero(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tm := &timer{trig: onceTrigger{at: at}, clock: clockwork.NewFakeClockAt(at.Add(-time.Hour))}
	require.True(t, at.Equal(tm.Next(at.Add(-time.Minute))))
	// gocron's catch-up loops call Next until the result is not before
	// now; a zero time would never get there.
	require.Equal(t, farFuture, tm.Next(at))
	require.True(t, tm.Next(farFuture).After(farFuture))
}

// The loop itself, on the real clock: start, fire, stop, restart.
func TestStartStop(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		log := logrus.New()
		log.SetLevel(logrus.WarnLevel)
		e, err := New(NewDBStore(st), &Config{NodeID: "n1", Logger: log, SyncInterval: 200 * time.Millisecond})
		// NewDBStore stays for app's wiring; *store.Store is a Store itself.
		require.NoError(t, err)
		ctx := t.Context()
		require.NoError(t, e.Stop(ctx), "stop before start is harmless")
		def := models.JobDefinition{Name: "d", TaskType: "sleep", NotifyOn: models.NotifyNever}
		require.NoError(t, st.DB().Create(&def).Error)

		require.NoError(t, e.Start(ctx))
		require.NoError(t, e.Start(ctx), "start twice is harmless")
		s := models.Schedule{Name: "s", JobDefinitionID: def.ID, ScheduleType: models.ScheduleCron, CronExpr: ptr("* * * * * *"),
			Timezone: "UTC", MisfirePolicy: models.MisfireFireOnce, Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive}
		require.NoError(t, st.DB().Create(&s).Error)
		e.Refresh()
		require.Eventually(t, func() bool { return len(jobsOf(t, st, s.ID)) >= 2 }, 5*time.Second, 50*time.Millisecond)
		require.NoError(t, e.Stop(ctx))
		require.NoError(t, e.Stop(ctx))
		<-e.Stopped()
		var lease models.Lease
		require.NoError(t, st.DB().First(&lease, "name = ?", "scheduler").Error)
		require.Empty(t, lease.Holder, "stop releases the lease")

		require.NoError(t, e.Start(ctx), "an engine restarts")
		require.Eventually(t, e.IsLeader, 2*time.Second, 20*time.Millisecond)
		require.NoError(t, e.Stop(ctx))
	})
}
