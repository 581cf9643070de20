package chimedbtest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

func scheduleMethods() []method {
	return []method{
		{"ScheduleStore.LoadSchedules", loadSchedulesCases},
		{"ScheduleStore.EnsureTriggers", ensureTriggersCases},
		{"ScheduleStore.UnfinishedSchedules", unfinishedSchedulesCases},
		{"ScheduleStore.WriteFires", writeFiresCases},
		{"ScheduleStore.WriteFires (workflow runs)", workflowFireCases},
		{"ScheduleStore.UnfinishedSchedules (workflow runs)", unfinishedRunCases},
		{"ScheduleStore.SetTriggerSpecs", setTriggerSpecsCases},
		{"ScheduleStore.MarkInvalid", markInvalidCases},
	}
}

// scheduleJobs lists the jobs of schedule id, newest first.
func (e *env) scheduleJobs(id int64) []models.Job {
	e.t.Helper()
	out, err := e.admin.ListJobs(e.ctx, &chimedb.AdminListParams{ScheduleID: id, Limit: 1000})
	require.NoError(e.t, err)
	return out
}

func (e *env) getSchedule(id int64) *models.Schedule {
	e.t.Helper()
	s, err := e.admin.GetSchedule(e.ctx, id)
	require.NoError(e.t, err)
	return s
}

func loadedIDs(res *chimedb.LoadSchedulesResult) []int64 {
	ids, _ := idsOf(res.Rows, nil, func(r *chimedb.ScheduleRow) int64 { return r.Schedule.ID })
	return ids
}

