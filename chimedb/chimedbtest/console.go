package chimedbtest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// consoleQueryMethods are the console's reads of AdminQueries.
func consoleQueryMethods() []method {
	return []method{
		{"AdminQueries.CountJobsByStatus", countJobsByStatusCases},
		{"AdminQueries.CountJobsPerMinute", countJobsPerMinuteCases},
		{"AdminQueries.CountRunningByNode", countRunningByNodeCases},
		{"AdminQueries.LastJobs", lastJobsCases},
		{"AdminQueries.ScheduleJobs", scheduleJobsCases},
		{"AdminQueries.DefinitionNames", definitionNamesCases},
		{"AdminQueries.ScheduleNames", scheduleNamesCases},
		{"AdminQueries.DefinitionChoices", definitionChoicesCases},
	}
}

func consoleStoreMethods() []method {
	return []method{
		{"ConsoleStore.RevokeSession", revokeSessionCases},
		{"ConsoleStore.SessionRevoked", sessionRevokedCases},
	}
}

// everyStatus is every status a job can have.
var everyStatus = []models.JobStatus{
	models.JobPending, models.JobQueued, models.JobRunning, models.JobPaused,
	models.JobSucceeded, models.JobFailed, models.JobStopped, models.JobCanceled,
}

// everyPriority spans the priorities: a store may turn a run_at bound
// into a bound on a key that mixes priority and run_at.
var everyPriority = []int{models.PriorityMin, models.PriorityDefault, models.PriorityMax}

// dueJob inserts a job of def due at at with priority p and gives it
// status st.
func (e *env) dueJob(def int64, at time.Time, p int, st models.JobStatus) *models.Job {
	e.t.Helper()
	j := e.job(def, runAt(at), priority(p))
	if st != models.JobPending {
		e.setJob(j.ID, jobState{status: st})
	}
	return j
}

var countJobsByStatusCases = []tcase{
	{"counts the jobs due at or after since by status, at every priority; a status without jobs is absent", func(e *env) {
		d := e.definition()
		since := chimedb.DBTime(e.now().Add(-time.Hour))
		got, err := e.admin.CountJobsByStatus(e.ctx, since)
		require.NoError(e.t, err)
		require.Empty(e.t, got)
		want := map[models.JobStatus]int64{}
		for i, st := range everyStatus {
			if st == models.JobCanceled {
				continue // absent from the counts
			}
			p := everyPriority[i%len(everyPriority)]
			for _, off := range []time.Duration{-time.Hour, -time.Minute, -time.Microsecond, 0, time.Microsecond, time.Minute, 2 * time.Hour} {
				e.dueJob(d.ID, since.Add(off), p, st)
				if off >= 0 {
					want[st]++
				}
			}
		}
		// Only run_at decides: a job scheduled before since but due after
		// it (a retry) counts, one scheduled after and due before does not.
		retry := e.job(d.ID, func(j *models.Job) { j.ScheduledAt, j.RunAt = since.Add(-time.Hour), since.Add(time.Minute) })
		e.setJob(retry.ID, jobState{status: models.JobCanceled})
		want[models.JobCanceled]++
		e.job(d.ID, func(j *models.Job) { j.ScheduledAt, j.RunAt = since.Add(time.Minute), since.Add(-time.Minute) })
		got, err = e.admin.CountJobsByStatus(e.ctx, since)
		require.NoError(e.t, err)
		require.Equal(e.t, want, got)
	}},
}

