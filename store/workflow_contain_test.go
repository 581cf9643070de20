package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// refuseLedgerJobSQL makes the database refuse to record a step's job in
// its ledger (the row the trigger chime_jobs_run_ledger writes with the
// job's INSERT), per dialect: the statement that writes a step's job
// fails.
var refuseLedgerJobSQL = map[store.Dialect][]string{
	store.SQLite: {`CREATE TRIGGER test_refuse_ledger BEFORE INSERT ON workflow_run_steps WHEN NEW.job_id IS NOT NULL
		BEGIN SELECT RAISE(ABORT, 'test: ledger refused'); END`},
	store.MySQL: {`CREATE TRIGGER test_refuse_ledger BEFORE INSERT ON workflow_run_steps FOR EACH ROW
		BEGIN IF NEW.job_id IS NOT NULL THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'test: ledger refused'; END IF; END`},
	store.Postgres: {`CREATE FUNCTION test_refuse_ledger() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.job_id IS NOT NULL THEN RAISE EXCEPTION 'test: ledger refused'; END IF; RETURN NEW; END $$`,
		`CREATE TRIGGER test_refuse_ledger BEFORE INSERT ON workflow_run_steps FOR EACH ROW EXECUTE FUNCTION test_refuse_ledger()`},
}

var dropRefuseLedgerSQL = map[store.Dialect][]string{
	store.SQLite:   {`DROP TRIGGER test_refuse_ledger`},
	store.MySQL:    {`DROP TRIGGER test_refuse_ledger`},
	store.Postgres: {`DROP TRIGGER test_refuse_ledger ON workflow_run_steps`, `DROP FUNCTION test_refuse_ledger()`},
}

// When the decision in a completion's transaction fails as it writes a
// step's job (here: its ledger row is refused), the completion's slow
// path writes the outcome without the decision. On every dialect the
// decision's writes must go with it: a job left behind without its
// ledger entry is a step written, and the reconciler, finding the step
// unwritten, writes it again. The job and its ledger row are one INSERT
// (the trigger), which stands or falls whole; a decision of several
// statements (a fan-out of more than one INSERT) has the SAVEPOINT.
func TestFailedDecisionLeavesNoStepHalfWritten(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := t.Context()
		db := st.DB()
		d := testdb.Definition(t, st, nil)
		g, err := st.CreateWorkflow(ctx, &chimedb.WorkflowSpec{Name: "w", Steps: []chimedb.StepSpec{
			{Name: "a", DefinitionID: d.ID}, {Name: "b", DefinitionID: d.ID}}, Edges: []chimedb.EdgeSpec{{From: "a", To: "b"}}})
		require.NoError(t, err)
		run, err := st.StartRun(ctx, &chimedb.StartRunParams{WorkflowID: g.ID})
		require.NoError(t, err)
		var a models.Job
		require.NoError(t, db.Where("run_id = ?", run.ID).First(&a).Error)
		now := store.DBTime(time.Now())
		require.NoError(t, db.Exec("UPDATE jobs SET status = ?, node_id = ?, attempt = 1, started_at = ?, heartbeat_at = ? WHERE id = ?",
			models.JobRunning, "n", now, now, a.ID).Error)

		for _, q := range refuseLedgerJobSQL[st.Dialect()] {
			require.NoError(t, db.Exec(q).Error)
		}
		done, err := st.CompleteJobs(ctx, &chimedb.CompleteJobsParams{NodeID: "n", Outcomes: []chimedb.JobOutcome{
			{ID: a.ID, RunID: run.ID, Status: models.JobSucceeded, FinishedAt: now}}})
		for _, q := range dropRefuseLedgerSQL[st.Dialect()] {
			require.NoError(t, db.Exec(q).Error)
		}
		require.NoError(t, err)
		require.Equal(t, []int64{a.ID}, done, "the outcome is written without the decision")

		_, err = st.AdvanceRuns(ctx, 10)
		require.NoError(t, err)
		var jobsOfB int64
		require.NoError(t, db.Model(&models.Job{}).Where("run_id = ? AND id <> ?", run.ID, a.ID).Count(&jobsOfB).Error)
		require.EqualValues(t, 1, jobsOfB, "step b written once")
	})
}