var loadSchedulesCases = []tcase{
	{"without ChangedSince it reads the active schedules in id order, with their rows beside them", func(e *env) {
		d := e.definition()
		cal := &models.Calendar{Name: "holidays", Kind: models.CalendarHoliday, Definition: models.JSON(`{"dates":[]}`), Timezone: "UTC"}
		require.NoError(e.t, e.admin.CreateCalendar(e.ctx, cal))
		a := e.schedule(d.ID, func(s *models.Schedule) { s.CalendarID = &cal.ID })
		paused := e.schedule(d.ID, func(s *models.Schedule) { s.Status = models.SchedulePaused })
		b := e.schedule(d.ID)
		next := e.now().Add(time.Minute)
		require.NoError(e.t, e.Schedule.EnsureTriggers(e.ctx, &chimedb.EnsureTriggersParams{Now: e.now(),
			Triggers: []chimedb.TriggerRow{{ScheduleID: b.ID, NextFireAt: &next, FiredCount: 2, SpecHash: "h"}}}))

		res, err := e.Schedule.LoadSchedules(e.ctx, &chimedb.LoadSchedulesParams{})
		require.NoError(e.t, err)
		require.Equal(e.t, []int64{a.ID, b.ID}, loadedIDs(res), "not paused %d", paused.ID)
		ra, rb := res.Rows[0], res.Rows[1]
		require.Equal(e.t, a.Name, ra.Schedule.Name)
		require.NotNil(e.t, ra.Definition)
		require.Equal(e.t, d.ID, ra.Definition.ID)
		require.NotNil(e.t, ra.Calendar)
		require.Equal(e.t, cal.ID, ra.Calendar.ID)
		require.Nil(e.t, ra.Trigger, "no trigger row before the engine first saw it")
		require.Nil(e.t, rb.Calendar)
		require.NotNil(e.t, rb.Trigger)
		require.EqualValues(e.t, 2, rb.Trigger.FiredCount)
		sameInstant(e.t, next, *rb.Trigger.NextFireAt)
		require.Equal(e.t, "h", rb.Trigger.SpecHash)
		maxUpdated := ra.Schedule.UpdatedAt
		for _, t := range []time.Time{rb.Schedule.UpdatedAt, ra.Definition.UpdatedAt, ra.Calendar.UpdatedAt} {
			if t.After(maxUpdated) {
				maxUpdated = t
			}
		}
		require.True(e.t, res.MaxUpdatedAt.Equal(maxUpdated), "MaxUpdatedAt %s, latest updated_at %s", res.MaxUpdatedAt, maxUpdated)
	}},
	{"a definition or calendar that is gone reads as nil", func(e *env) {
		d := e.definition()
		cal := &models.Calendar{Name: "c", Kind: models.CalendarHoliday, Definition: models.JSON(`{"dates":[]}`), Timezone: "UTC"}
		require.NoError(e.t, e.admin.CreateCalendar(e.ctx, cal))
		s := e.schedule(d.ID, func(s *models.Schedule) { s.CalendarID = &cal.ID })
		e.exec("DELETE FROM job_definitions WHERE id = ?", d.ID)
		e.exec("DELETE FROM calendars WHERE id = ?", cal.ID)
		res, err := e.Schedule.LoadSchedules(e.ctx, &chimedb.LoadSchedulesParams{})
		require.NoError(e.t, err)
		require.Equal(e.t, []int64{s.ID}, loadedIDs(res))
		require.Nil(e.t, res.Rows[0].Definition)
		require.Nil(e.t, res.Rows[0].Calendar)
	}},
	{"AfterID and Limit read pages in id order", func(e *env) {
		d := e.definition()
		var ids []int64
		for range 5 {
			ids = append(ids, e.schedule(d.ID).ID)
		}
		var got []int64
		after := int64(0)
		for page := 0; ; page++ {
			res, err := e.Schedule.LoadSchedules(e.ctx, &chimedb.LoadSchedulesParams{AfterID: after, Limit: 2})
			require.NoError(e.t, err)
			require.LessOrEqual(e.t, len(res.Rows), 2)
			got = append(got, loadedIDs(res)...)
			if len(res.Rows) < 2 {
				break
			}
			after = res.Rows[len(res.Rows)-1].Schedule.ID
			require.Less(e.t, page, 5, "paging does not end")
		}
		require.Equal(e.t, ids, got)
		res, err := e.Schedule.LoadSchedules(e.ctx, &chimedb.LoadSchedulesParams{AfterID: ids[2]})
		require.NoError(e.t, err)
		require.Equal(e.t, ids[3:], loadedIDs(res), "Limit 0 reads the rest")
	}},
	{"ChangedSince reads schedules of any status changed through their row, definition or calendar", func(e *env) {
		dOld, dNew := e.definition(), e.definition()
		cal := &models.Calendar{Name: "c", Kind: models.CalendarHoliday, Definition: models.JSON(`{"dates":[]}`), Timezone: "UTC"}
		require.NoError(e.t, e.admin.CreateCalendar(e.ctx, cal))
		untouched := e.schedule(dOld.ID)
		paused := e.schedule(dOld.ID, func(s *models.Schedule) { s.Status = models.SchedulePaused })
		byDef := e.schedule(dNew.ID)
		byCal := e.schedule(dOld.ID, func(s *models.Schedule) { s.CalendarID = &cal.ID })
		old := e.now().Add(-time.Hour)
		for _, tbl := range []string{"schedules", "job_definitions", "calendars"} {
			e.exec("UPDATE "+tbl+" SET updated_at = ?", old)
		}
		// Well after old and before any change below, whatever the
		// clock that writes updated_at on these paths.
		since := old.Add(time.Minute)
		paused.Status = models.SchedulePaused
		paused.StatusReason = "edited"
		require.NoError(e.t, e.admin.UpdateSchedule(e.ctx, paused))
		require.NoError(e.t, e.admin.UpdateDefinition(e.ctx, dNew))
		require.NoError(e.t, e.admin.UpdateCalendar(e.ctx, cal))

		res, err := e.Schedule.LoadSchedules(e.ctx, &chimedb.LoadSchedulesParams{ChangedSince: &since})
		require.NoError(e.t, err)
		require.Equal(e.t, []int64{paused.ID, byDef.ID, byCal.ID}, loadedIDs(res))
		require.NotContains(e.t, loadedIDs(res), untouched.ID)
		require.False(e.t, res.MaxUpdatedAt.Before(since), "MaxUpdatedAt %s is the latest change, after %s", res.MaxUpdatedAt, since)

		later := res.MaxUpdatedAt.Add(time.Second)
		res, err = e.Schedule.LoadSchedules(e.ctx, &chimedb.LoadSchedulesParams{ChangedSince: &later})
		require.NoError(e.t, err)
		require.Empty(e.t, res.Rows)
	}},
}