var countJobsPerMinuteCases = []tcase{
	{"n buckets of whole UTC minutes, empty ones included; a minute's edges at the microsecond, at every priority", func(e *env) {
		d := e.definition()
		start := e.now().UTC().Truncate(time.Minute).Add(-10 * time.Minute)
		const n = 5
		end := start.Add(n * time.Minute)
		want := make([]chimedb.MinuteCount, n)
		for i := range want {
			want[i].Start = start.Add(time.Duration(i) * time.Minute)
		}
		type at struct {
			off    time.Duration
			status models.JobStatus
		}
		for i, a := range []at{
			{-time.Microsecond, models.JobFailed}, // before the first minute
			{0, models.JobFailed},
			{30 * time.Second, models.JobSucceeded},
			{time.Minute - time.Microsecond, models.JobStopped}, // last of minute 0
			{time.Minute, models.JobFailed},                     // first of minute 1
			{time.Minute + time.Second, models.JobPending},
			{3*time.Minute + 30*time.Second, models.JobCanceled},
			{n*time.Minute - time.Microsecond, models.JobFailed}, // last of the last minute
			{n * time.Minute, models.JobFailed},                  // after it
		} {
			t := start.Add(a.off)
			e.dueJob(d.ID, t, everyPriority[i%len(everyPriority)], a.status)
			if t.Before(start) || !t.Before(end) {
				continue
			}
			b := &want[t.Sub(start)/time.Minute]
			b.Fires++
			if a.status == models.JobFailed {
				b.Failures++
			}
		}
		require.Equal(e.t, []int64{3, 2, 0, 1, 1}, []int64{want[0].Fires, want[1].Fires, want[2].Fires, want[3].Fires, want[4].Fires})
		// A start in another zone is the same instant.
		for _, s := range []time.Time{start, start.In(time.FixedZone("UTC+5:30", 5*3600+30*60)), start.In(time.FixedZone("UTC-3", -3*3600))} {
			got, err := e.admin.CountJobsPerMinute(e.ctx, s, n)
			require.NoError(e.t, err)
			require.Len(e.t, got, n)
			for i := range want {
				sameInstant(e.t, want[i].Start, got[i].Start, "start of bucket ", i)
				require.Equal(e.t, [2]int64{want[i].Fires, want[i].Failures}, [2]int64{got[i].Fires, got[i].Failures}, "bucket %d from %s", i, s)
			}
		}
		got, err := e.admin.CountJobsPerMinute(e.ctx, start, 0)
		require.NoError(e.t, err)
		require.Empty(e.t, got)
		got, err = e.admin.CountJobsPerMinute(e.ctx, end.Add(time.Hour), 3)
		require.NoError(e.t, err)
		require.Len(e.t, got, 3, "empty minutes are buckets too")
		for _, b := range got {
			require.Zero(e.t, b.Fires)
		}
	}},
}

var countRunningByNodeCases = []tcase{
	{"counts the running jobs of each node; other statuses are not counted", func(e *env) {
		d := e.definition()
		got, err := e.admin.CountRunningByNode(e.ctx)
		require.NoError(e.t, err)
		require.Empty(e.t, got)
		e.running(d.ID, "n1", 1)
		e.running(d.ID, "n1", 1)
		e.running(d.ID, "n2", 1)
		e.queued(d.ID, "n3", 1)
		for _, st := range []models.JobStatus{models.JobPaused, models.JobSucceeded, models.JobFailed} {
			j := e.running(d.ID, "n1", 1)
			e.setJob(j.ID, jobState{status: st})
		}
		e.job(d.ID)
		got, err = e.admin.CountRunningByNode(e.ctx)
		require.NoError(e.t, err)
		require.Equal(e.t, map[string]int64{"n1": 2, "n2": 1}, got)
	}},
}

// scheduled inserts a job of schedule s fired at at.
func (e *env) scheduled(s *models.Schedule, at time.Time) *models.Job {
	e.t.Helper()
	return e.job(s.JobDefinitionID, runAt(at), func(j *models.Job) { j.ScheduleID = &s.ID })
}

