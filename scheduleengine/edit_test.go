package scheduleengine

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

func catchUpsOf(t *testing.T, st *store.Store, scheduleID int64) []models.Job {
	t.Helper()
	var out []models.Job
	for _, j := range jobsOf(t, st, scheduleID) {
		if j.CatchUp {
			out = append(out, j)
		}
	}
	return out
}

// Editing a running schedule's timing by plain SQL starts it afresh from
// when the engine sees the edit, as Quartz's reschedule does: no catch-up
// job counts the occurrences the new rule would have had since the last
// fire.
func TestTimingEditStartsAfresh(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		sched models.Schedule
		edit  string // SET clause
	}{
		{"cron_expr", models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("*/30 * * * * *")}, "cron_expr = '* * * * * *'"},
		{"interval_seconds", models.Schedule{ScheduleType: models.ScheduleInterval, IntervalSeconds: ptr(30)}, "interval_seconds = 1"},
		{"schedule_type", models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("*/30 * * * * *"), IntervalSeconds: ptr(1)}, "schedule_type = 'interval'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testdb.ForEach(t, func(t *testing.T, st *store.Store) {
				b := setup(t, st, "n1")
				start := b.clock.Now()
				s := b.schedule(t, tc.sched, start)
				b.at(t, start)
				b.at(t, start.Add(20*time.Second))
				before := len(jobsOf(t, st, s.ID))
				require.Equal(t, 1, before, "+0 only")

				// The edit, seen by the sync at +27 s: under the new rule
				// +1 … +26 s would be missed since the last fire.
				require.NoError(t, st.DB().Exec("UPDATE schedules SET "+tc.edit+" WHERE id = ?", s.ID).Error)
				b.at(t, start.Add(27*time.Second))
				b.at(t, start.Add(29*time.Second))

				require.Empty(t, catchUpsOf(t, st, s.ID), "no catch-up job for the edit")
				tr := triggerOf(t, st, s.ID)
				require.Zero(t, tr.MisfiredCount)
				require.Equal(t, specHash(ptr(reload(t, st, s)), nil), tr.SpecHash, "the trigger records the timing it now follows")
				require.NotNil(t, tr.SpecChangedAt)
				require.True(t, start.Add(27*time.Second).Equal(*tr.SpecChangedAt), "and when the engine saw it change")
				// Afresh from +27 s: +27, +28, +29 on time.
				jobs := jobsOf(t, st, s.ID)[before:]
				require.Len(t, jobs, 3)
				require.True(t, start.Add(27*time.Second).Equal(jobs[0].ScheduledAt), "first fire after the edit at %v", jobs[0].ScheduledAt)
			})
		})
	}
}

// A time zone change is a timing edit too: a schedule at the top of the
// hour in UTC, moved to Asia/Kolkata (+05:30) 45 minutes after it fired,
// does not catch up the Kolkata top of the hour 15 minutes before the edit.
func TestTimeZoneEditStartsAfresh(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		clock := clockwork.NewFakeClockAt(time.Now().UTC().Truncate(time.Hour).Add(time.Hour))
		b := setupWithClock(t, st, "n1", clock)
		start := clock.Now()
		s := b.schedule(t, models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("0 0 * * * *")}, start)
		b.at(t, start)
		require.Len(t, jobsOf(t, st, s.ID), 1)
		require.NoError(t, st.DB().Exec("UPDATE schedules SET timezone = 'Asia/Kolkata' WHERE id = ?", s.ID).Error)
		b.at(t, start.Add(45*time.Minute+2*time.Second)) // the sync at +45m2s sees the edit
		require.Len(t, jobsOf(t, st, s.ID), 1)
		b.at(t, start.Add(90*time.Minute))
		jobs := jobsOf(t, st, s.ID)
		require.Len(t, jobs, 2)
		require.False(t, jobs[1].CatchUp)
		require.True(t, start.Add(90*time.Minute).Equal(jobs[1].ScheduledAt), "the next Kolkata top of the hour")
	})
}