var ensureTriggersCases = []tcase{
	{"creates missing rows and leaves existing ones as they are", func(e *env) {
		d := e.definition()
		a, b := e.schedule(d.ID), e.schedule(d.ID)
		now := e.now()
		next, last, changed := now.Add(time.Minute), now.Add(-time.Minute), now.Add(-time.Hour)
		rem := int64(7)
		require.NoError(e.t, e.Schedule.EnsureTriggers(e.ctx, &chimedb.EnsureTriggersParams{Now: now, Triggers: []chimedb.TriggerRow{
			{ScheduleID: a.ID, NextFireAt: &next, LastFireAt: &last, FiredCount: 3, RemainingCount: &rem, MisfiredCount: 1,
				SpecHash: "ha", SpecChangedAt: &changed},
		}}))
		ta := e.trigger(a.ID)
		require.NotNil(e.t, ta)
		sameInstant(e.t, next, *ta.NextFireAt)
		sameInstant(e.t, last, *ta.LastFireAt)
		require.EqualValues(e.t, 3, ta.FiredCount)
		require.Equal(e.t, &rem, ta.RemainingCount)
		require.EqualValues(e.t, 1, ta.MisfiredCount)
		require.Equal(e.t, "ha", ta.SpecHash)
		sameInstant(e.t, changed, *ta.SpecChangedAt)

		// A second sync sends other values for a and a row for b: only b is created.
		require.NoError(e.t, e.Schedule.EnsureTriggers(e.ctx, &chimedb.EnsureTriggersParams{Now: now, Triggers: []chimedb.TriggerRow{
			{ScheduleID: a.ID, FiredCount: 99, SpecHash: "other"},
			{ScheduleID: b.ID, NextFireAt: &next},
		}}))
		ta2 := e.trigger(a.ID)
		require.EqualValues(e.t, 3, ta2.FiredCount)
		require.Equal(e.t, "ha", ta2.SpecHash)
		tb := e.trigger(b.ID)
		require.NotNil(e.t, tb)
		require.Nil(e.t, tb.LastFireAt)
		require.Nil(e.t, tb.RemainingCount)
		require.Empty(e.t, tb.SpecHash)
	}},
	{"no triggers is a no-op", func(e *env) {
		require.NoError(e.t, e.Schedule.EnsureTriggers(e.ctx, &chimedb.EnsureTriggersParams{Now: e.now()}))
	}},
}

// unfinishedSchedulesCases run on ScheduleStore's UnfinishedSchedules and
// AdminStore's, which a store may implement apart.
var unfinishedSchedulesCases = []tcase{
	{"a schedule is unfinished while one of its jobs is pending, queued, running or paused", func(e *env) {
		d := e.definition()
		want := map[int64]bool{}
		var all []int64
		for _, st := range []models.JobStatus{models.JobPending, models.JobQueued, models.JobRunning, models.JobPaused,
			models.JobSucceeded, models.JobFailed, models.JobStopped, models.JobCanceled} {
			s := e.schedule(d.ID)
			all = append(all, s.ID)
			j := e.job(d.ID, func(j *models.Job) { j.ScheduleID = &s.ID })
			if st != models.JobPending {
				e.setJob(j.ID, jobState{status: st, node: "n"})
			}
			if !st.Finished() {
				want[s.ID] = true
			}
		}
		idle := e.schedule(d.ID)
		all = append(all, idle.ID, missingID)
		for _, unfinished := range []func(context.Context, []int64) (map[int64]bool, error){
			e.Schedule.UnfinishedSchedules, e.Admin.UnfinishedSchedules} {
			got, err := unfinished(e.ctx, all)
			require.NoError(e.t, err)
			require.Equal(e.t, want, got)
		}
	}},
	{"no ids is an empty answer", func(e *env) {
		for _, unfinished := range []func(context.Context, []int64) (map[int64]bool, error){
			e.Schedule.UnfinishedSchedules, e.Admin.UnfinishedSchedules} {
			got, err := unfinished(e.ctx, nil)
			require.NoError(e.t, err)
			require.Empty(e.t, got)
		}
	}},
}

// fire is one schedule's part of a WriteFires batch: its job at at and its
// trigger moved from from to at.
func fire(s *models.Schedule, at time.Time, from *time.Time) (chimedb.FireJob, chimedb.TriggerRow) {
	next := at.Add(time.Minute)
	return chimedb.FireJob{ScheduleID: s.ID, JobDefinitionID: s.JobDefinitionID, ScheduledAt: at, MaxAttempts: 1},
		chimedb.TriggerRow{ScheduleID: s.ID, NextFireAt: &next, LastFireAt: &at, FiredCount: 1, FromLastFireAt: from}
}

