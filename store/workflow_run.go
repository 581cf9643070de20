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
	run   models.WorkflowRun
	wf    models.Workflow
	steps []models.WorkflowStep
	edges []models.WorkflowEdge
	jobs  map[int64]*stepJob // by step id
	// bad says why the graph cannot be run ("" when it can).
	bad string
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

// loadRunGraph reads run's workflow and jobs inside tx. A graph that
// cannot be run (its workflow gone, a cycle, an edge to another
// workflow's step) comes back with bad set.
func (s *Store) loadRunGraph(tx *gorm.DB, run *models.WorkflowRun) (*runGraph, error) {
	g := &runGraph{run: *run, jobs: map[int64]*stepJob{}}
	var wfs []models.Workflow
	if err := tx.Where("id = ?", run.WorkflowID).Limit(1).Find(&wfs).Error; err != nil {
		return nil, fmt.Errorf("read workflow %d: %w", run.WorkflowID, err)
	}
	if len(wfs) == 0 {
		g.bad = fmt.Sprintf("workflow %d does not exist", run.WorkflowID)
		return g, nil
	}
	g.wf = wfs[0]
	if err := tx.Where("workflow_id = ?", run.WorkflowID).Order("id").Limit(chimedb.MaxWorkflowSteps + 1).Find(&g.steps).Error; err != nil {
		return nil, fmt.Errorf("read steps of workflow %d: %w", run.WorkflowID, err)
	}
	if err := tx.Where("workflow_id = ?", run.WorkflowID).Order("id").Limit(chimedb.MaxWorkflowEdges + 1).Find(&g.edges).Error; err != nil {
		return nil, fmt.Errorf("read edges of workflow %d: %w", run.WorkflowID, err)
	}
	if err := chimedb.CheckGraph(g.steps, g.edges); err != nil {
		g.bad = fmt.Sprintf("workflow %q cannot run: %v", g.wf.Name, err)
		return g, nil
	}
	var rows []stepJob
	if err := tx.Raw(`SELECT rs.step_id, rs.generation, rs.job_id, j.status FROM workflow_run_steps rs
		LEFT JOIN jobs j ON j.id = rs.job_id WHERE rs.run_id = ? ORDER BY rs.generation`, run.ID).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("read the steps of run %d: %w", run.ID, err)
	}
	for i := range rows {
		r := &rows[i]
		if r.JobID == nil {
			// A ledger row whose job was never written (a statement
			// refused after the row): the step is not written yet.
			continue
		}
		if r.Generation < run.Generation && r.Status != nil && *r.Status != string(models.JobSucceeded) &&
			models.JobStatus(*r.Status).Finished() {
			// A rerun runs again what did not succeed in an earlier generation.
			continue
		}
		g.jobs[r.StepID] = r
	}
	return g, nil
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
		case e.Condition == models.EdgeAlways,
			e.Condition == models.EdgeSuccess && up == models.StepSucceeded,
			e.Condition == models.EdgeFailure && up == models.StepFailed:
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

// stopped says whether the run writes no more steps: a step failed that
// nothing handles, under the stop policy.
func (g *runGraph) stopped(d *runDecision) bool {
	return len(d.unhandled) > 0 && g.wf.FailurePolicy != models.FailContinue
}