var lastJobsCases = []tcase{
	{"the latest job of each schedule by scheduled_at, not by id; schedules without jobs are absent", func(e *env) {
		d := e.definition()
		a, b, quiet := e.schedule(d.ID), e.schedule(d.ID), e.schedule(d.ID)
		base := e.now().Add(-time.Hour)
		late := e.scheduled(a, base.Add(3*time.Minute))
		e.scheduled(a, base.Add(time.Minute))
		e.scheduled(a, base.Add(2*time.Minute))
		finished := base.Add(4 * time.Minute)
		e.setJob(late.ID, jobState{status: models.JobFailed, finished: &finished})
		bLast := e.scheduled(b, base.Add(5*time.Minute))
		e.scheduled(b, base)
		e.job(d.ID, runAt(base.Add(time.Hour))) // no schedule

		got, err := e.admin.LastJobs(e.ctx, []int64{a.ID, b.ID, quiet.ID, missingID, a.ID})
		require.NoError(e.t, err)
		require.Len(e.t, got, 2)
		ga := got[a.ID]
		require.Equal(e.t, late.ID, ga.ID)
		require.Equal(e.t, &a.ID, ga.ScheduleID)
		require.Equal(e.t, models.JobFailed, ga.Status)
		sameInstant(e.t, late.ScheduledAt, ga.ScheduledAt)
		require.NotNil(e.t, ga.FinishedAt)
		sameInstant(e.t, finished, *ga.FinishedAt)
		gb := got[b.ID]
		require.Equal(e.t, bLast.ID, gb.ID)
		require.Equal(e.t, models.JobPending, gb.Status)
		require.Nil(e.t, gb.FinishedAt)

		got, err = e.admin.LastJobs(e.ctx, nil)
		require.NoError(e.t, err)
		require.Empty(e.t, got)
	}},
	{"takes as many schedules as it is given", func(e *env) {
		d := e.definition()
		s := e.schedule(d.ID)
		j := e.scheduled(s, e.now())
		ids := []int64{s.ID}
		for i := range int64(1200) {
			ids = append(ids, missingID+i)
		}
		got, err := e.admin.LastJobs(e.ctx, ids)
		require.NoError(e.t, err)
		require.Len(e.t, got, 1)
		require.Equal(e.t, j.ID, got[s.ID].ID)
	}},
}

var scheduleJobsCases = []tcase{
	{"a schedule's jobs, newest scheduled_at first, up to limit; other jobs are not listed", func(e *env) {
		d := e.definition()
		s, other := e.schedule(d.ID), e.schedule(d.ID)
		base := e.now().Add(-time.Hour)
		var want []int64
		for _, m := range []int{2, 0, 4, 1, 3} { // ids out of fire order
			want = append(want, e.scheduled(s, base.Add(time.Duration(m)*time.Minute)).ID)
		}
		want = []int64{want[2], want[4], want[0], want[3], want[1]}
		e.scheduled(other, base.Add(time.Hour))
		e.job(d.ID, runAt(base.Add(time.Hour)))
		ids := func(limit int) []int64 {
			js, err := e.admin.ScheduleJobs(e.ctx, s.ID, limit)
			out, err := idsOf(js, err, func(j *models.Job) int64 { return j.ID })
			require.NoError(e.t, err)
			for i := range js {
				require.Equal(e.t, &s.ID, js[i].ScheduleID)
				require.Equal(e.t, d.ID, js[i].JobDefinitionID)
			}
			return out
		}
		require.Equal(e.t, want[:3], ids(3))
		require.Equal(e.t, want, ids(100))
		none, err := e.admin.ScheduleJobs(e.ctx, missingID, 10)
		require.NoError(e.t, err)
		require.Empty(e.t, none)
	}},
}

var definitionNamesCases = []tcase{
	{"maps the ids that exist to names", func(e *env) {
		e.checkNames(e.admin.DefinitionNames, func() (int64, string) { d := e.definition(); return d.ID, d.Name })
	}},
}

var scheduleNamesCases = []tcase{
	{"maps the ids that exist to names", func(e *env) {
		d := e.definition()
		e.checkNames(e.admin.ScheduleNames, func() (int64, string) { s := e.schedule(d.ID); return s.ID, s.Name })
	}},
}

// checkNames creates three rows with create and asks names for two of
// them, a missing id and a repeated one.
func (e *env) checkNames(names func(context.Context, []int64) (map[int64]string, error), create func() (int64, string)) {
	e.t.Helper()
	a, aName := create()
	b, bName := create()
	create()
	got, err := names(e.ctx, []int64{b, a, missingID, b})
	require.NoError(e.t, err)
	require.Equal(e.t, map[int64]string{a: aName, b: bName}, got)
	got, err = names(e.ctx, nil)
	require.NoError(e.t, err)
	require.Empty(e.t, got)
}

