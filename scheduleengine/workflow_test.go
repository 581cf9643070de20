package scheduleengine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// workflowSchedule inserts an active schedule of a one-step workflow (its
// step a job of b's definition), created at created.
func (b *bundle) workflowSchedule(t *testing.T, s models.Schedule, created time.Time) (models.Schedule, models.Workflow) {
	t.Helper()
	db := b.st.DB()
	wf := models.Workflow{Name: "wf-" + s.Name + "-" + t.Name(), FailurePolicy: models.FailStop}
	require.NoError(t, db.Create(&wf).Error)
	require.NoError(t, db.Create(&models.WorkflowStep{WorkflowID: wf.ID, Name: "only", JobDefinitionID: b.def.ID, WaitFor: models.WaitAll}).Error)
	s = b.schedule(t, s, created)
	require.NoError(t, db.Exec("UPDATE schedules SET job_definition_id = NULL, workflow_id = ? WHERE id = ?", wf.ID, s.ID).Error)
	s.JobDefinitionID, s.WorkflowID = 0, &wf.ID
	return s, wf
}

func runsOf(t *testing.T, st *store.Store, scheduleID int64) []models.WorkflowRun {
	t.Helper()
	var runs []models.WorkflowRun
	require.NoError(t, st.DB().Where("schedule_id = ?", scheduleID).Order("scheduled_at").Find(&runs).Error)
	return runs
}

// A schedule of a workflow writes a run per fire, with the schedule's
// params, and no job: the runs' steps are written when a run is decided.
// Missed fires fold into one catch-up run, as they fold into one job.
func TestWorkflowScheduleWritesRuns(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st, "n1")
		start := b.clock.Now()
		s, wf := b.workflowSchedule(t, models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("* * * * *"),
			Params: models.JSON(`{"day":"mon"}`)}, start.Add(-time.Hour))
		last := start.Add(-10 * time.Minute)
		require.NoError(t, st.DB().Create(&models.TimeTrigger{ScheduleID: s.ID, LastFireAt: &last, FiredCount: 50}).Error)

		b.at(t, start.Add(2*time.Second))
		runs := runsOf(t, st, s.ID)
		require.Len(t, runs, 1, "ten missed fires fold into one catch-up run")
		r := runs[0]
		require.Equal(t, wf.ID, r.WorkflowID)
		require.Equal(t, models.RunPending, r.Status)
		require.True(t, start.Equal(*r.ScheduledAt), "the catch-up carries the latest missed time")
		require.JSONEq(t, `{"day":"mon"}`, string(r.Params))
		require.Contains(t, r.StartedBy, "catch-up of 10 missed fires")
		require.Empty(t, jobsOf(t, st, s.ID), "a workflow's schedule writes no job itself")
		tr := triggerOf(t, st, s.ID)
		require.EqualValues(t, 51, tr.FiredCount)
		require.EqualValues(t, 10, tr.MisfiredCount)

		b.at(t, start.Add(time.Minute))
		runs = runsOf(t, st, s.ID)
		require.Len(t, runs, 2)
		require.Equal(t, "schedule "+s.Name, runs[1].StartedBy)

		// The maintenance leader starts the pending runs: each writes its
		// step's job, which names its run, not the schedule.
		n, err := st.AdvanceRuns(t.Context(), 10)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		var jobs []models.Job
		require.NoError(t, st.DB().Where("run_id IN ?", []int64{runs[0].ID, runs[1].ID}).Find(&jobs).Error)
		require.Len(t, jobs, 2)
		require.Contains(t, string(jobs[0].RunInputs), `"day":"mon"`, "the run's params reach its steps")
	})
}

// Two leaders that write the same fire of a workflow's schedule write one
// run: the unique (schedule_id, scheduled_at) is the runs' fire ledger.
func TestWorkflowScheduleTwoLeadersOneRun(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		a := setup(t, st, "a")
		b := setupWithClock(t, st, "b", a.clock) // a split brain: both lead
		start := a.clock.Now()
		s, _ := a.workflowSchedule(t, models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("*/10 * * * * *")}, start)
		for _, d := range []time.Duration{1, 10, 20} {
			a.at(t, start.Add(d*time.Second))
			b.at(t, start.Add(d*time.Second))
		}
		require.Len(t, runsOf(t, st, s.ID), 3) // +0s, +10s, +20s
		require.EqualValues(t, 3, triggerOf(t, st, s.ID).FiredCount)
	})
}

