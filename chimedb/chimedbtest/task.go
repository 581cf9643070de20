package chimedbtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

func taskMethods() []method {
	return []method{
		{"TaskStore.ClaimJobs", claimJobsCases},
		{"TaskStore.WaitingJobs", waitingJobsCases},
		{"TaskStore.StartJobs", startJobsCases},
		{"TaskStore.CompleteJobs", completeJobsCases},
		{"TaskStore.ReleaseJobs", releaseJobsCases},
		{"TaskStore.CancelStopRequested", cancelStopRequestedCases},
		{"TaskStore.ControlRequests", controlRequestsCases},
		{"TaskStore.SetControlOutcome", setControlOutcomeCases},
		{"TaskStore.HeartbeatJobs", heartbeatJobsCases},
		{"TaskStore.InsertJobLogs", insertJobLogsCases},
		{"TaskStore.RecoverNode", recoverNodeCases},
	}
}

func (e *env) claim(p *chimedb.ClaimParams) *chimedb.ClaimResult {
	e.t.Helper()
	if p.Now.IsZero() {
		p.Now = e.now()
	}
	if p.NodeID == "" {
		p.NodeID = "n1"
	}
	res, err := e.Task.ClaimJobs(e.ctx, p)
	require.NoError(e.t, err)
	return res
}

// queued inserts a job of def queued on node with attempt attempts used.
func (e *env) queued(def int64, node string, attempt int) *models.Job {
	e.t.Helper()
	j := e.job(def)
	at := e.now()
	e.setJob(j.ID, jobState{status: models.JobQueued, node: node, attempt: attempt, queuedAt: &at})
	return e.get(j.ID)
}

func runAt(at time.Time) func(j *models.Job) {
	return func(j *models.Job) { j.ScheduledAt, j.RunAt = at, at }
}

func priority(p int) func(j *models.Job) { return func(j *models.Job) { j.Priority = p } }

