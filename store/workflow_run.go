package store

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// liveStatuses are the job statuses of a step that has not ended.
var liveStatuses = []models.JobStatus{models.JobPending, models.JobQueued, models.JobRunning, models.JobPaused}

// maxUpstreamResultBytes caps what run_inputs keeps of one upstream
// step's result: a 1,000-wide fan-in hands its join every result, and the
// whole document is one column of one row.
const maxUpstreamResultBytes = 64 << 10

// runGraph is what deciding a run reads: its workflow, steps and edges,
// and the job of each step's latest generation.
type runGraph struct {
	run models.WorkflowRun
	*cachedGraph
	jobs map[int64]*stepJob // by step id
}

// stepJob is a step's ledger row in its latest generation, with its job.
type stepJob struct {
	StepID     int64
	Generation int
	JobID      *int64
	Status     *string // nil: the job row is gone
}

// runDecision is what the graph's state says to do now.
type runDecision struct {
	states    map[int64]models.StepState
	ready     []int64  // steps whose edges all hold, with no job yet, in order
	unhandled []string // failed steps no failure or always edge handles
	live      int      // steps whose job has not ended
}

// loadRunGraph reads run's workflow (the cached graph when stamp, the
// workflow's updated_at, is that of the cache) and jobs inside tx. A
// graph that cannot be run (its workflow gone, a cycle, an edge to
// another workflow's step) comes back with bad set.
func (s *Store) loadRunGraph(tx *gorm.DB, run *models.WorkflowRun, stamp string) (*runGraph, error) {
	cg, err := s.graphOf(tx, run.WorkflowID, stamp)
	if err != nil {
		return nil, err
	}
	g := &runGraph{run: *run, cachedGraph: cg, jobs: map[int64]*stepJob{}}
	if g.bad != "" {
		return g, nil
	}
	return g, s.loadRunJobs(tx, g)
}

// loadRunJobs reads the job of each step of g's run.
func (s *Store) loadRunJobs(tx *gorm.DB, g *runGraph) error {
	run := &g.run
	var rows []stepJob
	if err := tx.Raw(`SELECT rs.step_id, rs.generation, rs.job_id, j.status FROM workflow_run_steps rs
		LEFT JOIN jobs j ON j.id = rs.job_id WHERE rs.run_id = ? ORDER BY rs.generation`, run.ID).Scan(&rows).Error; err != nil {
		return fmt.Errorf("read the steps of run %d: %w", run.ID, err)
	}
	for i := range rows {
		r := &rows[i]
		if r.JobID == nil {
			// A ledger row whose job was never written (a row an admin
			// wrote): the step is not written yet.
			continue
		}
		if r.Generation < run.Generation && r.Status != nil && *r.Status != string(models.JobSucceeded) &&
			models.JobStatus(*r.Status).Finished() {
			// A rerun runs again what did not succeed in an earlier generation.
			continue
		}
		g.jobs[r.StepID] = r
	}
	return nil
}

// stepStateOf is the state a step's job gives it.
func stepStateOf(j *stepJob) models.StepState {
	if j.Status == nil {
		return models.StepFailed // the job row is gone
	}
	switch models.JobStatus(*j.Status) {
	case models.JobPending:
		return models.StepPending
	case models.JobQueued, models.JobRunning, models.JobPaused:
		return models.StepRunning
	case models.JobSucceeded:
		return models.StepSucceeded
	}
	return models.StepFailed
}