// The timing fields, and only they, make an edit that starts afresh.
func TestSpecHash(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	base := models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("* * * * *"), IntervalSeconds: ptr(5), RunAt: &at, Timezone: "UTC", StartAt: &at,
		EndAt: &at, MaxRuns: ptr(3), MisfirePolicy: models.MisfireFireOnce, Params: models.JSON(`{}`), Status: models.ScheduleActive, CreatedAt: at, UpdatedAt: at}
	h := specHash(&base, nil)
	later := at.Add(time.Microsecond)
	for name, edit := range map[string]func(*models.Schedule){
		"schedule_type":    func(s *models.Schedule) { s.ScheduleType = models.ScheduleInterval },
		"cron_expr":        func(s *models.Schedule) { s.CronExpr = ptr("*/2 * * * *") },
		"cron_expr nil":    func(s *models.Schedule) { s.CronExpr = nil },
		"interval_seconds": func(s *models.Schedule) { s.IntervalSeconds = ptr(6) },
		"run_at":           func(s *models.Schedule) { s.RunAt = &later },
		"timezone":         func(s *models.Schedule) { s.Timezone = "Europe/Berlin" },
		"start_at":         func(s *models.Schedule) { s.StartAt = &later },
		"start_at nil":     func(s *models.Schedule) { s.StartAt = nil },
		"cron_syntax":      func(s *models.Schedule) { s.CronSyntax = models.SyntaxQuartz },
		"dst_policy":       func(s *models.Schedule) { s.DSTPolicy = models.DSTSkip },
		"calendar_id":      func(s *models.Schedule) { s.CalendarID = ptr(int64(1)) },
	} {
		s := base
		edit(&s)
		require.NotEqual(t, h, specHash(&s, nil), name)
	}
	for name, edit := range map[string]func(*models.Schedule){
		"end_at":         func(s *models.Schedule) { s.EndAt = &later },
		"max_runs":       func(s *models.Schedule) { s.MaxRuns = nil },
		"misfire_policy": func(s *models.Schedule) { s.MisfirePolicy = models.MisfireSkip },
		"params":         func(s *models.Schedule) { s.Params = models.JSON(`{"a":1}`) },
		"status":         func(s *models.Schedule) { s.Status = models.SchedulePaused },
		"updated_at":     func(s *models.Schedule) { s.UpdatedAt = later },
		// The defaults keep the fingerprint of rows from before those
		// columns, so an upgrade is no timing edit.
		"cron_syntax standard": func(s *models.Schedule) { s.CronSyntax = models.SyntaxStandard },
		"dst_policy once":      func(s *models.Schedule) { s.DSTPolicy = models.DSTOnce },
		"same run_at in another zone": func(s *models.Schedule) {
			v := at.In(time.FixedZone("x", 3600))
			s.RunAt = &v
		},
	} {
		s := base
		edit(&s)
		require.Equal(t, h, specHash(&s, nil), name)
	}
	// What a calendar excludes is timing too.
	withCal := base
	withCal.CalendarID = ptr(int64(1))
	c := &models.Calendar{ID: 1, Name: "a", Kind: models.CalendarWeekly, Definition: models.JSON(`{"days":["sun"]}`), Timezone: "UTC", UpdatedAt: at}
	hc := specHash(&withCal, c)
	c2 := *c
	c2.Definition = models.JSON(`{"days":["sat"]}`)
	require.NotEqual(t, hc, specHash(&withCal, &c2), "calendar definition")
	c2 = *c
	c2.Timezone = "Asia/Tokyo"
	require.NotEqual(t, hc, specHash(&withCal, &c2), "calendar timezone")
	c2 = *c
	c2.Name, c2.Description, c2.UpdatedAt = "b", "x", later
	require.Equal(t, hc, specHash(&withCal, &c2), "calendar name, description, updated_at")
}

