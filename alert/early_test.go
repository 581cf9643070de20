package alert_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// TestCatchUpAndRescueAsTheyHappen: a catch-up job alerts when it is
// written, a rescued job when it is taken back (once per rescue), not
// only when they finish; their end sends nothing more.
func TestCatchUpAndRescueAsTheyHappen(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		f := newFix(t, st, time.Now().Add(time.Minute))
		d := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "nightly"})
		f.rule(models.EventCatchUp)
		f.rule(models.EventJobRescued)
		// Written as it falls due, after the rule was made.
		due := store.DBTime(f.clock.Now().Add(-time.Second))
		catchUp := f.job(d.ID, nil, func(j *models.Job) { j.CatchUp, j.MissedFires, j.ScheduledAt, j.RunAt = true, 3, due, due })
		rescued := f.job(d.ID, nil, func(j *models.Job) { j.Recoveries = 1 })
		f.job(d.ID, nil) // pending, nothing special
		require.Equal(t, 2, f.pass(), "both as they happen")
		require.Zero(t, f.pass())
		byEvent := map[models.AlertEvent]string{}
		for _, p := range f.rcv.payloads() {
			byEvent[p.Event] = p.Summary
		}
		require.Contains(t, byEvent[models.EventCatchUp], "catches up 3 missed fires in one run (now pending)")
		require.Contains(t, byEvent[models.EventJobRescued], "(1 times so far); it is pending again")

		// Rescued again: a new occurrence.
		require.NoError(t, st.DB().Exec("UPDATE jobs SET recoveries = 2 WHERE id = ?", rescued.ID).Error)
		require.Equal(t, 1, f.pass())
		// Both end: nothing more.
		end := store.DBTime(f.clock.Now())
		require.NoError(t, st.DB().Exec("UPDATE jobs SET status = ?, started_at = ?, finished_at = ?, attempt = 1 WHERE id IN ?",
			models.JobSucceeded, end.Add(-time.Second), end, []int64{catchUp.ID, rescued.ID}).Error)
		f.clock.Advance(time.Second)
		require.Zero(t, f.pass(), "their end is the same occurrence")
		require.Equal(t, []string{"catch_up/firing", "job_rescued/firing", "job_rescued/firing"}, f.rcv.events())

		// One missed while it ran (written and finished between passes) is
		// still reported at its end.
		late := f.job(d.ID, nil, finished(models.JobFailed, f.clock.Now(), 1), func(j *models.Job) { j.Recoveries = 1 })
		f.clock.Advance(time.Second)
		require.Equal(t, 1, f.pass())
		last := f.rcv.payloads()[len(f.rcv.payloads())-1]
		require.Equal(t, late.ID, last.Job.ID)
		require.Contains(t, last.Summary, "and ended failed")
	})
}