var definitionChoicesCases = []tcase{
	{"lists definitions by name with id, name and task type", func(e *env) {
		got, err := e.admin.DefinitionChoices(e.ctx)
		require.NoError(e.t, err)
		require.Empty(e.t, got)
		// Lower-case names: collations differ on case, and the contract
		// is only "by name".
		var want []models.JobDefinition
		for _, n := range []string{"mid", "zeta", "alpha", "beta"} {
			d := e.definition(func(d *models.JobDefinition) { d.Name, d.TaskType = n, "task-"+n })
			want = append(want, models.JobDefinition{ID: d.ID, Name: n, TaskType: d.TaskType})
		}
		want[0], want[1], want[2], want[3] = want[2], want[3], want[0], want[1]
		got, err = e.admin.DefinitionChoices(e.ctx)
		require.NoError(e.t, err)
		require.Len(e.t, got, len(want))
		for i := range want {
			require.Equal(e.t, [3]any{want[i].ID, want[i].Name, want[i].TaskType}, [3]any{got[i].ID, got[i].Name, got[i].TaskType}, i)
		}
	}},
	{"lists at most MaxDefinitionChoices, the first by name", func(e *env) {
		// One statement: a thousand CreateDefinition calls would be most
		// of the suite's time.
		n := chimedb.MaxDefinitionChoices + 1
		rows := make([]string, n)
		args := make([]any, 0, 2*n)
		for i := range n {
			rows[i] = "(?, ?)"
			args = append(args, fmt.Sprintf("def%05d", n-1-i), "sleep")
		}
		e.exec("INSERT INTO job_definitions (name, task_type) VALUES "+strings.Join(rows, ", "), args...)
		got, err := e.admin.DefinitionChoices(e.ctx)
		require.NoError(e.t, err)
		require.Len(e.t, got, chimedb.MaxDefinitionChoices)
		require.Equal(e.t, "def00000", got[0].Name)
		require.Equal(e.t, fmt.Sprintf("def%05d", chimedb.MaxDefinitionChoices-1), got[len(got)-1].Name)
	}},
}

// sessionAt is the clock of the revocation cases: RevokeSession takes its
// now from the caller.
var sessionAt = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

func (e *env) revoked(id string) bool {
	e.t.Helper()
	gone, err := e.Console.SessionRevoked(e.ctx, id)
	require.NoError(e.t, err)
	return gone
}

var revokeSessionCases = []tcase{
	{"revokes the session; twice is once", func(e *env) {
		require.False(e.t, e.revoked("aa"))
		require.NoError(e.t, e.Console.RevokeSession(e.ctx, "aa", sessionAt.Add(time.Hour), sessionAt))
		require.True(e.t, e.revoked("aa"))
		require.False(e.t, e.revoked("ab"), "only the session given")
		require.NoError(e.t, e.Console.RevokeSession(e.ctx, "aa", sessionAt.Add(time.Hour), sessionAt.Add(time.Minute)))
		require.True(e.t, e.revoked("aa"))
	}},
	{"drops the revocations whose cookies have expired by now, keeps the others", func(e *env) {
		require.NoError(e.t, e.Console.RevokeSession(e.ctx, "short", sessionAt.Add(time.Hour), sessionAt))
		require.NoError(e.t, e.Console.RevokeSession(e.ctx, "long", sessionAt.Add(3*time.Hour), sessionAt))
		// Until its expiry a revocation stays, whatever later logouts do.
		require.NoError(e.t, e.Console.RevokeSession(e.ctx, "other", sessionAt.Add(5*time.Hour), sessionAt.Add(time.Hour)))
		require.True(e.t, e.revoked("short"))
		require.NoError(e.t, e.Console.RevokeSession(e.ctx, "late", sessionAt.Add(5*time.Hour), sessionAt.Add(2*time.Hour)))
		require.False(e.t, e.revoked("short"), "expired an hour ago")
		require.True(e.t, e.revoked("long"))
		require.True(e.t, e.revoked("late"))
	}},
}

var sessionRevokedCases = []tcase{
	{"false for a session never revoked, also with a revocation of another", func(e *env) {
		require.False(e.t, e.revoked("x"))
		require.NoError(e.t, e.Console.RevokeSession(e.ctx, "y", sessionAt.Add(time.Hour), sessionAt))
		require.False(e.t, e.revoked("x"))
		require.False(e.t, e.revoked(""))
		require.True(e.t, e.revoked("y"))
	}},
}