// advanceRun decides run id inside tx, which must commit what it writes:
// it locks the run row (so two transactions that end two upstream steps
// decide the join one after the other, the second seeing the first's
// job), writes the jobs of the steps whose edges now all hold, and ends
// the run when no step is left to run. A run that cannot be run (a bad
// row) fails with the reason. Runs that are paused or over are left
// alone.
func (s *Store) advanceRun(tx *gorm.DB, id int64, now time.Time) error {
	var runs []models.WorkflowRun
	if err := s.forUpdate(tx.Where("id = ?", id)).Limit(1).Find(&runs).Error; err != nil {
		return fmt.Errorf("lock run %d: %w", id, err)
	}
	if len(runs) == 0 {
		return nil
	}
	run := &runs[0]
	if run.Status != models.RunPending && run.Status != models.RunRunning {
		return nil
	}
	set := map[string]any{}
	if run.Status == models.RunPending || run.StartedAt == nil {
		set["status"], set["started_at"] = models.RunRunning, now
	}
	g, err := s.loadRunGraph(tx, run)
	if err != nil {
		return err
	}
	if g.bad == "" {
		if _, err := models.MergeParams(nil, run.Params); err != nil {
			g.bad = fmt.Sprintf("run %d: %v", run.ID, err)
		}
	}
	if g.bad != "" {
		s.log.WithField("run_id", run.ID).Warn("workflow run failed: " + g.bad)
		return s.endRun(tx, run.ID, set, models.RunFailed, g.bad, now)
	}
	d := g.decide()
	if len(d.ready) > 0 && !g.stopped(d) {
		if err := s.writeSteps(tx, g, d, now); err != nil {
			return err
		}
		return s.setRun(tx, run.ID, set)
	}
	if d.live > 0 {
		return s.setRun(tx, run.ID, set)
	}
	if len(d.unhandled) > 0 {
		slices.Sort(d.unhandled)
		return s.endRun(tx, run.ID, set, models.RunFailed, "step "+strings.Join(d.unhandled, ", ")+" failed", now)
	}
	return s.endRun(tx, run.ID, set, models.RunSucceeded, "", now)
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

func (s *Store) endRun(tx *gorm.DB, id int64, set map[string]any, status models.RunStatus, reason string, now time.Time) error {
	set["status"], set["finished_at"], set["reason"] = status, now, truncateUTF8(reason, 2048)
	if err := s.setRun(tx, id, set); err != nil {
		return err
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

// writeSteps writes the job of each ready step: first its ledger row, the
// guard (a row already there with its job written means another
// transaction wrote the step: it is skipped), then the job, then the
// job's id into the ledger row.
func (s *Store) writeSteps(tx *gorm.DB, g *runGraph, d *runDecision, now time.Time) error {
	byID := make(map[int64]*models.WorkflowStep, len(g.steps))
	defIDs := make([]int64, 0, len(d.ready))
	for i := range g.steps {
		byID[g.steps[i].ID] = &g.steps[i]
	}
	for _, id := range d.ready {
		defIDs = append(defIDs, byID[id].JobDefinitionID)
	}
	var defs []models.JobDefinition
	if err := tx.Select("id", "default_params").Where("id IN ?", defIDs).Find(&defs).Error; err != nil {
		return fmt.Errorf("read the definitions of run %d's steps: %w", g.run.ID, err)
	}
	defaults := make(map[int64]models.JSON, len(defs))
	for _, df := range defs {
		defaults[df.ID] = df.DefaultParams
	}
	up, err := s.upstreamResults(tx, g, d)
	if err != nil {
		return err
	}
	in := map[int64][]int64{}
	for _, e := range g.edges {
		in[e.ToStepID] = append(in[e.ToStepID], e.FromStepID)
	}
	gen := g.run.Generation
	for _, id := range d.ready {
		st := byID[id]
		var taken []int64
		if err := tx.Raw(`SELECT job_id FROM workflow_run_steps WHERE run_id = ? AND step_id = ? AND generation = ? AND job_id IS NOT NULL`,
			g.run.ID, id, gen).Scan(&taken).Error; err != nil {
			return fmt.Errorf("read the ledger of run %d: %w", g.run.ID, err)
		}
		if len(taken) > 0 {
			continue
		}
		if err := tx.Exec(`INSERT INTO workflow_run_steps (run_id, step_id, generation, created_at) VALUES (?, ?, ?, ?)`+s.ledgerIgnoreDup(),
			g.run.ID, id, gen, now).Error; err != nil {
			return fmt.Errorf("write the ledger row of run %d step %q: %w", g.run.ID, st.Name, err)
		}
		inputs := models.RunInputs{Run: g.run.ID, Step: st.Name, Params: g.run.Params, TimeoutSeconds: st.TimeoutSeconds}
		for _, from := range in[id] {
			if inputs.Upstream == nil {
				inputs.Upstream = map[string]models.StepResult{}
			}
			inputs.Upstream[byID[from].Name] = up[from]
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
		if err := tx.Create(&j).Error; err != nil {
			return fmt.Errorf("write the job of run %d step %q: %w", g.run.ID, st.Name, err)
		}
		if err := tx.Exec(`UPDATE workflow_run_steps SET job_id = ? WHERE run_id = ? AND step_id = ? AND generation = ? AND job_id IS NULL`,
			j.ID, g.run.ID, id, gen).Error; err != nil {
			return fmt.Errorf("record the job of run %d step %q: %w", g.run.ID, st.Name, err)
		}
	}
	return nil
}

func (s *Store) ledgerIgnoreDup() string {
	if s.dialect == MySQL {
		return " ON DUPLICATE KEY UPDATE run_id = run_id"
	}
	return " ON CONFLICT DO NOTHING"
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
// in the same order).
func (s *Store) advanceRunsOf(tx *gorm.DB, outs []chimedb.JobOutcome, written map[int64]bool, now time.Time) error {
	var ids []int64
	for i := range outs {
		o := &outs[i]
		if o.RunID == 0 || !o.Status.Finished() || (written != nil && !written[o.ID]) {
			continue
		}
		ids = append(ids, o.RunID)
	}
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)
	for _, id := range slices.Compact(ids) {
		if err := s.advanceRun(tx, id, now); err != nil {
			return err
		}
	}
	return nil
}
