package taskengine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/tasks"
)

// outcomeTask returns the typed outcome its params name: "skip", "cancel",
// or "snooze" while the job has been snoozed fewer than "snoozes" times
// (then it succeeds).
type outcomeTask struct{ tasks.Base }

func (*outcomeTask) Execute(_ context.Context, job *tasks.Job) error {
	var p struct {
		Do      string `json:"do"`
		Snoozes int    `json:"snoozes"`
	}
	if err := job.Bind(&p); err != nil {
		return err
	}
	job.SetResult(fmt.Sprintf("run after %d snoozes", job.Snoozes))
	switch p.Do {
	case "skip":
		return fmt.Errorf("calling the API: %w", tasks.SkipRetry(errors.New("401 unauthorized")))
	case "cancel":
		return tasks.Cancel(errors.New("the account is closed"))
	case "snooze":
		if p.Snoozes == 0 || job.Snoozes < p.Snoozes {
			return tasks.Snooze(time.Hour)
		}
	}
	return nil
}

func outcomeRegistry() *tasks.Registry {
	r := testRegistry()
	r.MustRegister("outcome", func() tasks.Task { return &outcomeTask{} })
	return r
}

// outcomeJob is a due job of a new definition of the outcome task that
// wants a notice on notify_on and has attempts to spare.
func outcomeJob(t *testing.T, st *store.Store, name, params, notifyOn string) int64 {
	t.Helper()
	def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: name, TaskType: "outcome", DefaultParams: params, MaxAttempts: 3, RetryBackoffSeconds: 1}).ID
	require.NoError(t, st.DB().Exec(`UPDATE job_definitions SET notify_on = ?, notify_emails = 'ops@example.com' WHERE id = ?`, notifyOn, def).Error)
	return testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def}).ID
}

func notices(t *testing.T, db *gorm.DB, id int64) []models.Notification {
	t.Helper()
	var out []models.Notification
	require.NoError(t, db.Where("job_id = ?", id).Order("id").Find(&out).Error)
	return out
}

// SkipRetry fails the job at once, attempts left or not, recorded as
// outcome skip_retry, with its failure notice.
func TestOutcomeSkipRetry(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		id := outcomeJob(t, st, "skip", `{"do":"skip"}`, "failure")
		cfg := testConfig(t, nodeName(t))
		cfg.Registry = outcomeRegistry()
		e := startEngine(t, st, cfg)

		j := waitOutcome(t, e, st, id, models.JobFailed)
		require.Equal(t, models.OutcomeSkipRetry, j.Outcome)
		require.Equal(t, 1, j.Attempt, "no retry though 3 attempts were allowed")
		require.Equal(t, "calling the API: no retry: 401 unauthorized", deref(j.Error))
		require.NotNil(t, j.FinishedAt)
		requireLog(t, db, id, "not retried as the task asked")
		n := notices(t, db, id)
		require.Len(t, n, 1)
		require.Equal(t, models.JobFailed, n[0].JobStatus)

		var found int64
		require.NoError(t, db.Raw(`SELECT COUNT(*) FROM jobs WHERE outcome = 'skip_retry'`).Scan(&found).Error)
		require.EqualValues(t, 1, found, "the outcome is plain SQL to query")
	})
}

// Cancel ends the job canceled, not retried, with the notice notify_on =
// failure asks for (a cancel counts as a failure).
func TestOutcomeCancel(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		id := outcomeJob(t, st, "cancel", `{"do":"cancel"}`, "failure")
		cfg := testConfig(t, nodeName(t))
		cfg.Registry = outcomeRegistry()
		e := startEngine(t, st, cfg)

		j := waitOutcome(t, e, st, id, models.JobCanceled)
		require.Equal(t, models.OutcomeCanceled, j.Outcome)
		require.Equal(t, 1, j.Attempt)
		require.Equal(t, "canceled by the task: the account is closed", deref(j.Error))
		require.NotNil(t, j.FinishedAt)
		require.Equal(t, "run after 0 snoozes", deref(j.Result))
		requireLog(t, db, id, "canceled by the task, not retried")
		n := notices(t, db, id)
		require.Len(t, n, 1)
		require.Equal(t, models.JobCanceled, n[0].JobStatus)
	})
}

