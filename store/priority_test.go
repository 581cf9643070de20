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

// wantClaimKey is jobs.claim_key as migration 00012 defines it.
func wantClaimKey(j models.Job) int64 {
	return j.RunAt.UnixMilli() - int64(j.Priority-models.PriorityDefault)*models.PriorityStep.Milliseconds()
}

// requireClaimKey checks j's claim_key. SQLite's julianday() rounds run_at
// to the millisecond where the others truncate it, so there it may be one
// more.
func requireClaimKey(t *testing.T, st *store.Store, j models.Job) {
	t.Helper()
	want := wantClaimKey(j)
	if st.Dialect() == store.SQLite && j.ClaimKey == want+1 {
		return
	}
	require.Equal(t, want, j.ClaimKey, "claim_key of job %d", j.ID)
}

func jobByID(t *testing.T, st *store.Store, id int64) models.Job {
	t.Helper()
	var j models.Job
	require.NoError(t, st.DB().Take(&j, id).Error)
	return j
}

func lastJobID(t *testing.T, st *store.Store) int64 {
	t.Helper()
	var id int64
	require.NoError(t, st.DB().Raw(`SELECT MAX(id) FROM jobs`).Scan(&id).Error)
	return id
}

// A job an admin writes with plain SQL, without a priority, takes its
// schedule's, else its definition's; setting it to NULL later does the
// same; and claim_key follows run_at and priority whoever writes them.
func TestPriorityInheritedByPlainSQL(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		require.NoError(t, db.Exec(`INSERT INTO job_definitions (name, task_type) VALUES ('plain', 'sleep')`).Error)
		require.NoError(t, db.Exec(`INSERT INTO job_definitions (name, task_type, priority) VALUES ('urgent', 'sleep', 8)`).Error)
		var plain, urgent models.JobDefinition
		require.NoError(t, db.Where("name = 'plain'").Take(&plain).Error)
		require.NoError(t, db.Where("name = 'urgent'").Take(&urgent).Error)
		require.Equal(t, models.PriorityDefault, plain.Priority, "the column's default")
		require.Equal(t, 8, urgent.Priority)

		require.NoError(t, db.Exec(`INSERT INTO schedules (name, job_definition_id, schedule_type, interval_seconds) VALUES ('inherits', ?, 'interval', 60)`, urgent.ID).Error)
		require.NoError(t, db.Exec(`INSERT INTO schedules (name, job_definition_id, schedule_type, interval_seconds, priority) VALUES ('low', ?, 'interval', 60, 2)`, urgent.ID).Error)
		var inherits, low models.Schedule
		require.NoError(t, db.Where("name = 'inherits'").Take(&inherits).Error)
		require.NoError(t, db.Where("name = 'low'").Take(&low).Error)
		require.Nil(t, inherits.Priority)
		require.Equal(t, 2, *low.Priority)

		insert := func(q string, args ...any) models.Job {
			t.Helper()
			require.NoError(t, db.Exec(q, args...).Error)
			j := jobByID(t, st, lastJobID(t, st))
			requireClaimKey(t, st, j)
			return j
		}
		// The README's ad hoc run, unchanged.
		require.Equal(t, 5, insert(`INSERT INTO jobs (job_definition_id) VALUES (?)`, plain.ID).Priority)
		require.Equal(t, 8, insert(`INSERT INTO jobs (job_definition_id) VALUES (?)`, urgent.ID).Priority)
		at := store.DBTime(time.Now().Add(-time.Hour))
		require.Equal(t, 8, insert(`INSERT INTO jobs (schedule_id, job_definition_id, scheduled_at, run_at) VALUES (?, ?, ?, ?)`,
			inherits.ID, urgent.ID, at, at).Priority)
		lowJob := insert(`INSERT INTO jobs (schedule_id, job_definition_id, scheduled_at, run_at) VALUES (?, ?, ?, ?)`,
			low.ID, urgent.ID, at.Add(time.Second), at.Add(time.Second))
		require.Equal(t, 2, lowJob.Priority)
		require.Equal(t, 9, insert(`INSERT INTO jobs (schedule_id, job_definition_id, scheduled_at, run_at, priority) VALUES (?, ?, ?, ?, 9)`,
			low.ID, urgent.ID, at.Add(2*time.Second), at.Add(2*time.Second)).Priority)

		// GORM leaves a zero Priority out, as the test factories do.
		gj := models.Job{JobDefinitionID: urgent.ID, ScheduledAt: at, RunAt: at, Status: models.JobPending}
		require.NoError(t, db.Create(&gj).Error)
		require.Equal(t, 8, jobByID(t, st, gj.ID).Priority)

		// An admin's edits keep claim_key right.
		require.NoError(t, db.Exec(`UPDATE jobs SET priority = 10 WHERE id = ?`, lowJob.ID).Error)
		j := jobByID(t, st, lowJob.ID)
		require.Equal(t, 10, j.Priority)
		requireClaimKey(t, st, j)
		later := store.DBTime(time.Now().Add(time.Hour))
		require.NoError(t, db.Exec(`UPDATE jobs SET run_at = ? WHERE id = ?`, later, lowJob.ID).Error)
		j = jobByID(t, st, lowJob.ID)
		require.Equal(t, later, j.RunAt)
		requireClaimKey(t, st, j)
		require.NoError(t, db.Exec(`UPDATE jobs SET priority = NULL WHERE id = ?`, lowJob.ID).Error)
		j = jobByID(t, st, lowJob.ID)
		require.Equal(t, 2, j.Priority, "NULL takes the schedule's again")
		requireClaimKey(t, st, j)
	})
}