// decide walks the graph in topological order and says each step's state.
// Pure: it reads g only.
func (g *runGraph) decide() *runDecision {
	d := &runDecision{states: make(map[int64]models.StepState, len(g.steps))}
	order, in, out := g.topoOrder()
	byID := make(map[int64]*models.WorkflowStep, len(g.steps))
	for i := range g.steps {
		byID[g.steps[i].ID] = &g.steps[i]
	}
	for _, id := range order {
		if j, ok := g.jobs[id]; ok {
			st := stepStateOf(j)
			d.states[id] = st
			if st == models.StepPending || st == models.StepRunning {
				d.live++
			}
			continue
		}
		edges := in[id]
		if len(edges) == 0 {
			d.states[id] = models.StepWaiting
			d.ready = append(d.ready, id)
			continue
		}
		ready, skipped := edgeVerdict(edges, d.states, byID[id].WaitFor == models.WaitAny)
		switch {
		case skipped:
			d.states[id] = models.StepSkipped
		case ready:
			d.states[id] = models.StepWaiting
			d.ready = append(d.ready, id)
		default:
			d.states[id] = models.StepWaiting
		}
	}
	for _, st := range g.steps {
		if d.states[st.ID] != models.StepFailed {
			continue
		}
		handled := slices.ContainsFunc(out[st.ID], func(e models.WorkflowEdge) bool {
			return e.Condition == models.EdgeFailure || e.Condition == models.EdgeAlways
		})
		if !handled {
			d.unhandled = append(d.unhandled, st.Name)
		}
	}
	return d
}

// topoOrder lists the steps upstream first (a step on a cycle is left
// out), with each step's incoming and outgoing edges.
func (g *runGraph) topoOrder() (order []int64, in, out map[int64][]models.WorkflowEdge) {
	in = make(map[int64][]models.WorkflowEdge, len(g.steps))
	out = make(map[int64][]models.WorkflowEdge, len(g.steps))
	indeg := make(map[int64]int, len(g.steps))
	for _, e := range g.edges {
		in[e.ToStepID] = append(in[e.ToStepID], e)
		out[e.FromStepID] = append(out[e.FromStepID], e)
		indeg[e.ToStepID]++
	}
	for _, st := range g.steps {
		if indeg[st.ID] == 0 {
			order = append(order, st.ID)
		}
	}
	for i := 0; i < len(order); i++ {
		for _, e := range out[order[i]] {
			if indeg[e.ToStepID]--; indeg[e.ToStepID] == 0 {
				order = append(order, e.ToStepID)
			}
		}
	}
	return order, in, out
}

// edgeVerdict says, from its incoming edges and its upstream steps'
// states, whether a step may start now (ready) or never will (skipped);
// neither while an edge it needs is undecided.
func edgeVerdict(edges []models.WorkflowEdge, states map[int64]models.StepState, waitAny bool) (ready, skipped bool) {
	var holds, fails, undecided int
	for _, e := range edges {
		up := states[e.FromStepID]
		decided := up == models.StepSucceeded || up == models.StepFailed || up == models.StepSkipped
		switch {
		case !decided:
			undecided++
		case edgeHolds(e, up):
			holds++
		default:
			fails++
		}
	}
	if waitAny {
		return holds > 0, holds == 0 && undecided == 0
	}
	return holds == len(edges), fails > 0
}

// edgeHolds says whether e holds once its upstream step, decided, is in
// state up.
func edgeHolds(e models.WorkflowEdge, up models.StepState) bool {
	return e.Condition == models.EdgeAlways ||
		e.Condition == models.EdgeSuccess && up == models.StepSucceeded ||
		e.Condition == models.EdgeFailure && up == models.StepFailed
}

// stopped says whether the run writes no more steps: a step failed that
// nothing handles, under the stop policy.
func (g *runGraph) stopped(d *runDecision) bool {
	return len(d.unhandled) > 0 && g.wf.FailurePolicy != models.FailContinue
}

// lockedRun is a run's row read under its lock, with its workflow's
// updated_at (the graph cache's stamp) read by the same statement.
type lockedRun struct {
	models.WorkflowRun
	WfStamp *string `gorm:"column:wf_stamp"`
}

// stampOf is the expression that reads workflow id's stamp, written the
// same way wherever it is read so that the driver hands back the same
// text for the same updated_at.
func stampOf(id string) string {
	return "(SELECT w_.updated_at FROM workflows w_ WHERE w_.id = " + id + ") AS wf_stamp"
}

