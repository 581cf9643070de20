package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// lockWaitSQL counts the sessions of this test's database that wait on a
// row lock, per server dialect. On MariaDB a wait inside a trigger (the
// ledger's UPDATE in chime_jobs_run_ledger) shows in INNODB_TRX as
// RUNNING, not LOCK WAIT, so there it counts the other sessions whose job
// INSERT is executing: while the first transaction holds its ledger row,
// such an INSERT cannot end, so executing is waiting.
var lockWaitSQL = map[store.Dialect]string{
	store.MySQL: `SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE()
		AND ID <> CONNECTION_ID() AND COMMAND = 'Query' AND (INFO LIKE 'INSERT INTO jobs%' OR INFO LIKE '%workflow_run_steps%')`,
	store.Postgres: `SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
}

// Two transactions write a job for one step of a run, neither holding
// the run's lock (plain SQL, or a writer that went around it): the
// second's INSERT waits on the first's ledger row, written by the first
// job's INSERT (chime_jobs_run_ledger), and is refused, whole, once the
// first commits. One job, one ledger row naming it. On SQLite, one
// writer at a time, the second comes after the first.
func TestRunLedgerRefusesASecondJobWrittenAtOnce(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := t.Context()
		db := st.DB().WithContext(ctx)
		d := testdb.Definition(t, st, nil)
		g, err := st.CreateWorkflow(ctx, &chimedb.WorkflowSpec{Name: "w", Steps: []chimedb.StepSpec{
			{Name: "a", DefinitionID: d.ID}, {Name: "b", DefinitionID: d.ID}}, Edges: []chimedb.EdgeSpec{{From: "a", To: "b"}}})
		require.NoError(t, err)
		run, err := st.StartRun(ctx, &chimedb.StartRunParams{WorkflowID: g.ID})
		require.NoError(t, err)
		b := g.Steps[1].ID
		insert := func(tx *gorm.DB) error {
			return tx.Exec("INSERT INTO jobs (job_definition_id, run_id, step_id) VALUES (?, ?, ?)", d.ID, run.ID, b).Error
		}

		first := db.Begin()
		require.NoError(t, first.Error)
		require.NoError(t, insert(first))
		second := make(chan error, 1)
		if st.Dialect() == store.SQLite {
			require.NoError(t, first.Commit().Error)
			second <- db.Transaction(insert)
		} else {
			go func() { second <- db.Transaction(insert) }()
			deadline := time.Now().Add(30 * time.Second)
			for {
				var waiting int
				require.NoError(t, db.Raw(lockWaitSQL[st.Dialect()]).Scan(&waiting).Error)
				if waiting > 0 {
					break
				}
				require.True(t, time.Now().Before(deadline), "the second INSERT never waited on the first")
				time.Sleep(10 * time.Millisecond) // the poll step of a wait with a deadline
			}
			require.NoError(t, first.Commit().Error)
		}
		require.Error(t, <-second, "a step runs once per generation")

		var jobs []models.Job
		require.NoError(t, db.Where("run_id = ? AND step_id = ?", run.ID, b).Find(&jobs).Error)
		require.Len(t, jobs, 1)
		var ledger []models.WorkflowRunStep
		require.NoError(t, db.Where("run_id = ? AND step_id = ?", run.ID, b).Find(&ledger).Error)
		require.Len(t, ledger, 1)
		require.NotNil(t, ledger[0].JobID)
		require.Equal(t, jobs[0].ID, *ledger[0].JobID)
		require.Equal(t, 1, ledger[0].Generation)
	})
}