// Priorities outside 1..10 written with plain SQL are refused by the
// schema's CHECK constraints (and on SQLite, text and fractions too).
func TestPriorityOutOfRangeRefusedBySQL(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		def := testdb.Definition(t, st, nil)
		sch := models.Schedule{Name: "s", JobDefinitionID: def.ID, ScheduleType: models.ScheduleInterval, IntervalSeconds: new(60),
			Timezone: "UTC", MisfirePolicy: models.MisfireFireOnce, Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive}
		require.NoError(t, db.Create(&sch).Error)
		job := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID})
		for _, bad := range []string{"0", "11", "-1", "1000"} {
			require.Error(t, db.Exec(`INSERT INTO job_definitions (name, task_type, priority) VALUES ('bad', 'sleep', `+bad+`)`).Error, bad)
			require.Error(t, db.Exec(`UPDATE job_definitions SET priority = `+bad+` WHERE id = ?`, def.ID).Error, bad)
			require.Error(t, db.Exec(`UPDATE schedules SET priority = `+bad+` WHERE id = ?`, sch.ID).Error, bad)
			require.Error(t, db.Exec(`INSERT INTO jobs (job_definition_id, priority) VALUES (?, `+bad+`)`, def.ID).Error, bad)
			require.Error(t, db.Exec(`UPDATE jobs SET priority = `+bad+` WHERE id = ?`, job.ID).Error, bad)
		}
		require.Error(t, db.Exec(`UPDATE job_definitions SET priority = NULL WHERE id = ?`, def.ID).Error, "a definition always has one")
		if st.Dialect() == store.SQLite {
			for _, bad := range []string{"'high'", "5.5"} {
				require.Error(t, db.Exec(`UPDATE job_definitions SET priority = `+bad+` WHERE id = ?`, def.ID).Error, bad)
				require.Error(t, db.Exec(`UPDATE jobs SET priority = `+bad+` WHERE id = ?`, job.ID).Error, bad)
			}
		}
		require.Equal(t, models.PriorityDefault, testdb.GetJob(t, st, job.ID).Priority)
		require.NoError(t, db.Exec(`UPDATE schedules SET priority = 10 WHERE id = ?`, sch.ID).Error)
		require.NoError(t, db.Exec(`UPDATE schedules SET priority = NULL WHERE id = ?`, sch.ID).Error)
	})
}

// On MySQL an admin's session time zone does not move claim_key: it is
// computed from run_at after 00003's triggers made it UTC. (PostgreSQL's
// TIMESTAMPTZ is an instant whatever the session; SQLite has no sessions.)
func TestClaimKeyInAdminTimeZone(t *testing.T) {
	t.Parallel()
	for _, d := range testdb.Dialects {
		if d != store.MySQL && d != store.Postgres {
			continue
		}
		t.Run(string(d), func(t *testing.T) {
			st, cfg := openWithConfig(t, d)
			def := testdb.Definition(t, st, nil)
			admin := adminSession(t, cfg, "+08:00")
			q := `INSERT INTO jobs (job_definition_id, run_at, priority) VALUES (?, '2030-01-01 09:00:00', 7)`
			if d == store.Postgres {
				q = `INSERT INTO jobs (job_definition_id, run_at, priority) VALUES ($1, '2030-01-01 09:00:00', 7)`
			}
			_, err := admin.Exec(q, def.ID)
			require.NoError(t, err)
			j := jobByID(t, st, lastJobID(t, st))
			require.Equal(t, time.Date(2030, 1, 1, 1, 0, 0, 0, time.UTC), j.RunAt.UTC())
			requireClaimKey(t, st, j)
		})
	}
}