func (e *env) writeFires(p *chimedb.WriteFiresParams) *chimedb.WriteFiresResult {
	e.t.Helper()
	if p.Now.IsZero() {
		p.Now = e.now()
	}
	res, err := e.Schedule.WriteFires(e.ctx, p)
	require.NoError(e.t, err)
	return res
}

var writeFiresCases = []tcase{
	{"a first fire writes its job and creates the trigger row", func(e *env) {
		d := e.definition(func(d *models.JobDefinition) { d.Priority = 3 })
		s := e.schedule(d.ID)
		now := e.now()
		at, next, changed := now.Add(-time.Second), now.Add(time.Minute), now.Add(-time.Hour)
		res := e.writeFires(&chimedb.WriteFiresParams{Now: now,
			Jobs: []chimedb.FireJob{{ScheduleID: s.ID, JobDefinitionID: d.ID, ScheduledAt: at, MaxAttempts: 3, Params: models.JSON(`{"a":1}`)}},
			Triggers: []chimedb.TriggerRow{{ScheduleID: s.ID, NextFireAt: &next, LastFireAt: &at, FiredCount: 1,
				SpecHash: "h", SpecChangedAt: &changed}}})
		require.Equal(e.t, 1, res.Inserted)
		require.Zero(e.t, res.InsertedCatchUp)
		require.Zero(e.t, res.Duplicates)
		require.Empty(e.t, res.Inactive)
		require.Empty(e.t, res.Busy)
		require.Empty(e.t, res.Stale)
		require.Empty(e.t, res.HandedOff)

		jobs := e.scheduleJobs(s.ID)
		require.Len(e.t, jobs, 1)
		j := jobs[0]
		require.Equal(e.t, models.JobPending, j.Status)
		sameInstant(e.t, at, j.ScheduledAt)
		sameInstant(e.t, at, j.RunAt)
		require.Equal(e.t, 3, j.MaxAttempts)
		require.Zero(e.t, j.Attempt)
		require.JSONEq(e.t, `{"a":1}`, string(j.Params))
		require.False(e.t, j.CatchUp)
		require.Equal(e.t, 3, j.Priority, "the definition's priority")
		tr := e.trigger(s.ID)
		require.NotNil(e.t, tr)
		sameInstant(e.t, at, *tr.LastFireAt)
		sameInstant(e.t, next, *tr.NextFireAt)
		require.EqualValues(e.t, 1, tr.FiredCount)
		require.Equal(e.t, "h", tr.SpecHash, "a fire that creates the row writes its spec")
		sameInstant(e.t, changed, *tr.SpecChangedAt)
	}},
	{"catch-up jobs are counted apart and keep their missed fires", func(e *env) {
		d := e.definition()
		s := e.schedule(d.ID)
		now := e.now()
		missed, at := now.Add(-time.Hour), now.Add(-time.Second)
		_, tr := fire(s, at, nil)
		res := e.writeFires(&chimedb.WriteFiresParams{Now: now, Triggers: []chimedb.TriggerRow{tr}, Jobs: []chimedb.FireJob{
			{ScheduleID: s.ID, JobDefinitionID: d.ID, ScheduledAt: missed, MaxAttempts: 1, CatchUp: true, MissedFires: 4},
			{ScheduleID: s.ID, JobDefinitionID: d.ID, ScheduledAt: at, MaxAttempts: 1},
		}})
		require.Equal(e.t, 1, res.Inserted)
		require.Equal(e.t, 1, res.InsertedCatchUp)
		jobs := e.scheduleJobs(s.ID)
		require.Len(e.t, jobs, 2)
		var catchUp *models.Job
		for i := range jobs {
			if jobs[i].CatchUp {
				catchUp = &jobs[i]
			}
		}
		require.NotNil(e.t, catchUp)
		require.Equal(e.t, 4, catchUp.MissedFires)
		sameInstant(e.t, missed, catchUp.ScheduledAt)
	}},
	{"a fire already written is a duplicate, not a second job", func(e *env) {
		d := e.definition()
		s := e.schedule(d.ID)
		at := e.now().Add(-time.Second)
		j, tr := fire(s, at, nil)
		require.Equal(e.t, 1, e.writeFires(&chimedb.WriteFiresParams{Jobs: []chimedb.FireJob{j}, Triggers: []chimedb.TriggerRow{tr}}).Inserted)
		// The same fire again, planned from the row as it now is.
		tr.FromLastFireAt = &at
		res := e.writeFires(&chimedb.WriteFiresParams{Jobs: []chimedb.FireJob{j}, Triggers: []chimedb.TriggerRow{tr}})
		require.Zero(e.t, res.Inserted)
		require.Equal(e.t, 1, res.Duplicates)
		require.Len(e.t, e.scheduleJobs(s.ID), 1)
	}},
	{"a batch planned from a trigger row another writer moved on writes nothing for it", func(e *env) {
		d := e.definition()
		s := e.schedule(d.ID)
		now := e.now()
		first, second := now.Add(-2*time.Second), now.Add(-time.Second)
		j, tr := fire(s, first, nil)
		e.writeFires(&chimedb.WriteFiresParams{Jobs: []chimedb.FireJob{j}, Triggers: []chimedb.TriggerRow{tr}})
		j2, tr2 := fire(s, second, nil) // planned from no row: stale
		res := e.writeFires(&chimedb.WriteFiresParams{Jobs: []chimedb.FireJob{j2}, Triggers: []chimedb.TriggerRow{tr2},
			Complete: []int64{s.ID}})
		require.Zero(e.t, res.Inserted)
		require.Len(e.t, res.Stale, 1)
		require.Equal(e.t, s.ID, res.Stale[0].ScheduleID)
		sameInstant(e.t, first, *res.Stale[0].LastFireAt)
		require.EqualValues(e.t, 1, res.Stale[0].FiredCount)
		require.Len(e.t, e.scheduleJobs(s.ID), 1)
		sameInstant(e.t, first, *e.trigger(s.ID).LastFireAt)
		require.Equal(e.t, models.ScheduleActive, e.getSchedule(s.ID).Status, "a stale part completes nothing")
	}},
	{"paused and deleted schedules are inactive: nothing is written for them", func(e *env) {
		d := e.definition()
		paused, gone, live := e.schedule(d.ID), e.schedule(d.ID), e.schedule(d.ID)
		_, changed, err := e.admin.SetScheduleStatus(e.ctx, paused.ID, models.SchedulePaused, models.ScheduleActive)
		require.NoError(e.t, err)
		require.True(e.t, changed)
		require.NoError(e.t, e.admin.DeleteSchedule(e.ctx, gone.ID))
		at := e.now().Add(-time.Second)
		p := &chimedb.WriteFiresParams{}
		for _, s := range []*models.Schedule{paused, gone, live} {
			j, tr := fire(s, at, nil)
			p.Jobs, p.Triggers = append(p.Jobs, j), append(p.Triggers, tr)
		}
		res := e.writeFires(p)
		require.ElementsMatch(e.t, []int64{paused.ID, gone.ID}, res.Inactive)
		require.Equal(e.t, 1, res.Inserted)
		require.Empty(e.t, e.scheduleJobs(paused.ID))
		require.Empty(e.t, e.scheduleJobs(gone.ID))
		require.Nil(e.t, e.trigger(paused.ID))
		require.Len(e.t, e.scheduleJobs(live.ID), 1)
	}},
	{"jobs and completions are written only for schedules with a trigger row in the batch", func(e *env) {
		d := e.definition()
		with, without := e.schedule(d.ID), e.schedule(d.ID)
		at := e.now().Add(-time.Second)
		j1, tr := fire(with, at, nil)
		j2, _ := fire(without, at, nil)
		res := e.writeFires(&chimedb.WriteFiresParams{Jobs: []chimedb.FireJob{j1, j2}, Triggers: []chimedb.TriggerRow{tr},
			Complete: []int64{with.ID, without.ID}})
		require.Equal(e.t, 1, res.Inserted)
		require.Empty(e.t, e.scheduleJobs(without.ID))
		require.Equal(e.t, models.ScheduleCompleted, e.getSchedule(with.ID).Status)
		require.Equal(e.t, models.ScheduleActive, e.getSchedule(without.ID).Status)
	}},
	{"BeforeCommit runs inside the batch, and its error rolls the batch back", func(e *env) {
		d := e.definition()
		s := e.schedule(d.ID)
		at := e.now().Add(-time.Second)
		j, tr := fire(s, at, nil)
		boom := errors.New("boom")
		calls := 0
		_, err := e.Schedule.WriteFires(e.ctx, &chimedb.WriteFiresParams{Now: e.now(), Jobs: []chimedb.FireJob{j},
			Triggers: []chimedb.TriggerRow{tr}, Complete: []int64{s.ID},
			BeforeCommit: func(context.Context) error { calls++; return boom }})
		require.ErrorIs(e.t, err, boom)
		require.Equal(e.t, 1, calls)
		require.Empty(e.t, e.scheduleJobs(s.ID))
		require.Nil(e.t, e.trigger(s.ID))
		require.Equal(e.t, models.ScheduleActive, e.getSchedule(s.ID).Status)

		res := e.writeFires(&chimedb.WriteFiresParams{Jobs: []chimedb.FireJob{j}, Triggers: []chimedb.TriggerRow{tr},
			BeforeCommit: func(context.Context) error { calls++; return nil }})
		require.Equal(e.t, 1, res.Inserted)
		require.Equal(e.t, 2, calls)
	}},
	{"jobs carry their schedule's priority, else their definition's", func(e *env) {
		d := e.definition(func(d *models.JobDefinition) { d.Priority = 3 })
		own, inherits := e.schedule(d.ID, func(s *models.Schedule) { s.Priority = ptr(8) }), e.schedule(d.ID)
		at := e.now().Add(-time.Second)
		j1, t1 := fire(own, at, nil)
		j2, t2 := fire(inherits, at, nil)
		e.writeFires(&chimedb.WriteFiresParams{Jobs: []chimedb.FireJob{j1, j2}, Triggers: []chimedb.TriggerRow{t1, t2}})
		require.Equal(e.t, 8, e.scheduleJobs(own.ID)[0].Priority)
		require.Equal(e.t, 3, e.scheduleJobs(inherits.ID)[0].Priority)
	}},
	{"on-time jobs of hand-off kinds are written running on the node, up to the slots", func(e *env) {
		sleep := e.definition()
		shell := e.definition(func(d *models.JobDefinition) { d.TaskType = "shell" })
		a, b := e.schedule(sleep.ID), e.schedule(sleep.ID)
		forbid := e.schedule(sleep.ID, func(s *models.Schedule) { s.Concurrency = models.ConcurrencyForbid })
		other := e.schedule(shell.ID)
		now := e.now()
		at := now.Add(-time.Second)
		p := &chimedb.WriteFiresParams{Now: now, HandoffNode: "n1", HandoffKinds: []string{"sleep"}, HandoffSlots: 1}
		for _, s := range []*models.Schedule{a, forbid, other, b} {
			j, tr := fire(s, at, nil)
			p.Jobs, p.Triggers = append(p.Jobs, j), append(p.Triggers, tr)
		}
		p.Jobs = append(p.Jobs, chimedb.FireJob{ScheduleID: b.ID, JobDefinitionID: sleep.ID, ScheduledAt: at.Add(-time.Hour),
			MaxAttempts: 1, CatchUp: true, MissedFires: 1})
		res := e.writeFires(p)
		require.Equal(e.t, 4, res.Inserted)
		require.Equal(e.t, 1, res.InsertedCatchUp)
		require.Len(e.t, res.HandedOff, 1, "one slot")
		h := res.HandedOff[0]
		require.Contains(e.t, []int64{a.ID, b.ID}, *h.ScheduleID)
		require.True(e.t, h.Started)
		require.Equal(e.t, models.JobRunning, h.Status)
		require.Equal(e.t, 1, h.Attempt)
		require.Equal(e.t, "n1", h.NodeID)
		require.NotNil(e.t, h.Definition)
		require.Equal(e.t, "sleep", h.Definition.TaskType)
		require.NotEmpty(e.t, h.ScheduleName)
		stored := e.get(h.ID)
		require.Equal(e.t, models.JobRunning, stored.Status)
		require.Equal(e.t, "n1", stored.NodeID)
		require.Equal(e.t, 1, stored.Attempt)
		sameInstant(e.t, now, *stored.StartedAt)
		sameInstant(e.t, now, *stored.HeartbeatAt)
		for _, s := range []*models.Schedule{forbid, other} {
			require.Equal(e.t, models.JobPending, e.scheduleJobs(s.ID)[0].Status, "schedule %s is not handed off", s.Name)
		}
		for _, j := range e.scheduleJobs(b.ID) {
			if j.CatchUp {
				require.Equal(e.t, models.JobPending, j.Status, "catch-up jobs are never handed off")
			}
		}
	}},
	{"two writers of the same batch write it once", func(e *env) {
		d := e.definition()
		var scheds []*models.Schedule
		for range 5 {
			scheds = append(scheds, e.schedule(d.ID))
		}
		at := e.now().Add(-time.Second)
		inserted, errs := make([]int, 2), make([]error, 2)
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Go(func() {
				p := &chimedb.WriteFiresParams{Now: at}
				for _, s := range scheds {
					j, tr := fire(s, at, nil)
					p.Jobs, p.Triggers = append(p.Jobs, j), append(p.Triggers, tr)
				}
				res, err := e.Schedule.WriteFires(e.ctx, p)
				if errs[w] = err; err == nil {
					inserted[w] = res.Inserted
				}
			})
		}
		wg.Wait()
		require.NoError(e.t, errors.Join(errs...))
		require.Equal(e.t, len(scheds), inserted[0]+inserted[1], "every fire once: %v", inserted)
		for _, s := range scheds {
			require.Len(e.t, e.scheduleJobs(s.ID), 1)
		}
	}},
	{"a schedule whose row another transaction holds is busy, and the batch does not wait for it", func(e *env) {
		if e.LockRow == nil {
			e.t.Skip("single writer: no row locks")
		}
		d := e.definition()
		held, free := e.schedule(d.ID), e.schedule(d.ID)
		release := e.LockRow(e.t, "schedules", held.ID)
		defer release()
		at := e.now().Add(-time.Second)
		j1, t1 := fire(held, at, nil)
		j2, t2 := fire(free, at, nil)
		res := e.writeFires(&chimedb.WriteFiresParams{Jobs: []chimedb.FireJob{j1, j2}, Triggers: []chimedb.TriggerRow{t1, t2}})
		require.Equal(e.t, []int64{held.ID}, res.Busy)
		require.Equal(e.t, 1, res.Inserted)
		release()
		require.Empty(e.t, e.scheduleJobs(held.ID))
		require.Len(e.t, e.scheduleJobs(free.ID), 1)
	}},
}