// lockRun locks run id and reads it with its workflow's stamp (nil run:
// no such run). The subquery takes no lock: deciding two runs of one
// workflow at once does not wait on the workflow's row.
func (s *Store) lockRun(tx *gorm.DB, id int64) (*models.WorkflowRun, string, error) {
	var rows []lockedRun
	if err := tx.Raw(`SELECT r.*, `+stampOf("r.workflow_id")+` FROM workflow_runs r WHERE r.id = ?`+s.lockClause(), id).
		Scan(&rows).Error; err != nil {
		return nil, "", fmt.Errorf("lock run %d: %w", id, err)
	}
	if len(rows) == 0 {
		return nil, "", nil
	}
	stamp := ""
	if rows[0].WfStamp != nil {
		stamp = *rows[0].WfStamp
	}
	return &rows[0].WorkflowRun, stamp, nil
}

// advanceRun decides run id inside tx, which must commit what it writes:
// it locks the run row (so two transactions that end two upstream steps
// decide the join one after the other, the second seeing the first's
// job), writes the jobs of the steps whose edges now all hold, and ends
// the run when no step is left to run. A run that cannot be run (a bad
// row) fails with the reason. Runs that are paused or over are left
// alone. done, when not nil, are the final outcomes of the run's jobs
// this transaction wrote (see localReady).
func (s *Store) advanceRun(tx *gorm.DB, id int64, done []chimedb.JobOutcome, now time.Time) error {
	run, stamp, err := s.lockRun(tx, id)
	if err != nil || run == nil {
		return err
	}
	if run.Status != models.RunPending && run.Status != models.RunRunning {
		return nil
	}
	return s.decideRun(tx, run, stamp, done, false, now)
}

// decideRun decides run, locked by tx (fresh: written by tx, so it has no
// job yet), and applies to *run what it changes in its row.
func (s *Store) decideRun(tx *gorm.DB, run *models.WorkflowRun, stamp string, done []chimedb.JobOutcome, fresh bool, now time.Time) error {
	set := map[string]any{}
	if run.Status == models.RunPending || run.StartedAt == nil {
		set["status"], set["started_at"] = models.RunRunning, now
	}
	defer applyRunSet(run, set)
	cg, err := s.graphOf(tx, run.WorkflowID, stamp)
	if err != nil {
		return err
	}
	g := &runGraph{run: *run, cachedGraph: cg, jobs: map[int64]*stepJob{}}
	bad := g.bad
	if _, err := models.MergeParams(nil, run.Params); bad == "" && err != nil {
		bad = fmt.Sprintf("run %d: %v", run.ID, err)
	}
	if bad != "" {
		s.log.WithField("run_id", run.ID).Warn("workflow run failed: " + bad)
		return s.endRun(tx, run.ID, set, models.RunFailed, bad, now, &cg.wf)
	}
	if ready, up, ok := g.localReady(done); ok && len(set) == 0 {
		return s.writeSteps(tx, g, ready, up, now)
	}
	if g.lastStep(done) && len(set) == 0 {
		if ended, err := s.endIfAllSucceeded(tx, run, &cg.wf, now); err != nil || ended {
			return err
		}
	}
	if !fresh {
		if err := s.loadRunJobs(tx, g); err != nil {
			return err
		}
	}
	d := g.decide()
	if len(d.ready) > 0 && !g.stopped(d) {
		up, err := s.upstreamResults(tx, g, d)
		if err != nil {
			return err
		}
		if err := s.writeSteps(tx, g, d.ready, up, now); err != nil {
			return err
		}
		return s.setRun(tx, run.ID, set)
	}
	if d.live > 0 {
		if g.stopped(d) && run.Reason == "" {
			// Marks the run as stopping: a completion that would start
			// a step without reading the others' states (localReady)
			// sees it and decides the whole run instead.
			set["reason"] = "step " + strings.Join(sortedCopy(d.unhandled), ", ") + " failed; waiting for the running steps"
		}
		return s.setRun(tx, run.ID, set)
	}
	if len(d.unhandled) > 0 {
		return s.endRun(tx, run.ID, set, models.RunFailed, "step "+strings.Join(sortedCopy(d.unhandled), ", ")+" failed", now, &cg.wf)
	}
	return s.endRun(tx, run.ID, set, models.RunSucceeded, "", now, &cg.wf)
}

func sortedCopy(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return out
}