// Among due jobs the claim takes higher priorities first; equal ones go
// by run_at, then id.
func TestClaimOrderByPriority(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		def := testdb.Definition(t, st, nil)
		now := store.DBTime(time.Now())
		mk := func(prio int, ago time.Duration) int64 {
			return testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Priority: prio, RunAt: now.Add(-ago)}).ID
		}
		low := mk(1, 3*time.Second)
		dflt := mk(0, 2*time.Second) // the definition's: 5
		high := mk(10, time.Second)
		mid := mk(7, 2*time.Second)
		dflt2 := mk(5, 3*time.Second)
		notDue := mk(10, -time.Second)
		var got []int64
		for {
			res, err := st.ClaimJobs(ctx, &chimedb.ClaimParams{NodeID: "n", Now: now, Limit: 1})
			require.NoError(t, err)
			if len(res.Jobs) == 0 {
				break
			}
			got = append(got, res.Jobs[0].ID)
		}
		require.Equal(t, []int64{high, mid, dflt2, dflt, low}, got)
		require.Equal(t, models.JobPending, testdb.GetJob(t, st, notDue).Status)
	})
}

// The starvation bound on the claim's clock: a job of the lowest priority
// due at t is passed over by one of the highest only if that one became due
// less than (10 - 1) × PriorityStep after t.
func TestClaimPriorityStarvationBound(t *testing.T) {
	t.Parallel()
	bound := (models.PriorityMax - models.PriorityMin) * models.PriorityStep
	for _, c := range []struct {
		name      string
		highAfter time.Duration
		lowFirst  bool
	}{
		{"high due just inside the bound goes first", bound - time.Second, false},
		{"high due just past the bound waits", bound + time.Second, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			testdb.ForEach(t, func(t *testing.T, st *store.Store) {
				ctx := context.Background()
				def := testdb.Definition(t, st, nil)
				tLow := store.DBTime(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
				low := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Priority: models.PriorityMin, RunAt: tLow})
				high := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Priority: models.PriorityMax, RunAt: tLow.Add(c.highAfter)})
				clock := tLow.Add(c.highAfter + time.Minute) // both due
				res, err := st.ClaimJobs(ctx, &chimedb.ClaimParams{NodeID: "n", Now: clock, Limit: 1})
				require.NoError(t, err)
				require.Len(t, res.Jobs, 1)
				want := high.ID
				if c.lowFirst {
					want = low.ID
				}
				require.Equal(t, want, res.Jobs[0].ID)
			})
		})
	}
}

// The claim's pick is a range on idx_jobs_claim_order on every database.
func TestClaimUsesPriorityIndex(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		def := testdb.Definition(t, st, nil)
		for i := range 50 {
			testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Priority: 1 + i%10, Status: models.JobSucceeded})
		}
		// A backlog, where the order matters: a planner that costs the pick
		// (PostgreSQL) may scan and sort when a single row is due, which is
		// as cheap (before 00013 it could also take idx_jobs_claim).
		claimBacklog(t, st, def.ID, 300)
		plan, err := st.ExplainClaim(context.Background(), time.Now(), 10)
		require.NoError(t, err)
		requireClaimOrderPlan(t, plan)
	})
}

// The fire path writes each job with its schedule's priority, else its
// definition's, as they are when the fire commits.
func TestWriteFiresWritesEffectivePriority(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		db := st.DB()
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{Priority: 3})
		mk := func(name string, prio *int) models.Schedule {
			s := models.Schedule{Name: name, JobDefinitionID: def.ID, ScheduleType: models.ScheduleInterval, IntervalSeconds: new(60),
				Timezone: "UTC", MisfirePolicy: models.MisfireFireOnce, Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive, Priority: prio}
			require.NoError(t, db.Create(&s).Error)
			return s
		}
		own := mk("own", new(9))
		inherits := mk("inherits", nil)
		at := time.Now().UTC().Truncate(time.Second)
		p := &chimedb.WriteFiresParams{Now: time.Now()}
		for _, s := range []models.Schedule{own, inherits} {
			p.Jobs = append(p.Jobs, chimedb.FireJob{ScheduleID: s.ID, JobDefinitionID: def.ID, ScheduledAt: at, MaxAttempts: 1})
			p.Jobs = append(p.Jobs, chimedb.FireJob{ScheduleID: s.ID, JobDefinitionID: def.ID, ScheduledAt: at.Add(-time.Minute), MaxAttempts: 1, CatchUp: true})
			p.Triggers = append(p.Triggers, chimedb.TriggerRow{ScheduleID: s.ID, LastFireAt: &at, FiredCount: 1})
		}
		res, err := st.WriteFires(ctx, p)
		require.NoError(t, err)
		require.Equal(t, 2, res.Inserted)
		require.Equal(t, 2, res.InsertedCatchUp)
		var jobs []models.Job
		require.NoError(t, db.Order("id").Find(&jobs).Error)
		require.Len(t, jobs, 4)
		for _, j := range jobs {
			want := 3
			if *j.ScheduleID == own.ID {
				want = 9
			}
			require.Equal(t, want, j.Priority, "job %d of schedule %d", j.ID, *j.ScheduleID)
			requireClaimKey(t, st, j)
		}
	})
}

