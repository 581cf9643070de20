package clustertest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// wfRuns is how many runs of the 50-step workflow go at once
// (CHIME_CLUSTERTEST_WORKFLOW_RUNS): 1 by default, which keeps a
// database's test near half a minute; more for a longer soak of the same
// checks. wfSleep is each step's sleep (CHIME_CLUSTERTEST_WORKFLOW_SLEEP).
var (
	wfRuns  = envInt("CHIME_CLUSTERTEST_WORKFLOW_RUNS", 1)
	wfSleep = envDuration("CHIME_CLUSTERTEST_WORKFLOW_SLEEP", 600*time.Millisecond)
)

// wfAudit finds the steps of the runs that have other than one job: a
// step written twice, by two nodes deciding one join or by a decision
// replayed after a kill, shows here.
const wfAudit = `SELECT run_id, step_id, COUNT(*) AS n FROM jobs WHERE run_id IN ? GROUP BY run_id, step_id HAVING COUNT(*) <> 1`

// A 50-step workflow (fan-outs of 10 and their joins, then a chain) runs
// on three `chime serve` nodes while one of them is killed with SIGKILL
// twice, each time while it runs a step, and started again. Every step
// must have exactly one job (its attempts are that job's, a step cut off
// by the kill runs again on the same row), its ledger row must name that
// job, every run must succeed, and no job may be left unfinished.
func TestWorkflowKill(t *testing.T) {
	t.Run("mysql", func(t *testing.T) { workflowKill(t, testdb.CreateMySQLDatabase(t)) })
	t.Run("postgres", func(t *testing.T) { workflowKill(t, testdb.CreatePostgresDatabase(t)) })
}

// fiftySteps is start → 4 × (10 in parallel → join) → a chain of 5.
func fiftySteps(defID int64) *chimedb.WorkflowSpec {
	spec := &chimedb.WorkflowSpec{Name: "fifty", FailurePolicy: models.FailStop}
	step := func(name string) { spec.Steps = append(spec.Steps, chimedb.StepSpec{Name: name, DefinitionID: defID}) }
	edge := func(from, to string) {
		spec.Edges = append(spec.Edges, chimedb.EdgeSpec{From: from, To: to, Condition: models.EdgeSuccess})
	}
	step("start")
	prev := "start"
	for s := 1; s <= 4; s++ {
		join := fmt.Sprintf("join%d", s)
		step(join)
		for i := range 10 {
			name := fmt.Sprintf("s%d-%d", s, i)
			step(name)
			edge(prev, name)
			edge(name, join)
		}
		prev = join
	}
	for i := 1; i <= 5; i++ {
		name := fmt.Sprintf("tail%d", i)
		step(name)
		edge(prev, name)
		prev = name
	}
	return spec
}

func workflowKill(t *testing.T, dsn string) {
	bin := chimeBinary(t)
	migrate(t, bin, dsn)
	st := openStore(t, dsn)
	ctx := context.Background()
	def := models.JobDefinition{
		Name: "wf-sleep", TaskType: "sleep", MaxAttempts: 3, NotifyOn: models.NotifyNever,
		DefaultParams: models.JSON(`{"duration":"` + wfSleep.String() + `"}`),
	}
	require.NoError(t, st.DB().Create(&def).Error)
	g, err := st.CreateWorkflow(ctx, fiftySteps(def.ID))
	require.NoError(t, err)
	require.Len(t, g.Steps, 50)

	nodes := map[string]*nodeProc{}
	for _, id := range []string{"n1", "n2", "n3"} {
		nodes[id] = startNode(t, bin, dsn, id)
	}
	var runIDs []int64
	for range wfRuns {
		run, err := st.StartRun(ctx, &chimedb.StartRunParams{WorkflowID: g.ID, StartedBy: "clustertest"})
		require.NoError(t, err)
		runIDs = append(runIDs, run.ID)
	}
	started := time.Now()

	// The victim is killed while it runs a step past the first, started
	// again (it reruns the steps it held, on their rows), and killed
	// again while it runs a step it did not hold at the first kill.
	const victim = "n2"
	held := []int64{0}
	for kill := 1; kill <= 2; kill++ {
		waitForOr(t, 60*time.Second, fmt.Sprintf("node %s to run a new step (kill %d)", victim, kill), func() bool {
			return count(t, st, "SELECT COUNT(*) FROM jobs WHERE run_id IN ? AND status = ?", runIDs, models.JobSucceeded) >= 1 &&
				count(t, st, "SELECT COUNT(*) FROM jobs WHERE run_id IN ? AND node_id = ? AND status = ? AND id NOT IN ?",
					runIDs, victim, models.JobRunning, held) > 0
		}, func() string { return wfState(t, st, runIDs) })
		nodes[victim].kill()
		var ids []int64
		require.NoError(t, st.DB().Model(&models.Job{}).Where("run_id IN ? AND node_id = ? AND status IN ?",
			runIDs, victim, []models.JobStatus{models.JobQueued, models.JobRunning}).Pluck("id", &ids).Error)
		held = append(held, ids...)
		t.Logf("kill %d of %s after %s, holding %d step jobs; %s", kill, victim,
			time.Since(started).Round(time.Millisecond), len(ids), wfState(t, st, runIDs))
		// A pause before the restart, so that the survivors go on
		// deciding the runs without the victim: real processes.
		time.Sleep(time.Second)
		nodes[victim] = startNode(t, bin, dsn, victim)
	}

	waitForOr(t, 120*time.Second, "every run to finish", func() bool {
		return count(t, st, "SELECT COUNT(*) FROM workflow_runs WHERE id IN ? AND status IN ?", runIDs,
			[]models.RunStatus{models.RunPending, models.RunRunning}) == 0
	}, func() string { return wfState(t, st, runIDs) })
	t.Logf("%d run(s) of 50 steps finished %s after the start", len(runIDs), time.Since(started).Round(time.Millisecond))
	stopAll(t, st, nodes)
	checkWorkflowRuns(t, st, runIDs)
}