var setTriggerSpecsCases = []tcase{
	{"a spec change is written only over the hash it was planned from", func(e *env) {
		d := e.definition()
		a, b := e.schedule(d.ID), e.schedule(d.ID)
		now := e.now()
		next := now.Add(time.Hour)
		require.NoError(e.t, e.Schedule.EnsureTriggers(e.ctx, &chimedb.EnsureTriggersParams{Now: now, Triggers: []chimedb.TriggerRow{
			{ScheduleID: a.ID, NextFireAt: &next, SpecHash: "old"}, {ScheduleID: b.ID, NextFireAt: &next, SpecHash: "moved-on"}}}))
		changed, newNext := now.Add(-time.Second), now.Add(2*time.Hour)
		require.NoError(e.t, e.Schedule.SetTriggerSpecs(e.ctx, &chimedb.SetTriggerSpecsParams{Now: now, Specs: []chimedb.TriggerSpec{
			{ScheduleID: a.ID, From: "old", Hash: "new", ChangedAt: &changed, NextFireAt: &newNext},
			{ScheduleID: b.ID, From: "old", Hash: "new", ChangedAt: &changed, NextFireAt: &newNext},
		}}))
		ta, tb := e.trigger(a.ID), e.trigger(b.ID)
		require.Equal(e.t, "new", ta.SpecHash)
		sameInstant(e.t, changed, *ta.SpecChangedAt)
		sameInstant(e.t, newNext, *ta.NextFireAt)
		require.Equal(e.t, "moved-on", tb.SpecHash, "another writer's row is left alone")
		sameInstant(e.t, next, *tb.NextFireAt)
	}},
	{"a change with no next fire clears next_fire_at", func(e *env) {
		d := e.definition()
		s := e.schedule(d.ID)
		now := e.now()
		next := now.Add(time.Hour)
		require.NoError(e.t, e.Schedule.EnsureTriggers(e.ctx, &chimedb.EnsureTriggersParams{Now: now,
			Triggers: []chimedb.TriggerRow{{ScheduleID: s.ID, NextFireAt: &next, SpecHash: "old"}}}))
		require.NoError(e.t, e.Schedule.SetTriggerSpecs(e.ctx, &chimedb.SetTriggerSpecsParams{Now: now,
			Specs: []chimedb.TriggerSpec{{ScheduleID: s.ID, From: "old", Hash: "ended", ChangedAt: &now}}}))
		tr := e.trigger(s.ID)
		require.Equal(e.t, "ended", tr.SpecHash)
		require.Nil(e.t, tr.NextFireAt)
	}},
	{"without ChangedAt it adopts rows that have no hash, and only writes the hash", func(e *env) {
		d := e.definition()
		bare, hashed := e.schedule(d.ID), e.schedule(d.ID)
		now := e.now()
		next, last := now.Add(time.Hour), now.Add(-time.Hour)
		require.NoError(e.t, e.Schedule.EnsureTriggers(e.ctx, &chimedb.EnsureTriggersParams{Now: now, Triggers: []chimedb.TriggerRow{
			{ScheduleID: bare.ID, NextFireAt: &next, LastFireAt: &last, FiredCount: 5},
			{ScheduleID: hashed.ID, NextFireAt: &next, SpecHash: "kept"}}}))
		require.NoError(e.t, e.Schedule.SetTriggerSpecs(e.ctx, &chimedb.SetTriggerSpecsParams{Now: now, Specs: []chimedb.TriggerSpec{
			{ScheduleID: bare.ID, Hash: "adopted"}, {ScheduleID: hashed.ID, Hash: "adopted"}}}))
		tb, th := e.trigger(bare.ID), e.trigger(hashed.ID)
		require.Equal(e.t, "adopted", tb.SpecHash)
		require.Nil(e.t, tb.SpecChangedAt)
		sameInstant(e.t, next, *tb.NextFireAt)
		sameInstant(e.t, last, *tb.LastFireAt)
		require.EqualValues(e.t, 5, tb.FiredCount)
		require.Equal(e.t, "kept", th.SpecHash)
	}},
	{"no specs is a no-op", func(e *env) {
		require.NoError(e.t, e.Schedule.SetTriggerSpecs(e.ctx, &chimedb.SetTriggerSpecsParams{Now: e.now()}))
	}},
}