// A retry, a snooze, a release and a recovery move run_at but keep the
// job's priority, and claim_key follows run_at.
func TestRescheduledJobsKeepPriority(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{MaxAttempts: 3})
		job := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Priority: 9})
		claimStart := func() {
			t.Helper()
			res, err := st.ClaimJobs(ctx, &chimedb.ClaimParams{NodeID: "n", Now: time.Now(), Limit: 1})
			require.NoError(t, err)
			require.Len(t, res.Jobs, 1)
			_, err = st.StartJobs(ctx, &chimedb.StartJobsParams{NodeID: "n", Now: time.Now(), Jobs: []chimedb.StartJob{{ID: job.ID, Attempt: res.Jobs[0].Attempt}}})
			require.NoError(t, err)
		}
		check := func(what string) {
			t.Helper()
			j := testdb.GetJob(t, st, job.ID)
			require.Equal(t, models.JobPending, j.Status, what)
			require.Equal(t, 9, j.Priority, what)
			requireClaimKey(t, st, j)
			// Due again at once for the next step.
			require.NoError(t, st.DB().Exec(`UPDATE jobs SET run_at = ? WHERE id = ?`, store.DBTime(time.Now().Add(-time.Second)), job.ID).Error)
		}

		claimStart()
		_, err := st.CompleteJobs(ctx, &chimedb.CompleteJobsParams{NodeID: "n", Outcomes: []chimedb.JobOutcome{
			{ID: job.ID, Status: models.JobPending, RunAt: time.Now().Add(time.Hour)}}})
		require.NoError(t, err)
		check("retry")

		claimStart()
		_, err = st.CompleteJobs(ctx, &chimedb.CompleteJobsParams{NodeID: "n", Outcomes: []chimedb.JobOutcome{
			{ID: job.ID, Status: models.JobPending, Outcome: models.OutcomeSnoozed, RunAt: time.Now().Add(time.Hour)}}})
		require.NoError(t, err)
		check("snooze")

		res, err := st.ClaimJobs(ctx, &chimedb.ClaimParams{NodeID: "n", Now: time.Now(), Limit: 1})
		require.NoError(t, err)
		require.Len(t, res.Jobs, 1)
		_, err = st.ReleaseJobs(ctx, &chimedb.ReleaseJobsParams{NodeID: "n", Now: time.Now(), Reason: "test"})
		require.NoError(t, err)
		check("release")

		claimStart()
		_, err = st.RecoverNode(ctx, &chimedb.RecoverNodeParams{NodeID: "n", Now: time.Now()})
		require.NoError(t, err)
		check("recovery")
	})
}

// claimBacklog writes n due pending jobs of priorities 1..10 a second
// apart, and has PostgreSQL count them, so that plans are those of a
// backlog, where the claim's order matters.
func claimBacklog(t *testing.T, st *store.Store, def int64, n int) []models.Job {
	t.Helper()
	now := store.DBTime(time.Now())
	backlog := make([]models.Job, n)
	for i := range backlog {
		backlog[i] = models.Job{JobDefinitionID: def, ScheduledAt: now, Priority: 1 + i%10,
			RunAt: now.Add(-time.Duration(i) * time.Second), Status: models.JobPending}
	}
	require.NoError(t, st.DB().Create(&backlog).Error)
	if st.Dialect() == store.Postgres {
		require.NoError(t, st.DB().Exec("ANALYZE jobs").Error)
	}
	return backlog
}

// requireClaimOrderPlan requires a plan that reads idx_jobs_claim_order and
// takes its order from it: no sort of the due rows.
func requireClaimOrderPlan(t *testing.T, plan string) {
	t.Helper()
	require.Contains(t, plan, "idx_jobs_claim_order", plan)
	require.NotContains(t, plan, "filesort", plan)
	require.NotContains(t, plan, "TEMP B-TREE", plan)
	require.NotContains(t, plan, "Sort", plan)
}