// applyRunSet applies to run the columns set changed in its row.
func applyRunSet(run *models.WorkflowRun, set map[string]any) {
	if v, ok := set["status"].(models.RunStatus); ok {
		run.Status = v
	}
	if v, ok := set["started_at"].(time.Time); ok {
		run.StartedAt = &v
	}
	if v, ok := set["finished_at"].(time.Time); ok {
		run.FinishedAt = &v
	}
	if v, ok := set["reason"].(string); ok {
		run.Reason = v
	}
}

// lastStep says whether done is the success of the only step no other
// waits on: most likely the run's end, which endIfAllSucceeded then
// writes without reading the run's steps.
func (g *runGraph) lastStep(done []chimedb.JobOutcome) bool {
	if len(done) != 1 || done[0].Status != models.JobSucceeded || len(g.out[done[0].StepID]) > 0 || g.byID[done[0].StepID] == nil {
		return false
	}
	sinks := 0
	for i := range g.steps {
		if len(g.out[g.steps[i].ID]) == 0 {
			sinks++
		}
	}
	return sinks == 1
}

// endIfAllSucceeded ends run, locked by tx, as succeeded when every step
// of its workflow (as the database has it) has a succeeded job and no job
// of its generation is anything else: what deciding it would say, in one
// statement instead of a read and an update, and records the notice wf,
// its workflow, asks for. ended is false when it is not so; the run is
// then decided from its steps as always.
func (s *Store) endIfAllSucceeded(tx *gorm.DB, run *models.WorkflowRun, wf *models.Workflow, now time.Time) (ended bool, err error) {
	res := tx.Exec(`UPDATE workflow_runs SET status = ?, finished_at = ?, reason = '' WHERE id = ? AND status = ?
		AND NOT EXISTS (SELECT 1 FROM workflow_steps s WHERE s.workflow_id = ? AND NOT EXISTS (
			SELECT 1 FROM workflow_run_steps rs JOIN jobs j ON j.id = rs.job_id
			WHERE rs.run_id = ? AND rs.step_id = s.id AND j.status = ?))
		AND NOT EXISTS (SELECT 1 FROM workflow_run_steps rs LEFT JOIN jobs j ON j.id = rs.job_id
			WHERE rs.run_id = ? AND rs.generation = ? AND (j.status IS NULL OR j.status <> ?))`,
		models.RunSucceeded, now, run.ID, models.RunRunning, run.WorkflowID, run.ID, models.JobSucceeded,
		run.ID, run.Generation, models.JobSucceeded)
	if res.Error != nil {
		return false, fmt.Errorf("end run %d: %w", run.ID, res.Error)
	}
	if res.RowsAffected == 0 {
		return false, nil
	}
	run.Status, run.FinishedAt, run.Reason = models.RunSucceeded, &now, ""
	if runNotifyWants(wf, models.RunSucceeded) {
		if err := s.enqueueRunNotice(tx, run.ID); err != nil {
			return false, err
		}
	}
	return true, nil
}

// localReady decides a run from the outcomes done alone, without reading
// its other steps' jobs, when that is sure to give what deciding the
// whole run gives: the run is in its first generation and not stopping
// (no reason yet), each step of done has downstream steps, each of which
// waits on that step alone through an edge its outcome makes hold. Those
// steps are then ready, the run goes on, and the results they see of
// their upstream are those of done. ok is false otherwise.
func (g *runGraph) localReady(done []chimedb.JobOutcome) (ready []int64, up map[int64]models.StepResult, ok bool) {
	if len(done) == 0 || g.run.Generation != 1 || g.run.Reason != "" || g.run.Status != models.RunRunning {
		return nil, nil, false
	}
	up = make(map[int64]models.StepResult, len(done))
	for i := range done {
		o := &done[i]
		edges := g.out[o.StepID]
		if g.byID[o.StepID] == nil || len(edges) == 0 {
			return nil, nil, false
		}
		status := string(o.Status)
		state := stepStateOf(&stepJob{Status: &status})
		for _, e := range edges {
			if len(g.in[e.ToStepID]) != 1 || !edgeHolds(e, state) {
				return nil, nil, false
			}
			ready = append(ready, e.ToStepID)
		}
		r := models.StepResult{State: state, JobID: o.ID}
		if o.Result != nil {
			r.Result = truncateUTF8(*o.Result, maxUpstreamResultBytes)
		}
		if o.Error != nil {
			r.Error = truncateUTF8(*o.Error, maxUpstreamResultBytes)
		}
		up[o.StepID] = r
	}
	slices.Sort(ready)
	return ready, up, true
}