// wfState says how far the runs are, for the log and for a timeout.
func wfState(t *testing.T, st *store.Store, runIDs []int64) string {
	t.Helper()
	var rows []struct {
		Status string
		N      int
	}
	require.NoError(t, st.DB().Raw(`SELECT status, COUNT(*) AS n FROM jobs WHERE run_id IN ? GROUP BY status ORDER BY status`, runIDs).
		Scan(&rows).Error)
	var b strings.Builder
	b.WriteString("step jobs:")
	for _, r := range rows {
		fmt.Fprintf(&b, " %s %d", r.Status, r.N)
	}
	var runs []models.WorkflowRun
	require.NoError(t, st.DB().Where("id IN ?", runIDs).Find(&runs).Error)
	for _, r := range runs {
		fmt.Fprintf(&b, "; run %d %s %q", r.ID, r.Status, r.Reason)
	}
	return b.String()
}

// checkWorkflowRuns audits finished runs: one job per step, the ledger
// naming it, every step succeeded, nothing left live.
func checkWorkflowRuns(t *testing.T, st *store.Store, runIDs []int64) {
	t.Helper()
	var twice []struct{ RunID, StepID, N int64 }
	require.NoError(t, st.DB().Raw(wfAudit, runIDs).Scan(&twice).Error)
	require.Empty(t, twice, "steps with other than one job (%s)", wfAudit)
	want := int64(50 * len(runIDs))
	require.Equal(t, want, count(t, st, "SELECT COUNT(*) FROM jobs WHERE run_id IN ?", runIDs), "one job per step")
	require.Equal(t, want, count(t, st, `SELECT COUNT(*) FROM workflow_run_steps rs JOIN jobs j
		ON j.id = rs.job_id AND j.run_id = rs.run_id AND j.step_id = rs.step_id WHERE rs.run_id IN ? AND rs.generation = 1`, runIDs),
		"every ledger row names its step's job")
	require.Equal(t, want, count(t, st, "SELECT COUNT(*) FROM workflow_run_steps WHERE run_id IN ?", runIDs), "one ledger row per step")
	require.Equal(t, want, count(t, st, "SELECT COUNT(*) FROM jobs WHERE run_id IN ? AND status = ?", runIDs, models.JobSucceeded),
		"every step succeeded")
	require.Equal(t, int64(len(runIDs)), count(t, st, "SELECT COUNT(*) FROM workflow_runs WHERE id IN ? AND status = ?", runIDs,
		models.RunSucceeded), "every run succeeded: %s", wfState(t, st, runIDs))
	require.Zero(t, count(t, st, "SELECT COUNT(*) FROM jobs WHERE status IN ?",
		[]models.JobStatus{models.JobPending, models.JobQueued, models.JobRunning, models.JobPaused}), "jobs left unfinished")
	var again int64
	require.NoError(t, st.DB().Raw("SELECT COUNT(*) FROM jobs WHERE run_id IN ? AND (attempt > 1 OR recoveries > 0)", runIDs).Scan(&again).Error)
	var lag []struct {
		ID  int64
		Lag float64
	}
	// How long after its last step's end each run was decided over: by
	// the completion itself, or by the reconciler when the kill cut the
	// decision off.
	require.NoError(t, st.DB().Raw(lagQuery(st), runIDs).Scan(&lag).Error)
	t.Logf("audit %q: no rows; %d jobs, %d ledger rows, all succeeded; %d step jobs ran again after a kill; run end after last step: %v",
		wfAudit, want, want, again, lag)
	if os.Getenv("CHIME_CLUSTERTEST_LOGDIR") != "" {
		t.Logf("node logs kept in CHIME_CLUSTERTEST_LOGDIR")
	}
}

// lagQuery is, per run, the seconds from its last job's end to its own.
func lagQuery(st *store.Store) string {
	diff := "TIMESTAMPDIFF(MICROSECOND, MAX(j.finished_at), r.finished_at) / 1e6"
	if st.Dialect() == store.Postgres {
		diff = "EXTRACT(EPOCH FROM r.finished_at - MAX(j.finished_at))"
	}
	return `SELECT r.id, ` + diff + ` AS lag FROM workflow_runs r JOIN jobs j ON j.run_id = r.id WHERE r.id IN ? GROUP BY r.id, r.finished_at`
}