// Snooze sends the job back to pending, due after the delay, without using
// an attempt and without a notice; it runs again when due. The clock is
// fake, so an hour's snooze takes no time.
func TestOutcomeSnooze(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		clock := clockwork.NewFakeClockAt(time.Now().Add(time.Second))
		id := outcomeJob(t, st, "snooze", `{"do":"snooze","snoozes":2}`, "always")
		cfg := testConfig(t, nodeName(t))
		cfg.Registry = outcomeRegistry()
		cfg.Clock = clock
		e := startEngine(t, st, cfg)

		mark := 0
		for n := 1; n <= 2; n++ {
			j := waitOutcomeFrom(t, e, st, mark, id, models.JobPending)
			require.Equal(t, n, j.Snoozes)
			require.Equal(t, models.OutcomeSnoozed, j.Outcome)
			require.Zero(t, j.Attempt, "a snooze uses no attempt")
			require.Empty(t, j.NodeID, "a snoozed job may run on any node")
			require.Nil(t, j.FinishedAt)
			require.Nil(t, j.Error)
			require.Equal(t, time.Hour, j.RunAt.Sub(store.DBTime(clock.Now())))
			require.Empty(t, notices(t, db, id), "a snooze is not an end: no notice")
			requireLog(t, db, id, fmt.Sprintf("snoozed: runs again in 1h0m0s; attempt 1 not used (snooze %d of at most %d)", n, tasks.MaxSnoozes))
			// Not due yet: a wake-up claims nothing.
			claims := claimMark(e)
			e.Wake()
			require.Empty(t, waitClaimAfter(t, e, claims).ids)
			require.Equal(t, models.JobPending, testdb.GetJob(t, st, id).Status)
			mark = e.signals.flushed.Len()
			clock.Advance(time.Hour)
			e.Wake()
		}
		j := waitOutcomeFrom(t, e, st, mark, id, models.JobSucceeded)
		require.Equal(t, 1, j.Attempt)
		require.Equal(t, 2, j.Snoozes)
		require.Equal(t, models.OutcomeNone, j.Outcome)
		require.Equal(t, "run after 2 snoozes", deref(j.Result))
		n := notices(t, db, id)
		require.Len(t, n, 1)
		require.Equal(t, models.JobSucceeded, n[0].JobStatus)
	})
}

// Past tasks.MaxSnoozes a snooze is a failed attempt, so a task that always
// snoozes ends when its attempts do.
func TestOutcomeSnoozeCap(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "snooze-forever", TaskType: "outcome", DefaultParams: `{"do":"snooze"}`, MaxAttempts: 1}).ID
		id := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def}).ID
		require.NoError(t, db.Exec(`UPDATE jobs SET snoozes = ? WHERE id = ?`, tasks.MaxSnoozes, id).Error)
		cfg := testConfig(t, nodeName(t))
		cfg.Registry = outcomeRegistry()
		e := startEngine(t, st, cfg)

		j := waitOutcome(t, e, st, id, models.JobFailed)
		require.Equal(t, models.OutcomeNone, j.Outcome)
		require.Equal(t, 1, j.Attempt)
		require.Equal(t, tasks.MaxSnoozes, j.Snoozes)
		require.Contains(t, deref(j.Error), fmt.Sprintf("snoozed %d times already", tasks.MaxSnoozes))
	})
}

func TestClassifyOutcomes(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		err     error
		stop    bool
		cause   error
		snoozes int
		want    verdict
	}{
		{"skip wrapped", fmt.Errorf("x: %w", tasks.SkipRetry(boom)), false, nil, 0, verdict{status: models.JobFailed, outcome: models.OutcomeSkipRetry}},
		{"cancel", tasks.Cancel(nil), false, nil, 0, verdict{status: models.JobCanceled, outcome: models.OutcomeCanceled}},
		{"snooze", tasks.Snooze(time.Minute), false, nil, 0, verdict{status: models.JobPending, outcome: models.OutcomeSnoozed, snooze: time.Minute}},
		{"negative snooze", &tasks.SnoozeError{Delay: -time.Hour}, false, nil, 0, verdict{status: models.JobPending, outcome: models.OutcomeSnoozed}},
		{"huge snooze", &tasks.SnoozeError{Delay: 1 << 62}, false, nil, 0, verdict{status: models.JobPending, outcome: models.OutcomeSnoozed, snooze: tasks.MaxSnoozeDelay}},
		{"snooze past cap", tasks.Snooze(time.Minute), false, nil, tasks.MaxSnoozes, verdict{status: models.JobFailed}},
		{"stop wins", tasks.Cancel(boom), true, nil, 0, verdict{status: models.JobStopped}},
		{"outcome wins over timeout", tasks.SkipRetry(boom), false, tasks.ErrTimeout, 0, verdict{status: models.JobFailed, outcome: models.OutcomeSkipRetry}},
	} {
		got := classify(tc.err, tc.cause, tc.stop, time.Second, tc.snoozes)
		require.Equal(t, tc.want.status, got.status, tc.name)
		require.Equal(t, tc.want.outcome, got.outcome, tc.name)
		require.Equal(t, tc.want.snooze, got.snooze, tc.name)
	}
	require.Equal(t, "no retry: no reason given", tasks.SkipRetry(nil).Error())
	require.Equal(t, time.Duration(0), tasks.Snooze(-time.Second).(*tasks.SnoozeError).Delay)
}