func (s *Store) setRun(tx *gorm.DB, id int64, set map[string]any) error {
	if len(set) == 0 {
		return nil
	}
	if err := tx.Model(&models.WorkflowRun{}).Where("id = ?", id).Updates(set).Error; err != nil {
		return fmt.Errorf("update run %d: %w", id, err)
	}
	return nil
}

// endRun ends run id as status and records the notice its workflow asks
// for. wf, when not nil, is that workflow's row as the decision read it
// (with the run's lock, by its updated_at): one that wants no notice of
// status spares the INSERT…SELECT that would write none. nil: the
// INSERT…SELECT reads the workflow.
func (s *Store) endRun(tx *gorm.DB, id int64, set map[string]any, status models.RunStatus, reason string, now time.Time, wf *models.Workflow) error {
	set["status"], set["finished_at"], set["reason"] = status, now, truncateUTF8(reason, 2048)
	if err := s.setRun(tx, id, set); err != nil {
		return err
	}
	if wf != nil && !runNotifyWants(wf, status) {
		return nil
	}
	return s.enqueueRunNotice(tx, id)
}

// truncateUTF8 cuts s to at most n bytes on a rune boundary.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// writeSteps writes the jobs of the ready steps, up holding the results
// of the steps they wait on, in one INSERT per 200: each job's ledger row
// is written by the INSERT itself, through the trigger
// chime_jobs_run_ledger (migration 00028), in the run's generation. The
// ledger is the guard: the run's lock already keeps two transactions
// from writing one step, and should a row name another job anyway (one
// written by SQL, read by no decision that skipped reading the ledger),
// the trigger refuses the INSERT, whole. Nothing of it stays; the
// decision fails, and the completion decides the run again from its
// ledger (CompleteJobs' second path), as the reconciler does.
func (s *Store) writeSteps(tx *gorm.DB, g *runGraph, ready []int64, up map[int64]models.StepResult, now time.Time) error {
	defaults, err := s.stepDefaults(tx, g, ready)
	if err != nil {
		return err
	}
	jobs := make([]models.Job, 0, len(ready))
	for _, id := range ready {
		st := g.byID[id]
		inputs := models.RunInputs{Run: g.run.ID, Step: st.Name, Params: g.run.Params, TimeoutSeconds: st.TimeoutSeconds}
		for _, e := range g.in[id] {
			if inputs.Upstream == nil {
				inputs.Upstream = map[string]models.StepResult{}
			}
			inputs.Upstream[g.byID[e.FromStepID].Name] = up[e.FromStepID]
		}
		doc, err := json.Marshal(inputs)
		if err != nil {
			return fmt.Errorf("run %d step %q: %w", g.run.ID, st.Name, err)
		}
		params := st.Params
		if len(params) > 0 {
			if merged, err := models.MergeParams(defaults[st.JobDefinitionID], st.Params); err == nil {
				params = merged
			}
		}
		runID, stepID := g.run.ID, id
		j := models.Job{JobDefinitionID: st.JobDefinitionID, ScheduledAt: now, RunAt: now, Status: models.JobPending,
			Params: params, RunID: &runID, StepID: &stepID, RunInputs: doc, CreatedAt: now, UpdatedAt: now}
		if st.MaxAttempts != nil {
			j.MaxAttempts = *st.MaxAttempts
		}
		jobs = append(jobs, j)
	}
	if err := tx.CreateInBatches(&jobs, 200).Error; err != nil {
		return fmt.Errorf("write the jobs of run %d's steps: %w", g.run.ID, err)
	}
	return nil
}

