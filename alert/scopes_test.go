package alert_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// TestQueueAndWorkflowScopes: a queue rule judges the jobs that run in the
// queue (their own, their schedule's or their definition's), a workflow
// rule the jobs of the workflow's runs; rows an admin wrote wrong are
// reported invalid and skipped, the others still judged.
func TestQueueAndWorkflowScopes(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		f := newFix(t, st, time.Now().Add(time.Minute))
		db := st.DB()
		etl := "etl"
		inEtl := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "load"})
		require.NoError(t, db.Exec("UPDATE job_definitions SET queue = ? WHERE id = ?", etl, inEtl.ID).Error)
		plain := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "plain"})
		every := 60
		s := models.Schedule{Name: "etl-s", JobDefinitionID: plain.ID, ScheduleType: models.ScheduleInterval, IntervalSeconds: &every,
			Timezone: "UTC", MisfirePolicy: models.MisfireFireOnce, Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive, Queue: &etl}
		require.NoError(t, st.Admin().CreateSchedule(f.ctx, &s))
		wf := models.Workflow{Name: "nightly", FailurePolicy: models.FailStop}
		require.NoError(t, db.Create(&wf).Error)
		other := models.Workflow{Name: "other", FailurePolicy: models.FailStop}
		require.NoError(t, db.Create(&other).Error)
		run := models.WorkflowRun{WorkflowID: wf.ID, Status: models.RunRunning}
		require.NoError(t, db.Create(&run).Error)
		otherRun := models.WorkflowRun{WorkflowID: other.ID, Status: models.RunRunning}
		require.NoError(t, db.Create(&otherRun).Error)

		byQueue := f.rule(models.EventJobFailed, func(r *models.AlertRule) { r.Scope, r.Queue = models.ScopeQueue, &etl })
		byFlow := f.rule(models.EventJobFailed, func(r *models.AlertRule) { r.Scope, r.WorkflowID = models.ScopeWorkflow, &wf.ID })
		f.rule(models.EventBacklog, func(r *models.AlertRule) {
			r.Scope, r.Queue, r.Params = models.ScopeQueue, &etl, models.JSON(`{"wait_seconds":60}`)
		})
		// Rows written with SQL: a queue scope without a queue, a workflow
		// that is not there, and a scope chime does not know.
		for _, bad := range []string{
			fmt.Sprintf("INSERT INTO alert_rules (name, event, scope, channel_id) VALUES ('zz-no-queue', 'job_failed', 'queue', %d)", f.ch.ID),
			fmt.Sprintf("INSERT INTO alert_rules (name, event, scope, workflow_id, channel_id) VALUES ('zz-gone', 'job_failed', 'workflow', 999999, %d)", f.ch.ID),
			fmt.Sprintf("INSERT INTO alert_rules (name, event, scope, channel_id) VALUES ('zz-team', 'job_failed', 'team', %d)", f.ch.ID),
		} {
			require.NoError(t, db.Exec(bad).Error)
		}
		rules, err := st.ListAlertRules(f.ctx)
		require.NoError(t, err)
		invalid := map[string]string{}
		for _, r := range rules {
			invalid[r.Name] = r.Invalid
		}
		require.Contains(t, invalid["zz-no-queue"], "queue: a queue name")
		require.Contains(t, invalid["zz-gone"], "workflow 999999 does not exist")
		require.Contains(t, invalid["zz-team"], `scope: "team"`)

		now := f.clock.Now()
		fail := func(def int64, sched *int64, mods ...func(j *models.Job)) int64 {
			return f.job(def, sched, append([]func(j *models.Job){finished(models.JobFailed, now.Add(-10*time.Second), 1)}, mods...)...).ID
		}
		j1 := fail(inEtl.ID, nil)                                         // the definition's queue
		j2 := fail(plain.ID, &s.ID)                                       // the schedule's
		j3 := fail(plain.ID, nil, func(j *models.Job) { j.Queue = &etl }) // its own
		fail(plain.ID, nil)                                               // default: neither rule
		j5 := fail(plain.ID, nil, func(j *models.Job) { j.RunID = &run.ID })
		fail(plain.ID, nil, func(j *models.Job) { j.RunID = &otherRun.ID }) // another workflow
		due := f.job(plain.ID, nil, func(j *models.Job) { j.Queue, j.RunAt = &etl, store.DBTime(now.Add(-5*time.Minute)) })
		f.job(plain.ID, nil, func(j *models.Job) { j.RunAt = store.DBTime(now.Add(-time.Hour)) }) // due, but in default

		require.Equal(t, 5, f.pass())
		got := map[int64][]int64{}
		var backlog []string
		for _, p := range f.rcv.payloads() {
			if p.Event == models.EventBacklog {
				backlog = append(backlog, p.Subject+" "+p.Summary)
				continue
			}
			got[p.Rule.ID] = append(got[p.Rule.ID], p.Job.ID)
		}
		require.ElementsMatch(t, []int64{j1, j2, j3}, got[byQueue.ID])
		require.Equal(t, []int64{j5}, got[byFlow.ID])
		require.Equal(t, []string{fmt.Sprintf("queue:etl backlog (queue:etl): the oldest due job (%d) has waited 5m0s, more than 60s", due.ID)}, backlog)

		// A queue name of the longest kind still makes a dedupe key the
		// column holds (and its resolution's too).
		long := strings.Repeat("q", models.MaxQueueNameLen)
		f.rule(models.EventBacklog, func(r *models.AlertRule) {
			r.Scope, r.Queue, r.Params = models.ScopeQueue, &long, models.JSON(`{"wait_seconds":60}`)
		})
		f.job(plain.ID, nil, func(j *models.Job) { j.Queue, j.RunAt = &long, store.DBTime(now.Add(-5*time.Minute)) })
		f.clock.Advance(time.Second)
		require.Equal(t, 1, f.pass())
		require.NoError(t, db.Exec("UPDATE jobs SET status = ? WHERE status = ?", models.JobCanceled, models.JobPending).Error)
		require.Equal(t, 2, f.pass(), "both backlogs drained")
	})
}