// The afresh point survives a restart, and does not swallow a real outage
// after it: an engine that was down after the edit was applied still
// collapses what it missed into one catch-up job.
func TestTimingEditThenRestart(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st, "n1")
		start := b.clock.Now()
		s := b.schedule(t, models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("*/30 * * * * *")}, start)
		b.at(t, start)
		require.NoError(t, st.DB().Exec("UPDATE schedules SET cron_expr = '* * * * * *' WHERE id = ?", s.ID).Error)
		b.at(t, start.Add(10*time.Second)) // the sync at +10 s sees the edit
		require.Len(t, jobsOf(t, st, s.ID), 2, "+0, then +10 on time")
		b.stop(t)

		// Down from +10 s to +20 s; a new engine restores +11 … +19 as one
		// catch-up, as for any schedule.
		r := setupWithClock(t, st, "n1", b.clock)
		r.at(t, start.Add(20*time.Second))
		ups := catchUpsOf(t, st, s.ID)
		require.Len(t, ups, 1)
		require.Equal(t, 9, ups[0].MissedFires)
	})
}

// An edit made while no engine ran starts afresh from when an engine sees
// it: the restart writes no catch-up for that schedule.
func TestTimingEditWhileDown(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st, "n1")
		start := b.clock.Now()
		s := b.schedule(t, models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("*/30 * * * * *")}, start)
		b.at(t, start)
		b.stop(t)
		b.clock.Advance(5 * time.Second)
		require.NoError(t, st.DB().Exec("UPDATE schedules SET cron_expr = '* * * * * *' WHERE id = ?", s.ID).Error)

		r := setupWithClock(t, st, "n1", b.clock)
		r.at(t, start.Add(20*time.Second))
		r.at(t, start.Add(21*time.Second))
		require.Empty(t, catchUpsOf(t, st, s.ID))
		jobs := jobsOf(t, st, s.ID)
		require.Len(t, jobs, 3, "+0, then +20 and +21")
		require.True(t, start.Add(20*time.Second).Equal(jobs[1].ScheduledAt))
	})
}

// Pausing and resuming without a timing change keeps the misfire policy:
// what passed while paused is one catch-up job under fire_once. With a
// timing change while paused, the resume starts afresh.
func TestPauseResumeKeepsCatchUp(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st, "n1")
		start := b.clock.Now()
		plain := b.schedule(t, models.Schedule{Name: "plain", ScheduleType: models.ScheduleCron, CronExpr: ptr("* * * * * *")}, start)
		edited := b.schedule(t, models.Schedule{Name: "edited", ScheduleType: models.ScheduleCron, CronExpr: ptr("* * * * * *")}, start)
		b.at(t, start)
		b.at(t, start.Add(2*time.Second))
		require.NoError(t, st.DB().Exec("UPDATE schedules SET status = 'paused'").Error)
		b.e.Refresh()
		b.at(t, start.Add(3*time.Second))
		require.NoError(t, st.DB().Exec("UPDATE schedules SET cron_expr = '*/2 * * * * *' WHERE id = ?", edited.ID).Error)
		require.NoError(t, st.DB().Exec("UPDATE schedules SET status = 'active'").Error)
		b.at(t, start.Add(14*time.Second)) // the sync at +14 s sees the resume

		ups := catchUpsOf(t, st, plain.ID)
		require.Len(t, ups, 1, "the paused time is caught up")
		require.True(t, start.Add(13*time.Second).Equal(ups[0].ScheduledAt))
		require.Equal(t, 11, ups[0].MissedFires, "+3 … +13")
		require.Empty(t, catchUpsOf(t, st, edited.ID), "edited while paused: afresh at resume")
	})
}

// spec_changed_at is the engine's; a hand-written one in the future does
// not hold the schedule back.
func TestFutureSpecChangedAtIsClamped(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st, "n1")
		start := b.clock.Now()
		s := b.schedule(t, models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("* * * * * *")}, start)
		b.at(t, start)
		b.stop(t)
		require.NoError(t, st.DB().Exec("UPDATE time_triggers SET spec_changed_at = ? WHERE schedule_id = ?", store.DBTime(start.Add(24*time.Hour)), s.ID).Error)
		r := setupWithClock(t, st, "n1", b.clock)
		r.at(t, start.Add(2*time.Second))
		r.at(t, start.Add(3*time.Second))
		jobs := jobsOf(t, st, s.ID)
		require.True(t, start.Add(3*time.Second).Equal(jobs[len(jobs)-1].ScheduledAt), "fires go on, got %v", scheduledAts(jobs))
	})
}

