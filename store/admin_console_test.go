package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// The counts by status and per minute read claim_key ranges; they count
// exactly the jobs whose run_at is in the window, whatever their priority,
// with jobs of every priority due on both sides of its edges.
func TestCountsAtEveryPriority(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		def := testdb.Definition(t, st, nil)
		now := time.Now().UTC()
		end := now.Truncate(time.Minute).Add(time.Minute)
		start := end.Add(-10 * time.Minute)
		statuses := []models.JobStatus{models.JobSucceeded, models.JobFailed, models.JobPending}
		want := map[models.JobStatus]int64{}
		var fires, failures int64
		i := 0
		for _, p := range []int{models.PriorityMin, models.PriorityDefault, models.PriorityMax} {
			for _, d := range []time.Duration{-6 * time.Minute, -4*time.Minute - 30*time.Second, -time.Minute, -time.Second,
				time.Second, time.Minute, 4*time.Minute + 30*time.Second, 6 * time.Minute} {
				for _, edge := range []time.Time{start, end} {
					status := statuses[i%len(statuses)]
					i++
					runAt := edge.Add(d)
					testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Priority: p, Status: status, RunAt: runAt})
					if !runAt.Before(start) {
						want[status]++
					}
					if !runAt.Before(start) && runAt.Before(end) {
						fires++
						if status == models.JobFailed {
							failures++
						}
					}
				}
			}
		}
		admin := st.Admin()
		got, err := admin.CountJobsByStatus(ctx, start)
		require.NoError(t, err)
		require.Equal(t, want, got)

		buckets, err := admin.CountJobsPerMinute(ctx, start, 10)
		require.NoError(t, err)
		require.Len(t, buckets, 10)
		require.Equal(t, start, buckets[0].Start)
		require.Equal(t, end.Add(-time.Minute), buckets[9].Start)
		var gotFires, gotFailures int64
		for _, b := range buckets {
			gotFires += b.Fires
			gotFailures += b.Failures
		}
		require.Equal(t, fires, gotFires)
		require.Equal(t, failures, gotFailures)
	})
}

// The console's other reads: a schedule's jobs by fire time, the latest
// of each schedule, names by id, the running count per node, the
// definitions a form offers, and a name search that takes %, _ and its
// own escape character literally.
func TestConsoleReads(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		admin := st.Admin()
		zeta := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "zeta"})
		alpha := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "alpha", TaskType: "shell"})
		every := "@every 1m"
		sched := func(name string) models.Schedule {
			s := models.Schedule{Name: name, JobDefinitionID: zeta.ID, ScheduleType: models.ScheduleCron, CronExpr: &every,
				Timezone: "UTC", MisfirePolicy: models.MisfireFireOnce, Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive}
			require.NoError(t, admin.CreateSchedule(ctx, &s))
			return s
		}
		a, b, c := sched("100% done"), sched("a_b!c"), sched("quiet")
		base := store.DBTime(time.Now().Add(-time.Hour)).Truncate(time.Second)
		job := func(s models.Schedule, at time.Time, status models.JobStatus, node string) models.Job {
			j := models.Job{ScheduleID: &s.ID, JobDefinitionID: s.JobDefinitionID, ScheduledAt: at, RunAt: at, Status: status, NodeID: node}
			require.NoError(t, st.DB().Create(&j).Error)
			return j
		}
		// Inserted out of fire order: ids do not decide "latest".
		late := job(a, base.Add(3*time.Minute), models.JobRunning, "n1")
		job(a, base.Add(time.Minute), models.JobSucceeded, "")
		job(a, base.Add(2*time.Minute), models.JobRunning, "n1")
		bLast := job(b, base.Add(5*time.Minute), models.JobFailed, "")
		job(b, base, models.JobRunning, "n2")

		last, err := admin.LastJobs(ctx, []int64{a.ID, b.ID, c.ID})
		require.NoError(t, err)
		require.Len(t, last, 2, "a schedule without jobs is absent")
		require.Equal(t, late.ID, last[a.ID].ID)
		require.Equal(t, models.JobRunning, last[a.ID].Status)
		require.True(t, late.ScheduledAt.Equal(last[a.ID].ScheduledAt))
		require.Equal(t, bLast.ID, last[b.ID].ID)
		empty, err := admin.LastJobs(ctx, nil)
		require.NoError(t, err)
		require.Empty(t, empty)

		jobs, err := admin.ScheduleJobs(ctx, a.ID, 2)
		require.NoError(t, err)
		require.Len(t, jobs, 2)
		require.Equal(t, late.ID, jobs[0].ID)
		require.True(t, jobs[1].ScheduledAt.Equal(base.Add(2*time.Minute)))

		running, err := admin.CountRunningByNode(ctx)
		require.NoError(t, err)
		require.Equal(t, map[string]int64{"n1": 2, "n2": 1}, running)

		dn, err := admin.DefinitionNames(ctx, []int64{zeta.ID, alpha.ID, 1 << 40})
		require.NoError(t, err)
		require.Equal(t, map[int64]string{zeta.ID: "zeta", alpha.ID: "alpha"}, dn)
		sn, err := admin.ScheduleNames(ctx, []int64{a.ID, c.ID})
		require.NoError(t, err)
		require.Equal(t, map[int64]string{a.ID: "100% done", c.ID: "quiet"}, sn)
		none, err := admin.ScheduleNames(ctx, nil)
		require.NoError(t, err)
		require.Empty(t, none)

		choices, err := admin.DefinitionChoices(ctx)
		require.NoError(t, err)
		require.Len(t, choices, 2)
		require.Equal(t, []string{"alpha", "zeta"}, []string{choices[0].Name, choices[1].Name})
		require.Equal(t, "shell", choices[0].TaskType)

		for q, want := range map[string][]int64{
			"%": {a.ID}, "_": {b.ID}, "!": {b.ID}, "a_b!": {b.ID}, "0%": {a.ID}, "": {c.ID, b.ID, a.ID}, "none": nil,
		} {
			got, err := admin.ListSchedules(ctx, &chimedb.AdminListParams{NameContains: q, Limit: 10})
			require.NoError(t, err, q)
			var ids []int64
			for _, s := range got {
				ids = append(ids, s.ID)
			}
			require.Equal(t, want, ids, "%q", q)
		}
	})
}