// stepDefaults reads the default params of the definitions of the ready
// steps that have params of their own (to merge them in): none for steps
// without.
func (s *Store) stepDefaults(tx *gorm.DB, g *runGraph, ready []int64) (map[int64]models.JSON, error) {
	var defIDs []int64
	for _, id := range ready {
		if st := g.byID[id]; len(st.Params) > 0 {
			defIDs = append(defIDs, st.JobDefinitionID)
		}
	}
	if len(defIDs) == 0 {
		return nil, nil
	}
	var defs []models.JobDefinition
	for c := range slices.Chunk(defIDs, 500) {
		var part []models.JobDefinition
		if err := tx.Select("id", "default_params").Where("id IN ?", c).Find(&part).Error; err != nil {
			return nil, fmt.Errorf("read the definitions of run %d's steps: %w", g.run.ID, err)
		}
		defs = append(defs, part...)
	}
	defaults := make(map[int64]models.JSON, len(defs))
	for _, df := range defs {
		defaults[df.ID] = df.DefaultParams
	}
	return defaults, nil
}

// upstreamResults reads the results of the steps that ready steps wait on.
func (s *Store) upstreamResults(tx *gorm.DB, g *runGraph, d *runDecision) (map[int64]models.StepResult, error) {
	ready := make(map[int64]bool, len(d.ready))
	for _, id := range d.ready {
		ready[id] = true
	}
	out := map[int64]models.StepResult{}
	var jobIDs []int64
	for _, e := range g.edges {
		if !ready[e.ToStepID] {
			continue
		}
		if _, done := out[e.FromStepID]; done {
			continue
		}
		r := models.StepResult{State: d.states[e.FromStepID]}
		if j := g.jobs[e.FromStepID]; j != nil && j.JobID != nil {
			r.JobID = *j.JobID
			jobIDs = append(jobIDs, *j.JobID)
		}
		out[e.FromStepID] = r
	}
	if len(jobIDs) == 0 {
		return out, nil
	}
	var rows []struct {
		ID     int64
		StepID int64
		Result *string
		Error  *string
	}
	for c := range slices.Chunk(jobIDs, 500) {
		var part []struct {
			ID     int64
			StepID int64
			Result *string
			Error  *string
		}
		if err := tx.Raw(`SELECT id, step_id, result, error FROM jobs WHERE id IN ?`, c).Scan(&part).Error; err != nil {
			return nil, fmt.Errorf("read the results of run %d's upstream steps: %w", g.run.ID, err)
		}
		rows = append(rows, part...)
	}
	for _, r := range rows {
		res, ok := out[r.StepID]
		if !ok {
			continue
		}
		if r.Result != nil {
			res.Result = truncateUTF8(*r.Result, maxUpstreamResultBytes)
		}
		if r.Error != nil {
			res.Error = truncateUTF8(*r.Error, maxUpstreamResultBytes)
		}
		out[r.StepID] = res
	}
	return out, nil
}

// advanceRunsOf decides, inside a completion's transaction, the runs of
// the outcomes written, in id order (so that two batches lock their runs
// in the same order). With written nil (every outcome was written as it
// is) a run whose outcomes all say their step is given them, which may
// spare reading its other steps (see localReady).
func (s *Store) advanceRunsOf(tx *gorm.DB, outs []chimedb.JobOutcome, written map[int64]bool, now time.Time) error {
	byRun := map[int64][]chimedb.JobOutcome{}
	whole := map[int64]bool{} // runs decided from all their steps' jobs
	var ids []int64
	for i := range outs {
		o := &outs[i]
		if o.RunID == 0 || !o.Status.Finished() || (written != nil && !written[o.ID]) {
			continue
		}
		if _, seen := byRun[o.RunID]; !seen {
			ids = append(ids, o.RunID)
		}
		byRun[o.RunID] = append(byRun[o.RunID], *o)
		if written != nil || o.StepID == 0 {
			whole[o.RunID] = true
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		done := byRun[id]
		if whole[id] {
			done = nil
		}
		if err := s.advanceRun(tx, id, done, now); err != nil {
			return err
		}
	}
	return nil
}