// concurrency forbid holds for a run as a whole: no run fires while one
// of the schedule's runs is pending, running or paused.
func TestWorkflowScheduleForbid(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st, "n1")
		start := b.clock.Now()
		s, _ := b.workflowSchedule(t, models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("*/10 * * * * *"),
			Concurrency: models.ConcurrencyForbid}, start)
		b.at(t, start.Add(time.Millisecond))
		_, err := st.AdvanceRuns(t.Context(), 10)
		require.NoError(t, err)
		runs := runsOf(t, st, s.ID)
		require.Len(t, runs, 1)
		require.NoError(t, st.DB().Exec("UPDATE workflow_runs SET status = 'paused' WHERE id = ?", runs[0].ID).Error)
		b.at(t, start.Add(10*time.Second))
		require.Len(t, runsOf(t, st, s.ID), 1, "the first run is paused, not over")
		require.NoError(t, st.DB().Exec("UPDATE workflow_runs SET status = 'succeeded' WHERE id = ?", runs[0].ID).Error)
		b.at(t, start.Add(20*time.Second))
		require.Len(t, runsOf(t, st, s.ID), 2)
	})
}

// The CHECK refuses a row that names both a definition and a workflow,
// or neither, on every dialect; the engine refuses one all the same (a
// row restored from a dump without the constraint), with the reason as
// the schedule's status_reason.
func TestWorkflowScheduleBadTarget(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st, "n1")
		start := b.clock.Now()
		db := st.DB()
		def := b.schedule(t, models.Schedule{Name: "def", ScheduleType: models.ScheduleCron, CronExpr: ptr("@daily")}, start)
		wfs, _ := b.workflowSchedule(t, models.Schedule{Name: "wf", ScheduleType: models.ScheduleCron, CronExpr: ptr("@daily")}, start)
		require.Error(t, db.Exec("UPDATE schedules SET workflow_id = ? WHERE id = ?", *wfs.WorkflowID, def.ID).Error, "both")
		require.Error(t, db.Exec("UPDATE schedules SET job_definition_id = NULL WHERE id = ?", def.ID).Error, "neither")
		// A workflow_id that names nothing passes the CHECK: the engine
		// says so in status_reason, and fires the others.
		ghost, _ := b.workflowSchedule(t, models.Schedule{Name: "ghost", ScheduleType: models.ScheduleCron, CronExpr: ptr("* * * * * *")}, start)
		require.NoError(t, db.Exec("UPDATE schedules SET workflow_id = 999999 WHERE id = ?", ghost.ID).Error)
		b.at(t, start.Add(time.Second))
		got := reload(t, st, models.Schedule{ID: ghost.ID})
		require.Equal(t, models.ScheduleInvalid, got.Status)
		require.Contains(t, got.StatusReason, "workflow 999999 does not exist")
		require.Empty(t, runsOf(t, st, ghost.ID))
		require.Equal(t, models.ScheduleActive, reload(t, st, models.Schedule{ID: wfs.ID}).Status)
	})
	wf := int64(7)
	for name, s := range map[string]models.Schedule{
		"must name exactly one":                   {ID: 1, JobDefinitionID: 3, WorkflowID: &wf},
		"neither a job definition nor a workflow": {ID: 2},
	} {
		s.ScheduleType, s.CronExpr, s.Timezone, s.MisfirePolicy = models.ScheduleCron, ptr("@daily"), "UTC", models.MisfireFireOnce
		r := &chimedb.ScheduleRow{Schedule: s}
		if s.JobDefinitionID != 0 {
			r.Definition = &models.JobDefinition{ID: 3, MaxAttempts: 1}
		}
		_, err := newEntry(r)
		require.ErrorContains(t, err, name)
	}
	row := chimedb.ScheduleRow{Schedule: models.Schedule{ID: 3, WorkflowID: &wf, ScheduleType: models.ScheduleCron,
		CronExpr: ptr("@daily"), Timezone: "UTC", MisfirePolicy: models.MisfireFireOnce, Params: models.JSON(`{"x":1}`)}}
	_, err := newEntry(&row)
	require.ErrorContains(t, err, "workflow 7 does not exist")
	row.Workflow = &models.Workflow{ID: wf}
	en, err := newEntry(&row)
	require.NoError(t, err)
	require.True(t, en.sched.workflow)
	require.Equal(t, wf, en.sched.target)
	require.JSONEq(t, `{"x":1}`, string(en.params))
}