// PreviewResume, asked while the schedules are paused, says what the
// resume then writes: one catch-up under fire_once, one per missed fire
// under fire_all, none under skip, none after a timing edit made while
// paused, and only the window's fires with catchup_window_seconds.
func TestPreviewResumeIsWhatResumeWrites(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st, "n1")
		start := b.clock.Now()
		every := func(name string, policy models.MisfirePolicy, window *int) models.Schedule {
			return b.schedule(t, models.Schedule{Name: name, ScheduleType: models.ScheduleCron, CronExpr: ptr("* * * * * *"),
				MisfirePolicy: policy, CatchupWindowSeconds: window}, start)
		}
		scheds := []models.Schedule{
			every("once", models.MisfireFireOnce, nil), every("all", models.MisfireFireAll, nil),
			every("skip", models.MisfireSkip, nil), every("edited", models.MisfireFireOnce, nil),
			every("window", models.MisfireFireOnce, ptr(5)),
		}
		b.at(t, start)
		b.at(t, start.Add(2*time.Second))
		require.NoError(t, st.DB().Exec("UPDATE schedules SET status = 'paused'").Error)
		b.e.Refresh()
		b.at(t, start.Add(3*time.Second))
		require.NoError(t, st.DB().Exec("UPDATE schedules SET cron_expr = '*/2 * * * * *' WHERE name = 'edited'").Error)

		resumeAt := start.Add(14 * time.Second) // the sync at +14 s sees the resume
		previews := map[string]ResumeCatchUp{}
		for _, s := range scheds {
			s = reload(t, st, s)
			tt := triggerOf(t, st, s.ID)
			if p, ok := PreviewResume(chimedb.ScheduleRow{Schedule: s, Definition: &b.def, Trigger: &tt}, ResumeOptions{}, resumeAt); ok {
				previews[s.Name] = p
			}
		}
		require.NoError(t, st.DB().Exec("UPDATE schedules SET status = 'active'").Error)
		b.at(t, resumeAt)

		for _, s := range scheds {
			ups := catchUpsOf(t, st, s.ID)
			p, ok := previews[s.Name]
			require.Equal(t, len(ups) > 0, ok, s.Name)
			if !ok {
				continue
			}
			missed := 0
			for _, j := range ups {
				missed += j.MissedFires
			}
			require.Equal(t, len(ups), p.Jobs, s.Name)
			require.Equal(t, missed, p.MissedFires, s.Name)
			require.True(t, ups[len(ups)-1].ScheduledAt.Equal(p.ScheduledAt), "%s: %v, previewed %v", s.Name, ups[len(ups)-1].ScheduledAt, p.ScheduledAt)
		}
		require.Equal(t, ResumeCatchUp{ScheduledAt: start.Add(13 * time.Second), MissedFires: 11, Jobs: 1}, previews["once"], "+3 … +13")
		require.Equal(t, 11, previews["all"].Jobs)
		require.Equal(t, 5, previews["window"].MissedFires, "+9 … +13: the window's")
		require.NotContains(t, previews, "skip")
		require.NotContains(t, previews, "edited")

		// A forbid schedule with a job still unfinished writes none. (Between
		// two ticks: a fire due at the very instant would be written on time
		// instead of the catch-up, the latest fire being the one wanted.)
		later := resumeAt.Add(time.Hour + time.Second/2)
		s := reload(t, st, scheds[0])
		s.Status, s.Concurrency = models.SchedulePaused, models.ConcurrencyForbid
		tt := triggerOf(t, st, s.ID)
		_, ok := PreviewResume(chimedb.ScheduleRow{Schedule: s, Definition: &b.def, Trigger: &tt}, ResumeOptions{Busy: true}, later)
		require.False(t, ok)
		_, ok = PreviewResume(chimedb.ScheduleRow{Schedule: s, Definition: &b.def, Trigger: &tt}, ResumeOptions{}, later)
		require.True(t, ok)
		// No definition: the engine would mark it invalid.
		_, ok = PreviewResume(chimedb.ScheduleRow{Schedule: s, Trigger: &tt}, ResumeOptions{}, later)
		require.False(t, ok)
	})
}