var markInvalidCases = []tcase{
	{"an active schedule becomes invalid with the reason; others are left alone", func(e *env) {
		d := e.definition()
		active, paused := e.schedule(d.ID), e.schedule(d.ID, func(s *models.Schedule) { s.Status = models.SchedulePaused })
		for _, s := range []*models.Schedule{active, paused} {
			require.NoError(e.t, e.Schedule.MarkInvalid(e.ctx, &chimedb.MarkInvalidParams{ScheduleID: s.ID, Reason: "bad cron", Now: e.now()}))
		}
		require.NoError(e.t, e.Schedule.MarkInvalid(e.ctx, &chimedb.MarkInvalidParams{ScheduleID: missingID, Reason: "gone", Now: e.now()}))
		got := e.getSchedule(active.ID)
		require.Equal(e.t, models.ScheduleInvalid, got.Status)
		require.Equal(e.t, "bad cron", got.StatusReason)
		require.Equal(e.t, models.SchedulePaused, e.getSchedule(paused.ID).Status)
	}},
	{"a long reason in any script is stored, cut to valid text", func(e *env) {
		d := e.definition()
		for _, reason := range []string{
			"x" + strings.Repeat("é", 3000),     // two-byte runes, cut off their boundary
			strings.Repeat("日本", 2000),          // three-byte runes
			"bad \xff byte and a NUL \x00 here", // bytes no text column takes everywhere
		} {
			s := e.schedule(d.ID)
			require.NoError(e.t, e.Schedule.MarkInvalid(e.ctx, &chimedb.MarkInvalidParams{ScheduleID: s.ID, Reason: reason, Now: e.now()}))
			got := e.getSchedule(s.ID)
			require.Equal(e.t, models.ScheduleInvalid, got.Status)
			require.True(e.t, utf8.ValidString(got.StatusReason), "stored reason is valid UTF-8")
			require.NotEmpty(e.t, got.StatusReason)
			require.True(e.t, strings.HasPrefix(reason, got.StatusReason[:4]), "the reason's start is kept: %q", got.StatusReason[:8])
		}
	}},
}