var claimJobsCases = []tcase{
	{"a limit of 0 claims nothing", func(e *env) {
		d := e.definition()
		j := e.job(d.ID)
		res := e.claim(&chimedb.ClaimParams{Limit: 0})
		require.Empty(e.t, res.Jobs)
		require.Equal(e.t, models.JobPending, e.get(j.ID).Status)
	}},
	{"only due pending rows without a stop request are claimed, and become queued on the node", func(e *env) {
		d := e.definition()
		now := e.now()
		due := e.job(d.ID)
		e.exec("UPDATE jobs SET outcome = ? WHERE id = ?", string(models.OutcomeSnoozed), due.ID)
		future := e.job(d.ID, runAt(now.Add(time.Hour)))
		stop := e.job(d.ID)
		e.setJob(stop.ID, jobState{control: models.ControlStop})
		other := e.queued(d.ID, "n2", 0)
		done := e.job(d.ID)
		e.setJob(done.ID, jobState{status: models.JobSucceeded, node: "n2", attempt: 1, finished: &now})

		res := e.claim(&chimedb.ClaimParams{NodeID: "n1", Now: now, Limit: 10})
		require.Equal(e.t, []int64{due.ID}, claimedIDs(res.Jobs))
		require.Equal(e.t, 1, res.Selected)
		c := res.Jobs[0]
		require.Equal(e.t, models.JobQueued, c.Status)
		require.Equal(e.t, "n1", c.NodeID)
		require.False(e.t, c.Started)
		require.NoError(e.t, c.LoadErr)
		require.NotNil(e.t, c.Definition)
		require.Equal(e.t, d.ID, c.Definition.ID)
		require.Empty(e.t, c.ScheduleName, "an ad hoc job")
		stored := e.get(due.ID)
		require.Equal(e.t, models.JobQueued, stored.Status)
		require.Equal(e.t, "n1", stored.NodeID)
		require.Zero(e.t, stored.Attempt, "a claim uses no attempt")
		require.Equal(e.t, models.OutcomeNone, stored.Outcome, "the last run's outcome is cleared")
		sameInstant(e.t, now, *stored.QueuedAt)
		require.NotNil(e.t, res.Last)
		require.Equal(e.t, chimedb.ClaimCursor{ClaimKey: stored.ClaimKey, ID: due.ID}, *res.Last)
		for _, id := range []int64{future.ID, stop.ID} {
			require.Equal(e.t, models.JobPending, e.get(id).Status)
		}
		require.Equal(e.t, "n2", e.get(other.ID).NodeID)

		res = e.claim(&chimedb.ClaimParams{Limit: 10})
		require.Empty(e.t, res.Jobs)
		require.Zero(e.t, res.Selected)
		require.Nil(e.t, res.Last)
	}},
	{"higher priorities go first, each step worth PriorityStep of run_at, then id", func(e *env) {
		d := e.definition()
		now := e.now()
		base := now.Add(-time.Hour)
		step := models.PriorityStep
		// claim_key: run_at moved a step earlier per priority above the default.
		a := e.job(d.ID, runAt(base), priority(5))                    // base
		b := e.job(d.ID, runAt(base.Add(step*3/2)), priority(7))      // base - step/2
		c := e.job(d.ID, runAt(base.Add(-step/2)), priority(4))       // base + step/2
		dd := e.job(d.ID, runAt(base.Add(step/4)), priority(5))       // base + step/4
		tie := e.job(d.ID, runAt(base), priority(5))                  // base, after a by id
		low := e.job(d.ID, runAt(now.Add(-time.Second)), priority(1)) // due now, last
		notYet := e.job(d.ID, runAt(now.Add(time.Second)), priority(10))

		res := e.claim(&chimedb.ClaimParams{Now: now, Limit: 2})
		require.Equal(e.t, []int64{b.ID, a.ID}, claimedIDs(res.Jobs))
		res = e.claim(&chimedb.ClaimParams{Now: now, Limit: 10})
		require.Equal(e.t, []int64{tie.ID, dd.ID, c.ID, low.ID}, claimedIDs(res.Jobs))
		require.Equal(e.t, models.JobPending, e.get(notYet.ID).Status, "a high priority does not make a job due")
	}},
	{"claimed jobs carry their definition and schedule name; a missing definition is nil", func(e *env) {
		d, gone := e.definition(), e.definition()
		s := e.schedule(d.ID)
		now := e.now()
		withSchedule := e.job(d.ID, func(j *models.Job) { j.ScheduleID = &s.ID }, runAt(now.Add(-2*time.Minute)))
		orphan := e.job(gone.ID)
		e.exec("DELETE FROM job_definitions WHERE id = ?", gone.ID)
		res := e.claim(&chimedb.ClaimParams{Now: now, Limit: 10})
		require.Equal(e.t, []int64{withSchedule.ID, orphan.ID}, claimedIDs(res.Jobs))
		require.Equal(e.t, s.Name, res.Jobs[0].ScheduleName)
		require.Equal(e.t, d.ID, res.Jobs[0].Definition.ID)
		require.Nil(e.t, res.Jobs[1].Definition)
		require.NoError(e.t, res.Jobs[1].LoadErr)
	}},
	{"jobs of StartKinds go straight to running in the claim", func(e *env) {
		sleep := e.definition()
		shell := e.definition(func(d *models.JobDefinition) { d.TaskType = "shell" })
		now := e.now()
		fast := e.job(sleep.ID, runAt(now.Add(-2*time.Minute)))
		slow := e.job(shell.ID)
		e.setJob(fast.ID, jobState{attempt: 1}) // a retry: the next attempt is 2
		before := time.Now()
		res := e.claim(&chimedb.ClaimParams{Now: now, Limit: 10, StartKinds: []string{"sleep"}})
		after := time.Now()
		require.Equal(e.t, []int64{fast.ID, slow.ID}, claimedIDs(res.Jobs))
		f, s := res.Jobs[0], res.Jobs[1]
		require.True(e.t, f.Started)
		require.Equal(e.t, models.JobRunning, f.Status)
		require.Equal(e.t, 2, f.Attempt)
		require.NotNil(e.t, f.Definition)
		require.False(e.t, s.Started)
		require.Equal(e.t, models.JobQueued, s.Status)
		require.NotNil(e.t, s.Definition, "read inside the claim")
		stored := e.get(fast.ID)
		require.Equal(e.t, models.JobRunning, stored.Status)
		require.Equal(e.t, 2, stored.Attempt)
		require.Equal(e.t, "n1", stored.NodeID)
		sameInstant(e.t, *f.StartedAt, *stored.StartedAt)
		sameInstant(e.t, *f.StartedAt, *stored.HeartbeatAt)
		// started_at is the claim's now plus the time the claim took.
		between(e.t, now, *stored.StartedAt, now.Add(after.Sub(before)), clockStep, "started_at")
		require.Equal(e.t, models.JobQueued, e.get(slow.ID).Status)
	}},
	{"a forbid schedule gets one active job; its other due rows wait and it is reported blocked", func(e *env) {
		d := e.definition()
		forbid := func(s *models.Schedule) { s.Concurrency = models.ConcurrencyForbid }
		busy, two, allow := e.schedule(d.ID, forbid), e.schedule(d.ID, forbid), e.schedule(d.ID)
		now := e.now()
		in := func(s *models.Schedule, age time.Duration) func(j *models.Job) {
			return func(j *models.Job) { j.ScheduleID = &s.ID; j.ScheduledAt, j.RunAt = now.Add(-age), now.Add(-age) }
		}
		active := e.job(d.ID, in(busy, time.Hour))
		e.setJob(active.ID, jobState{status: models.JobRunning, node: "n2", attempt: 1})
		waiting := e.job(d.ID, in(busy, 5*time.Minute)) // due first, but its schedule is busy
		first := e.job(d.ID, in(two, 4*time.Minute))
		second := e.job(d.ID, in(two, 3*time.Minute))
		a1 := e.job(d.ID, in(allow, 2*time.Minute))
		a2 := e.job(d.ID, in(allow, time.Minute))

		res := e.claim(&chimedb.ClaimParams{Now: now, Limit: 10})
		require.Equal(e.t, []int64{first.ID, a1.ID, a2.ID}, claimedIDs(res.Jobs))
		require.Contains(e.t, res.Blocked, busy.ID)
		require.Contains(e.t, res.Blocked, two.ID)
		require.NotContains(e.t, res.Blocked, allow.ID)
		for _, id := range []int64{waiting.ID, second.ID} {
			require.Equal(e.t, models.JobPending, e.get(id).Status)
		}
		// A busy schedule's rows do not take the places of eligible ones.
		res = e.claim(&chimedb.ClaimParams{Now: now, Limit: 1})
		require.Empty(e.t, res.Jobs)
	}},
	{"with a floor the claim takes rows after it first, and those up to it when they run short", func(e *env) {
		d := e.definition()
		now := e.now()
		var js []*models.Job
		for i := range 5 {
			js = append(js, e.job(d.ID, runAt(now.Add(time.Duration(i-10)*time.Second))))
		}
		cursor := func(j *models.Job) *chimedb.ClaimCursor {
			s := e.get(j.ID)
			return &chimedb.ClaimCursor{ClaimKey: s.ClaimKey, ID: s.ID}
		}
		res := e.claim(&chimedb.ClaimParams{Now: now, Limit: 2, After: cursor(js[1])})
		require.Equal(e.t, []int64{js[2].ID, js[3].ID}, claimedIDs(res.Jobs))
		require.Equal(e.t, js[3].ID, res.Last.ID)
		res = e.claim(&chimedb.ClaimParams{Now: now, Limit: 3, After: cursor(js[3])})
		require.ElementsMatch(e.t, []int64{js[0].ID, js[1].ID, js[4].ID}, claimedIDs(res.Jobs))
		require.Equal(e.t, js[1].ID, res.Last.ID, "the scan below the floor ended last")
	}},
	{"concurrent claimers never take one job twice", func(e *env) {
		d := e.definition()
		now := e.now()
		const n = 40
		for i := range n {
			e.job(d.ID, runAt(now.Add(-time.Duration(i)*time.Millisecond)))
		}
		var mu sync.Mutex
		owner := map[int64]string{}
		var dups []string
		errs := make([]error, 4)
		var wg sync.WaitGroup
		for w := range 4 {
			node := fmt.Sprint("n", w)
			wg.Go(func() {
				for {
					res, err := e.Task.ClaimJobs(e.ctx, &chimedb.ClaimParams{NodeID: node, Now: now, Limit: 3})
					if err != nil {
						errs[w] = err
						return
					}
					if len(res.Jobs) == 0 {
						return
					}
					mu.Lock()
					for _, j := range res.Jobs {
						if prev, dup := owner[j.ID]; dup {
							dups = append(dups, fmt.Sprintf("job %d by %s and %s", j.ID, prev, node))
						}
						owner[j.ID] = node
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		require.NoError(e.t, errors.Join(errs...))
		require.Empty(e.t, dups)
		require.Len(e.t, owner, n)
		for id, node := range owner {
			require.Equal(e.t, node, e.get(id).NodeID)
		}
	}},
	{"a due row another claim holds is skipped, not waited for", func(e *env) {
		if e.LockRow == nil {
			e.t.Skip("single writer: no row locks")
		}
		d := e.definition()
		now := e.now()
		held := e.job(d.ID, runAt(now.Add(-2*time.Minute)))
		free := e.job(d.ID)
		release := e.LockRow(e.t, "jobs", held.ID)
		res := e.claim(&chimedb.ClaimParams{Now: now, Limit: 10})
		release()
		require.Equal(e.t, []int64{free.ID}, claimedIDs(res.Jobs))
		require.Equal(e.t, models.JobPending, e.get(held.ID).Status)
		res = e.claim(&chimedb.ClaimParams{Now: now, Limit: 10})
		require.Equal(e.t, []int64{held.ID}, claimedIDs(res.Jobs))
	}},
	{"a forbid schedule whose row another transaction holds is passed over and reported held", func(e *env) {
		if e.LockRow == nil {
			e.t.Skip("single writer: no row locks")
		}
		d := e.definition()
		s := e.schedule(d.ID, func(s *models.Schedule) { s.Concurrency = models.ConcurrencyForbid })
		j := e.job(d.ID, func(j *models.Job) { j.ScheduleID = &s.ID })
		free := e.job(d.ID)
		release := e.LockRow(e.t, "schedules", s.ID)
		res := e.claim(&chimedb.ClaimParams{Limit: 10})
		release()
		require.Equal(e.t, []int64{free.ID}, claimedIDs(res.Jobs))
		require.Equal(e.t, []int64{s.ID}, res.Held)
		require.Equal(e.t, models.JobPending, e.get(j.ID).Status)
		res = e.claim(&chimedb.ClaimParams{Limit: 10})
		require.Equal(e.t, []int64{j.ID}, claimedIDs(res.Jobs))
	}},
}

var waitingJobsCases = []tcase{
	{"lists the due pending jobs of the schedules in claim order, up to the limit", func(e *env) {
		d := e.definition()
		a, b, other := e.schedule(d.ID), e.schedule(d.ID), e.schedule(d.ID)
		now := e.now()
		in := func(s *models.Schedule, off time.Duration) *models.Job {
			return e.job(d.ID, func(j *models.Job) { j.ScheduleID = &s.ID; j.ScheduledAt, j.RunAt = now.Add(off), now.Add(off) })
		}
		a2 := in(a, -2*time.Second)
		b1 := in(b, -3*time.Second)
		a1 := in(a, -time.Second)
		in(a, time.Hour)           // not due
		in(other, -4*time.Second)  // not asked for
		q := in(a, -5*time.Second) // queued: not waiting
		e.setJob(q.ID, jobState{status: models.JobQueued, node: "n"})
		got, err := e.Task.WaitingJobs(e.ctx, &chimedb.WaitingJobsParams{ScheduleIDs: []int64{a.ID, b.ID}, Now: now, Limit: 10})
		require.NoError(e.t, err)
		require.Equal(e.t, []chimedb.WaitingJob{{ID: b1.ID, ScheduleID: b.ID}, {ID: a2.ID, ScheduleID: a.ID}, {ID: a1.ID, ScheduleID: a.ID}}, got)
		got, err = e.Task.WaitingJobs(e.ctx, &chimedb.WaitingJobsParams{ScheduleIDs: []int64{a.ID, b.ID}, Now: now, Limit: 1})
		require.NoError(e.t, err)
		require.Equal(e.t, []chimedb.WaitingJob{{ID: b1.ID, ScheduleID: b.ID}}, got)
	}},
	{"no schedules is an empty answer", func(e *env) {
		got, err := e.Task.WaitingJobs(e.ctx, &chimedb.WaitingJobsParams{Now: e.now(), Limit: 10})
		require.NoError(e.t, err)
		require.Empty(e.t, got)
	}},
}

var startJobsCases = []tcase{
	{"moves queued jobs of the node with their claimed attempt to running", func(e *env) {
		d := e.definition()
		fresh, retry := e.queued(d.ID, "n1", 0), e.queued(d.ID, "n1", 2)
		now := e.now()
		started, err := e.Task.StartJobs(e.ctx, &chimedb.StartJobsParams{NodeID: "n1", Now: now,
			Jobs: []chimedb.StartJob{{ID: fresh.ID, Attempt: 0}, {ID: retry.ID, Attempt: 2}}})
		require.NoError(e.t, err)
		require.Equal(e.t, map[int64]int{fresh.ID: 1, retry.ID: 3}, started)
		j := e.get(retry.ID)
		require.Equal(e.t, models.JobRunning, j.Status)
		require.Equal(e.t, 3, j.Attempt)
		sameInstant(e.t, now, *j.StartedAt)
		sameInstant(e.t, now, *j.HeartbeatAt)
	}},
	{"leaves out jobs another node, a cancel, a stop request or a newer claim changed", func(e *env) {
		d := e.definition()
		mine := e.queued(d.ID, "n1", 0)
		other := e.queued(d.ID, "n2", 0)
		canceled := e.queued(d.ID, "n1", 0)
		e.setJob(canceled.ID, jobState{status: models.JobCanceled})
		stop := e.queued(d.ID, "n1", 0)
		e.setJob(stop.ID, jobState{control: models.ControlStop})
		reclaimed := e.queued(d.ID, "n1", 1)
		started, err := e.Task.StartJobs(e.ctx, &chimedb.StartJobsParams{NodeID: "n1", Now: e.now(), Jobs: []chimedb.StartJob{
			{ID: mine.ID}, {ID: mine.ID}, {ID: other.ID}, {ID: canceled.ID}, {ID: stop.ID}, {ID: reclaimed.ID, Attempt: 0}, {ID: missingID}}})
		require.NoError(e.t, err)
		require.Equal(e.t, map[int64]int{mine.ID: 1}, started, "a duplicate starts once")
		require.Equal(e.t, 1, e.get(mine.ID).Attempt)
		for _, id := range []int64{other.ID, stop.ID, reclaimed.ID} {
			require.Equal(e.t, models.JobQueued, e.get(id).Status, "job %d", id)
		}
		require.Equal(e.t, models.JobCanceled, e.get(canceled.ID).Status)
	}},
	{"no jobs is an empty answer", func(e *env) {
		started, err := e.Task.StartJobs(e.ctx, &chimedb.StartJobsParams{NodeID: "n1", Now: e.now()})
		require.NoError(e.t, err)
		require.Empty(e.t, started)
	}},
}

func (e *env) complete(node string, outs ...chimedb.JobOutcome) []int64 {
	e.t.Helper()
	applied, err := e.Task.CompleteJobs(e.ctx, &chimedb.CompleteJobsParams{NodeID: node, Outcomes: outs})
	require.NoError(e.t, err)
	return applied
}

var completeJobsCases = []tcase{
	{"each kind of outcome is written as it says", func(e *env) {
		d := e.definition(func(d *models.JobDefinition) { d.MaxAttempts = 3 })
		now := e.now()
		retryAt := now.Add(time.Minute)
		type want struct {
			status   models.JobStatus
			outcome  models.JobOutcome
			attempt  int
			snoozes  int
			finished bool
			runAt    *time.Time
		}
		cases := []struct {
			name string
			out  chimedb.JobOutcome
			want want
		}{
			{"succeeded", chimedb.JobOutcome{Status: models.JobSucceeded, FinishedAt: now, Result: ptr("ok")},
				want{status: models.JobSucceeded, attempt: 2, finished: true}},
			{"failed", chimedb.JobOutcome{Status: models.JobFailed, FinishedAt: now, Error: ptr("boom")},
				want{status: models.JobFailed, attempt: 2, finished: true}},
			{"retry", chimedb.JobOutcome{Status: models.JobPending, RunAt: retryAt, FinishedAt: now, Error: ptr("again")},
				want{status: models.JobPending, attempt: 2, runAt: &retryAt}},
			{"snoozed", chimedb.JobOutcome{Status: models.JobPending, Outcome: models.OutcomeSnoozed, RunAt: retryAt},
				want{status: models.JobPending, outcome: models.OutcomeSnoozed, attempt: 1, snoozes: 1, runAt: &retryAt}},
			{"skip retry", chimedb.JobOutcome{Status: models.JobFailed, Outcome: models.OutcomeSkipRetry, FinishedAt: now, Error: ptr("no")},
				want{status: models.JobFailed, outcome: models.OutcomeSkipRetry, attempt: 2, finished: true}},
			{"canceled by the task", chimedb.JobOutcome{Status: models.JobCanceled, Outcome: models.OutcomeCanceled, FinishedAt: now},
				want{status: models.JobCanceled, outcome: models.OutcomeCanceled, attempt: 2, finished: true}},
			{"stopped", chimedb.JobOutcome{Status: models.JobStopped, FinishedAt: now},
				want{status: models.JobStopped, attempt: 2, finished: true}},
		}
		var outs []chimedb.JobOutcome
		var jobs []*models.Job
		for _, c := range cases {
			j := e.running(d.ID, "n1", 2)
			e.setJob(j.ID, jobState{control: models.ControlPause})
			c.out.ID = j.ID
			outs = append(outs, c.out)
			jobs = append(jobs, j)
		}
		require.ElementsMatch(e.t, jobIDsOf(jobs), e.complete("n1", outs...))
		for i, c := range cases {
			got := e.get(jobs[i].ID)
			require.Equal(e.t, c.want.status, got.Status, c.name)
			require.Equal(e.t, c.want.outcome, got.Outcome, c.name)
			require.Equal(e.t, c.want.attempt, got.Attempt, c.name)
			require.Equal(e.t, c.want.snoozes, got.Snoozes, c.name)
			require.Equal(e.t, models.ControlNone, got.Control, "%s: control is cleared", c.name)
			require.Equal(e.t, c.out.Result, got.Result, c.name)
			require.Equal(e.t, c.out.Error, got.Error, c.name)
			if c.want.finished {
				require.NotNil(e.t, got.FinishedAt, c.name)
				sameInstant(e.t, now, *got.FinishedAt, c.name)
				require.Equal(e.t, "n1", got.NodeID, c.name)
				sameInstant(e.t, jobs[i].RunAt, got.RunAt, c.name+": a final state keeps run_at")
			} else {
				require.Nil(e.t, got.FinishedAt, c.name)
				require.Empty(e.t, got.NodeID, "%s: a retry leaves the node", c.name)
				sameInstant(e.t, *c.want.runAt, got.RunAt, c.name)
			}
		}
	}},
	{"an outcome applies only to a job still active on the node", func(e *env) {
		d := e.definition()
		now := e.now()
		running := e.running(d.ID, "n1", 1)
		paused := e.running(d.ID, "n1", 1)
		e.setJob(paused.ID, jobState{status: models.JobPaused})
		queued := e.queued(d.ID, "n1", 0) // failed before it started
		canceled := e.running(d.ID, "n1", 1)
		e.setJob(canceled.ID, jobState{status: models.JobCanceled, finished: &now})
		elsewhere := e.running(d.ID, "n2", 1)
		pending := e.job(d.ID)
		out := func(id int64) chimedb.JobOutcome {
			return chimedb.JobOutcome{ID: id, Status: models.JobFailed, FinishedAt: now, Error: ptr("x")}
		}
		applied := e.complete("n1", out(running.ID), out(paused.ID), out(queued.ID), out(canceled.ID), out(elsewhere.ID),
			out(pending.ID), out(missingID))
		require.ElementsMatch(e.t, []int64{running.ID, paused.ID, queued.ID}, applied)
		require.Equal(e.t, models.JobCanceled, e.get(canceled.ID).Status)
		require.Equal(e.t, models.JobRunning, e.get(elsewhere.ID).Status)
		require.Equal(e.t, models.JobPending, e.get(pending.ID).Status)
		for _, id := range applied {
			require.Equal(e.t, models.JobFailed, e.get(id).Status)
		}
	}},
	{"of two outcomes for one job the first is written", func(e *env) {
		d := e.definition()
		now := e.now()
		j := e.running(d.ID, "n1", 1)
		applied := e.complete("n1", chimedb.JobOutcome{ID: j.ID, Status: models.JobSucceeded, FinishedAt: now},
			chimedb.JobOutcome{ID: j.ID, Status: models.JobFailed, FinishedAt: now})
		require.Equal(e.t, []int64{j.ID}, applied)
		require.Equal(e.t, models.JobSucceeded, e.get(j.ID).Status)
	}},
	{"a final outcome records its notice in the batch; a retry records none", func(e *env) {
		d := e.definition(func(d *models.JobDefinition) {
			d.MaxAttempts, d.NotifyOn, d.NotifyEmails = 2, models.NotifyAlways, "ops@example.com"
		})
		now := e.now()
		final, retry, guarded := e.running(d.ID, "n1", 2), e.running(d.ID, "n1", 1), e.running(d.ID, "n2", 1)
		notice := func(attempt int) *chimedb.OutcomeNotice {
			return &chimedb.OutcomeNotice{Attempt: attempt, Recipients: "ops@example.com",
				Attachments: []models.NotificationAttachment{{Name: "a.txt", ContentType: "text/plain", Data: []byte("hi")}}}
		}
		e.complete("n1",
			chimedb.JobOutcome{ID: final.ID, Status: models.JobFailed, FinishedAt: now, Error: ptr("x"), Notice: notice(2)},
			chimedb.JobOutcome{ID: retry.ID, Status: models.JobPending, RunAt: now, Error: ptr("x"), Notice: notice(1)},
			chimedb.JobOutcome{ID: guarded.ID, Status: models.JobFailed, FinishedAt: now, Notice: notice(1)})
		ns := e.notices(final.ID)
		require.Len(e.t, ns, 1)
		require.Equal(e.t, models.JobFailed, ns[0].JobStatus)
		require.Equal(e.t, 2, ns[0].Attempt)
		require.Equal(e.t, "ops@example.com", ns[0].Recipients)
		require.Equal(e.t, models.NotificationPending, ns[0].Status)
		require.Empty(e.t, e.notices(retry.ID))
		require.Empty(e.t, e.notices(guarded.ID), "no notice for an outcome not written")
	}},
	{"no outcomes is a no-op", func(e *env) {
		applied, err := e.Task.CompleteJobs(e.ctx, &chimedb.CompleteJobsParams{NodeID: "n1"})
		require.NoError(e.t, err)
		require.Empty(e.t, applied)
	}},
}

func jobIDsOf(jobs []*models.Job) []int64 {
	ids, _ := idsOf(jobs, nil, func(j **models.Job) int64 { return (*j).ID })
	return ids
}

// hasLog fails unless job id has a log line containing text.
func (e *env) hasLog(id int64, text string) {
	e.t.Helper()
	for _, l := range e.logs(id) {
		if containsFold(l.Message, text) {
			return
		}
	}
	require.Failf(e.t, "log line missing", "job %d has no log line with %q: %v", id, text, e.logs(id))
}

var releaseJobsCases = []tcase{
	{"sends the node's queued jobs back to pending, logging the reason", func(e *env) {
		d := e.definition()
		a, b := e.queued(d.ID, "n1", 1), e.queued(d.ID, "n1", 0)
		other := e.queued(d.ID, "n2", 0)
		running := e.running(d.ID, "n1", 1)
		ids, err := e.Task.ReleaseJobs(e.ctx, &chimedb.ReleaseJobsParams{NodeID: "n1", Reason: "pool closed", Now: e.now()})
		require.NoError(e.t, err)
		require.ElementsMatch(e.t, []int64{a.ID, b.ID}, ids)
		j := e.get(a.ID)
		require.Equal(e.t, models.JobPending, j.Status)
		require.Empty(e.t, j.NodeID)
		require.Nil(e.t, j.QueuedAt)
		require.Equal(e.t, 1, j.Attempt, "no attempt used")
		e.hasLog(a.ID, "pool closed")
		require.Equal(e.t, models.JobQueued, e.get(other.ID).Status)
		require.Equal(e.t, models.JobRunning, e.get(running.ID).Status)
	}},
	{"IDs limits the release; an empty list releases nothing", func(e *env) {
		d := e.definition()
		a, b := e.queued(d.ID, "n1", 0), e.queued(d.ID, "n1", 0)
		ids, err := e.Task.ReleaseJobs(e.ctx, &chimedb.ReleaseJobsParams{NodeID: "n1", IDs: []int64{}, Reason: "r", Now: e.now()})
		require.NoError(e.t, err)
		require.Empty(e.t, ids)
		ids, err = e.Task.ReleaseJobs(e.ctx, &chimedb.ReleaseJobsParams{NodeID: "n1", IDs: []int64{b.ID}, Reason: "r", Now: e.now()})
		require.NoError(e.t, err)
		require.Equal(e.t, []int64{b.ID}, ids)
		require.Equal(e.t, models.JobQueued, e.get(a.ID).Status)
	}},
	{"Started gives back the attempt of jobs a claim started that never began", func(e *env) {
		d := e.definition()
		j := e.job(d.ID)
		later := e.job(d.ID)
		now := e.now()
		res := e.claim(&chimedb.ClaimParams{Now: now, Limit: 10, StartKinds: []string{"sleep"}})
		require.Len(e.t, res.Jobs, 2)
		startedAt := *res.Jobs[0].StartedAt
		// The second job's start is moved on, as if it had begun since.
		moved := startedAt.Add(time.Second)
		e.setJob(later.ID, jobState{heartbeat: &moved})
		ids, err := e.Task.ReleaseJobs(e.ctx, &chimedb.ReleaseJobsParams{NodeID: "n1", IDs: []int64{j.ID, later.ID}, Started: true,
			StartedAt: startedAt, Reason: "no worker", Now: now})
		require.NoError(e.t, err)
		require.Equal(e.t, []int64{j.ID}, ids)
		got := e.get(j.ID)
		require.Equal(e.t, models.JobPending, got.Status)
		require.Zero(e.t, got.Attempt)
		require.Nil(e.t, got.StartedAt)
		require.Nil(e.t, got.HeartbeatAt)
		require.Empty(e.t, got.NodeID)
		require.Equal(e.t, models.JobRunning, e.get(later.ID).Status)
		ids, err = e.Task.ReleaseJobs(e.ctx, &chimedb.ReleaseJobsParams{NodeID: "n1", Started: true, StartedAt: moved, Now: now})
		require.NoError(e.t, err)
		require.Empty(e.t, ids, "Started without IDs releases nothing")
	}},
}

var cancelStopRequestedCases = []tcase{
	{"cancels pending and queued jobs asked to stop, with a log line and a notice", func(e *env) {
		d := e.definition(func(d *models.JobDefinition) { d.NotifyOn, d.NotifyEmails = models.NotifyFailure, "ops@example.com" })
		pending, queued := e.job(d.ID), e.queued(d.ID, "n1", 0)
		running := e.running(d.ID, "n1", 1)
		untouched := e.job(d.ID)
		for _, id := range []int64{pending.ID, queued.ID, running.ID} {
			e.setJob(id, jobState{control: models.ControlStop})
		}
		before := e.now()
		ids, err := e.Task.CancelStopRequested(e.ctx, before)
		require.NoError(e.t, err)
		require.ElementsMatch(e.t, []int64{pending.ID, queued.ID}, ids)
		for _, id := range ids {
			j := e.get(id)
			require.Equal(e.t, models.JobCanceled, j.Status)
			require.Equal(e.t, models.ControlNone, j.Control)
			sameInstant(e.t, before, *j.FinishedAt)
			e.hasLog(id, "cancel")
			ns := e.notices(id)
			require.Len(e.t, ns, 1)
			require.Equal(e.t, models.JobCanceled, ns[0].JobStatus)
		}
		require.Equal(e.t, models.JobRunning, e.get(running.ID).Status, "a running job is its node's to stop")
		require.Equal(e.t, models.JobPending, e.get(untouched.ID).Status)
		ids, err = e.Task.CancelStopRequested(e.ctx, e.now())
		require.NoError(e.t, err)
		require.Empty(e.t, ids)
	}},
}

var controlRequestsCases = []tcase{
	{"lists the node's running and paused jobs whose control asks for something", func(e *env) {
		d := e.definition()
		pause, stop := e.running(d.ID, "n1", 1), e.running(d.ID, "n1", 1)
		resume := e.running(d.ID, "n1", 1)
		e.setJob(pause.ID, jobState{control: models.ControlPause})
		e.setJob(stop.ID, jobState{control: models.ControlStop})
		e.setJob(resume.ID, jobState{status: models.JobPaused, control: models.ControlResume})
		e.running(d.ID, "n1", 1) // nothing asked
		other := e.running(d.ID, "n2", 1)
		e.setJob(other.ID, jobState{control: models.ControlStop})
		queued := e.queued(d.ID, "n1", 0)
		e.setJob(queued.ID, jobState{control: models.ControlStop})
		got, err := e.Task.ControlRequests(e.ctx, "n1")
		require.NoError(e.t, err)
		require.ElementsMatch(e.t, []chimedb.ControlRequest{
			{ID: pause.ID, Status: models.JobRunning, Control: models.ControlPause},
			{ID: stop.ID, Status: models.JobRunning, Control: models.ControlStop},
			{ID: resume.ID, Status: models.JobPaused, Control: models.ControlResume},
		}, got)
		got, err = e.Task.ControlRequests(e.ctx, "nobody")
		require.NoError(e.t, err)
		require.Empty(e.t, got)
	}},
}

var setControlOutcomeCases = []tcase{
	{"clears control and moves the job, while it is running or paused on the node", func(e *env) {
		d := e.definition()
		cases := []struct {
			name       string
			status     models.JobStatus
			node       string
			to         models.JobStatus
			changed    bool
			wantStatus models.JobStatus
		}{
			{"pause", models.JobRunning, "n1", models.JobPaused, true, models.JobPaused},
			{"resume", models.JobPaused, "n1", models.JobRunning, true, models.JobRunning},
			{"refusal leaves status", models.JobRunning, "n1", "", true, models.JobRunning},
			{"another node's", models.JobRunning, "n2", models.JobPaused, false, models.JobRunning},
			{"finished", models.JobSucceeded, "n1", models.JobPaused, false, models.JobSucceeded},
			{"queued", models.JobQueued, "n1", models.JobPaused, false, models.JobQueued},
		}
		for _, c := range cases {
			j := e.job(d.ID)
			e.setJob(j.ID, jobState{status: c.status, node: c.node, attempt: 1, control: models.ControlPause})
			changed, err := e.Task.SetControlOutcome(e.ctx, &chimedb.ControlOutcomeParams{ID: j.ID, NodeID: "n1", To: c.to})
			require.NoError(e.t, err, c.name)
			require.Equal(e.t, c.changed, changed, c.name)
			got := e.get(j.ID)
			require.Equal(e.t, c.wantStatus, got.Status, c.name)
			if c.changed {
				require.Equal(e.t, models.ControlNone, got.Control, c.name)
			} else {
				require.Equal(e.t, models.ControlPause, got.Control, c.name)
			}
		}
		changed, err := e.Task.SetControlOutcome(e.ctx, &chimedb.ControlOutcomeParams{ID: missingID, NodeID: "n1"})
		require.NoError(e.t, err)
		require.False(e.t, changed)
	}},
}

var heartbeatJobsCases = []tcase{
	{"beats the node's running and paused jobs only", func(e *env) {
		d := e.definition()
		running, paused := e.running(d.ID, "n1", 1), e.running(d.ID, "n1", 1)
		e.setJob(paused.ID, jobState{status: models.JobPaused})
		queued := e.queued(d.ID, "n1", 0)
		other := e.running(d.ID, "n2", 1)
		now := e.now().Add(time.Minute)
		n, err := e.Task.HeartbeatJobs(e.ctx, "n1", now)
		require.NoError(e.t, err)
		require.EqualValues(e.t, 2, n)
		for _, id := range []int64{running.ID, paused.ID} {
			sameInstant(e.t, now, *e.get(id).HeartbeatAt)
		}
		require.Nil(e.t, e.get(queued.ID).HeartbeatAt)
		require.True(e.t, e.get(other.ID).HeartbeatAt.Before(now))
	}},
}

var insertJobLogsCases = []tcase{
	{"writes lines in order with their level and time; a zero time is now and an empty level info", func(e *env) {
		d := e.definition()
		j := e.job(d.ID)
		at := e.now().Add(-time.Minute)
		before := time.Now()
		require.NoError(e.t, e.Task.InsertJobLogs(e.ctx, []models.JobLog{
			{JobID: j.ID, Level: "warning", Message: "first", CreatedAt: at},
			{JobID: j.ID, Message: "second"},
		}))
		after := time.Now()
		var lines []models.JobLog
		for _, l := range e.logs(j.ID) {
			if l.Message == "first" || l.Message == "second" {
				lines = append(lines, l)
			}
		}
		require.Len(e.t, lines, 2)
		require.Equal(e.t, "warning", lines[0].Level)
		sameInstant(e.t, at, lines[0].CreatedAt)
		require.Equal(e.t, "info", lines[1].Level)
		between(e.t, before, lines[1].CreatedAt, after, clockStep, "a zero created_at")
		require.Less(e.t, lines[0].ID, lines[1].ID)
	}},
	{"a batch larger than one statement is written whole", func(e *env) {
		d := e.definition()
		a, b := e.job(d.ID), e.job(d.ID)
		var lines []models.JobLog
		for i := range 1201 {
			lines = append(lines, models.JobLog{JobID: []int64{a.ID, b.ID}[i%2], Message: fmt.Sprint("line ", i)})
		}
		require.NoError(e.t, e.Task.InsertJobLogs(e.ctx, lines))
		got, err := e.admin.ListJobLogs(e.ctx, a.ID, 0, 2000)
		require.NoError(e.t, err)
		var msgs []string
		for _, l := range got {
			msgs = append(msgs, l.Message)
		}
		require.Contains(e.t, msgs, "line 0")
		require.Contains(e.t, msgs, "line 1200")
		require.Len(e.t, msgs, 601+1, "601 lines and the insert's own")
	}},
	{"no lines is a no-op", func(e *env) {
		require.NoError(e.t, e.Task.InsertJobLogs(e.ctx, nil))
	}},
}

// recoverCase is one job left on a node that recovery sorts.
type recoverCase struct {
	name     string
	status   models.JobStatus
	control  models.JobControl
	attempt  int
	max      int
	recovery bool
	bucket   func(r *chimedb.RecoverNodeResult) []int64
	want     models.JobStatus
	attempts int // attempt afterwards
}

var recoverCases = []recoverCase{
	{"queued is released", models.JobQueued, "", 1, 3, false,
		func(r *chimedb.RecoverNodeResult) []int64 { return r.Released }, models.JobPending, 1},
	{"running with requests_recovery gets its attempt back", models.JobRunning, "", 2, 3, true,
		func(r *chimedb.RecoverNodeResult) []int64 { return r.Recovered }, models.JobPending, 1},
	{"paused without recovery is retried", models.JobPaused, "", 1, 3, false,
		func(r *chimedb.RecoverNodeResult) []int64 { return r.Retried }, models.JobPending, 1},
	{"running without attempts left fails", models.JobRunning, "", 3, 3, false,
		func(r *chimedb.RecoverNodeResult) []int64 { return r.Failed }, models.JobFailed, 3},
	{"asked to stop is stopped", models.JobRunning, models.ControlStop, 1, 3, true,
		func(r *chimedb.RecoverNodeResult) []int64 { return r.Stopped }, models.JobStopped, 1},
}

// leftOn inserts a job on node for each of cases; set writes the rest of
// each job's state.
func (e *env) leftOn(node string, cases []recoverCase, set func(id int64)) []*models.Job {
	e.t.Helper()
	var out []*models.Job
	for _, c := range cases {
		d := e.definition(func(d *models.JobDefinition) {
			d.MaxAttempts, d.RequestsRecovery = c.max, c.recovery
			d.NotifyOn, d.NotifyEmails = models.NotifyFailure, "ops@example.com"
		})
		j := e.job(d.ID)
		e.setJob(j.ID, jobState{status: c.status, node: node, attempt: c.attempt, control: c.control})
		if set != nil {
			set(j.ID)
		}
		out = append(out, e.get(j.ID))
	}
	return out
}

// checkRecovered checks that res sorted the jobs leftOn wrote as cases
// says, and wrote each job's new state and log line.
func (e *env) checkRecovered(res *chimedb.RecoverNodeResult, cases []recoverCase, jobs []*models.Job) {
	e.t.Helper()
	for i, c := range cases {
		id := jobs[i].ID
		require.Equal(e.t, []int64{id}, c.bucket(res), c.name)
		j := e.get(id)
		require.Equal(e.t, c.want, j.Status, c.name)
		require.Equal(e.t, c.attempts, j.Attempt, c.name)
		require.Equal(e.t, models.ControlNone, j.Control, c.name)
		if c.want == models.JobPending {
			require.Empty(e.t, j.NodeID, c.name)
		} else {
			require.NotNil(e.t, j.FinishedAt, c.name)
			require.NotNil(e.t, j.Error, c.name)
			require.Len(e.t, e.notices(id), 1, "%s: a final state records its notice", c.name)
		}
		if slices.Contains(res.Recovered, id) {
			require.Equal(e.t, 1, j.Recoveries, c.name)
		}
		require.NotEmpty(e.t, e.logs(id), c.name)
	}
}

// recoverNodeCases run on TaskStore's RecoverNode and ClusterStore's,
// which a store may implement apart.
var recoverNodeCases = []tcase{
	{"sorts the node's queued, running and paused jobs and logs each move", func(e *env) {
		for _, impl := range []struct {
			name string
			fn   func(context.Context, *chimedb.RecoverNodeParams) (*chimedb.RecoverNodeResult, error)
		}{{"TaskStore", e.Task.RecoverNode}, {"ClusterStore", e.Cluster.RecoverNode}} {
			node := "dead-" + impl.name
			jobs := e.leftOn(node, recoverCases, nil)
			d := e.definition()
			other := e.running(d.ID, "alive", 1)
			res, err := impl.fn(e.ctx, &chimedb.RecoverNodeParams{NodeID: node, Now: e.now()})
			require.NoError(e.t, err, impl.name)
			e.checkRecovered(res, recoverCases, jobs)
			require.Equal(e.t, models.JobRunning, e.get(other.ID).Status, impl.name)
			again, err := impl.fn(e.ctx, &chimedb.RecoverNodeParams{NodeID: node, Now: e.now()})
			require.NoError(e.t, err, impl.name)
			requireNoRecovery(e.t, again)
		}
	}},
	{"UnlessAlive leaves an alive node's jobs alone: a reaper racing the node's restart under the same id", func(e *env) {
		// The rolling-upgrade test failed so: a reaper found n2 stopped with
		// jobs, n2 restarted, registered and claimed, and the reaper then
		// failed the new process's jobs as "n2 died during attempt 1".
		d := e.definition()
		require.NoError(e.t, e.Cluster.RegisterNode(e.ctx, &chimedb.RegisterNodeParams{ID: "back", Hostname: "h", PID: 2, Version: "v2"}))
		j := e.running(d.ID, "back", 1)
		res, err := e.Cluster.RecoverNode(e.ctx, &chimedb.RecoverNodeParams{NodeID: "back", Now: e.now(), UnlessAlive: true})
		require.NoError(e.t, err)
		requireNoRecovery(e.t, res)
		require.Equal(e.t, models.JobRunning, e.get(j.ID).Status)
		// Stopped, or gone from nodes: its jobs are recovered.
		require.NoError(e.t, e.Cluster.SetNodeStatus(e.ctx, "back", chimedb.NodeStopped))
		res, err = e.Cluster.RecoverNode(e.ctx, &chimedb.RecoverNodeParams{NodeID: "back", Now: e.now(), UnlessAlive: true})
		require.NoError(e.t, err)
		require.Len(e.t, append(append(res.Recovered, res.Retried...), res.Failed...), 1)
		gone := e.running(d.ID, "never-registered", 1)
		res, err = e.Cluster.RecoverNode(e.ctx, &chimedb.RecoverNodeParams{NodeID: "never-registered", Now: e.now(), UnlessAlive: true})
		require.NoError(e.t, err)
		require.Len(e.t, append(append(res.Recovered, res.Retried...), res.Failed...), 1)
		require.NotEqual(e.t, models.JobRunning, e.get(gone.ID).Status)
	}},
}

func requireNoRecovery(t *testing.T, r *chimedb.RecoverNodeResult) {
	t.Helper()
	require.Empty(t, r.Released)
	require.Empty(t, r.Recovered)
	require.Empty(t, r.Retried)
	require.Empty(t, r.Failed)
	require.Empty(t, r.Stopped)
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
