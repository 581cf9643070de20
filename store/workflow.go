package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

var _ chimedb.WorkflowStore = (*Store)(nil)

// CreateWorkflow writes a workflow, its steps and its edges in one
// transaction, after checking them (chimedb.CheckGraph): a bad graph wraps
// chimedb.ErrInvalid, a step naming no definition chimedb.ErrNoDefinition,
// a duplicate name chimedb.ErrConflict, and nothing is written.
func (s *Store) CreateWorkflow(ctx context.Context, spec *chimedb.WorkflowSpec) (*chimedb.WorkflowGraph, error) {
	name := strings.TrimSpace(spec.Name)
	if name == "" || len(name) > 191 {
		return nil, fmt.Errorf("workflow name must be 1 to 191 bytes: %w", chimedb.ErrInvalid)
	}
	if len(spec.Description) > 2048 {
		return nil, fmt.Errorf("workflow description is longer than 2048 bytes: %w", chimedb.ErrInvalid)
	}
	policy := spec.FailurePolicy
	if policy == "" {
		policy = models.FailStop
	}
	if policy != models.FailStop && policy != models.FailContinue {
		return nil, fmt.Errorf("failure_policy %q is not stop or continue: %w", policy, chimedb.ErrInvalid)
	}
	notifyOn, emails, err := checkRunNotify(spec)
	if err != nil {
		return nil, err
	}
	if len(spec.Steps) > chimedb.MaxWorkflowSteps || len(spec.Edges) > chimedb.MaxWorkflowEdges {
		return nil, fmt.Errorf("%d steps and %d edges; a workflow has at most %d and %d: %w",
			len(spec.Steps), len(spec.Edges), chimedb.MaxWorkflowSteps, chimedb.MaxWorkflowEdges, chimedb.ErrInvalid)
	}
	var id int64
	err = s.InTx(ctx, func(tx *gorm.DB) error {
		steps, err := s.resolveSteps(tx, spec.Steps)
		if err != nil {
			return err
		}
		index := make(map[string]int64, len(steps))
		for i := range steps {
			steps[i].ID = int64(i + 1) // provisional, for the check
			index[steps[i].Name] = steps[i].ID
		}
		edges := make([]models.WorkflowEdge, 0, len(spec.Edges))
		for _, e := range spec.Edges {
			from, to := index[e.From], index[e.To]
			if from == 0 || to == 0 {
				return fmt.Errorf("edge %q → %q names a step the workflow does not have: %w", e.From, e.To, chimedb.ErrInvalid)
			}
			cond := e.Condition
			if cond == "" {
				cond = models.EdgeSuccess
			}
			edges = append(edges, models.WorkflowEdge{FromStepID: from, ToStepID: to, Condition: cond})
		}
		if err := chimedb.CheckGraph(steps, edges); err != nil {
			return fmt.Errorf("%w: %w", err, chimedb.ErrInvalid)
		}
		now := DBTime(time.Now())
		wf := models.Workflow{Name: name, Description: spec.Description, FailurePolicy: policy, NotifyOn: notifyOn, NotifyEmails: emails,
			CreatedAt: now, UpdatedAt: now}
		if err := tx.Create(&wf).Error; err != nil {
			return fmt.Errorf("insert workflow %q: %w", name, conflict(err))
		}
		id = wf.ID
		real := make(map[int64]int64, len(steps))
		for i := range steps {
			provisional := steps[i].ID
			steps[i].ID, steps[i].WorkflowID, steps[i].CreatedAt = 0, wf.ID, now
			if err := tx.Create(&steps[i]).Error; err != nil {
				return fmt.Errorf("insert step %q: %w", steps[i].Name, conflict(err))
			}
			real[provisional] = steps[i].ID
		}
		for i := range edges {
			edges[i].WorkflowID, edges[i].FromStepID, edges[i].ToStepID = wf.ID, real[edges[i].FromStepID], real[edges[i].ToStepID]
		}
		if len(edges) > 0 {
			if err := tx.CreateInBatches(&edges, 200).Error; err != nil {
				return fmt.Errorf("insert edges: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.GetWorkflow(ctx, id)
}

// resolveSteps turns step specs into rows, reading the definitions they
// name.
func (s *Store) resolveSteps(tx *gorm.DB, specs []chimedb.StepSpec) ([]models.WorkflowStep, error) {
	var names []string
	var ids []int64
	for _, sp := range specs {
		if sp.DefinitionID > 0 {
			ids = append(ids, sp.DefinitionID)
		} else {
			names = append(names, sp.Definition)
		}
	}
	var defs []models.JobDefinition
	if len(names) > 0 || len(ids) > 0 {
		q := tx.Select("id", "name")
		switch {
		case len(names) > 0 && len(ids) > 0:
			q = q.Where("name IN ? OR id IN ?", names, ids)
		case len(names) > 0:
			q = q.Where("name IN ?", names)
		default:
			q = q.Where("id IN ?", ids)
		}
		if err := q.Find(&defs).Error; err != nil {
			return nil, fmt.Errorf("read job definitions: %w", err)
		}
	}
	byName := make(map[string]int64, len(defs))
	byID := make(map[int64]bool, len(defs))
	for _, d := range defs {
		byName[d.Name], byID[d.ID] = d.ID, true
	}
	steps := make([]models.WorkflowStep, 0, len(specs))
	for _, sp := range specs {
		def := sp.DefinitionID
		if def > 0 && !byID[def] {
			return nil, fmt.Errorf("step %q: job definition %d: %w", sp.Name, def, chimedb.ErrNoDefinition)
		}
		if def == 0 {
			if def = byName[sp.Definition]; def == 0 {
				return nil, fmt.Errorf("step %q: job definition %q: %w", sp.Name, sp.Definition, chimedb.ErrNoDefinition)
			}
		}
		if _, err := models.MergeParams(nil, sp.Params); err != nil {
			return nil, fmt.Errorf("step %q: %w: %w", sp.Name, err, chimedb.ErrInvalid)
		}
		wait := sp.WaitFor
		if wait == "" {
			wait = models.WaitAll
		}
		steps = append(steps, models.WorkflowStep{Name: strings.TrimSpace(sp.Name), JobDefinitionID: def, Params: sp.Params,
			TimeoutSeconds: sp.TimeoutSeconds, MaxAttempts: sp.MaxAttempts, WaitFor: wait})
	}
	return steps, nil
}

// GetWorkflow returns a workflow with its steps and edges, or wraps
// chimedb.ErrNotFound.
func (s *Store) GetWorkflow(ctx context.Context, id int64) (*chimedb.WorkflowGraph, error) {
	db := s.db.WithContext(ctx)
	g := &chimedb.WorkflowGraph{}
	if err := first(db.Where("id = ?", id), &g.Workflow); err != nil {
		return nil, fmt.Errorf("workflow %d: %w", id, err)
	}
	if err := db.Where("workflow_id = ?", id).Order("id").Find(&g.Steps).Error; err != nil {
		return nil, fmt.Errorf("steps of workflow %d: %w", id, err)
	}
	if err := db.Where("workflow_id = ?", id).Order("id").Find(&g.Edges).Error; err != nil {
		return nil, fmt.Errorf("edges of workflow %d: %w", id, err)
	}
	return g, nil
}

// ListWorkflows returns every workflow by name.
func (s *Store) ListWorkflows(ctx context.Context) ([]models.Workflow, error) {
	var out []models.Workflow
	if err := s.db.WithContext(ctx).Order("name").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list workflows: %w", err)
	}
	return out, nil
}

// DeleteWorkflow deletes a workflow with its steps and edges; one with a
// run not over wraps chimedb.ErrInUse. Its finished runs are deleted too:
// their jobs stay, as jobs of a run that no longer exists.
func (s *Store) DeleteWorkflow(ctx context.Context, id int64) error {
	return s.InTx(ctx, func(tx *gorm.DB) error {
		var wf models.Workflow
		if err := first(s.forUpdate(tx.Where("id = ?", id)), &wf); err != nil {
			return fmt.Errorf("workflow %d: %w", id, err)
		}
		var live int64
		if err := tx.Model(&models.WorkflowRun{}).Where("workflow_id = ? AND status IN ?", id,
			[]models.RunStatus{models.RunPending, models.RunRunning, models.RunPaused}).Count(&live).Error; err != nil {
			return err
		}
		if live > 0 {
			return fmt.Errorf("workflow %q has %d runs not over: %w", wf.Name, live, chimedb.ErrInUse)
		}
		var scheds int64
		if err := tx.Model(&models.Schedule{}).Where("workflow_id = ?", id).Count(&scheds).Error; err != nil {
			return err
		}
		if scheds > 0 {
			return fmt.Errorf("workflow %q is started by %d schedules; delete them first: %w", wf.Name, scheds, chimedb.ErrInUse)
		}
		for _, q := range []string{
			"DELETE FROM workflow_run_steps WHERE run_id IN (SELECT id FROM workflow_runs WHERE workflow_id = ?)",
			"DELETE FROM workflow_runs WHERE workflow_id = ?",
			"DELETE FROM workflow_edges WHERE workflow_id = ?",
			"DELETE FROM workflow_steps WHERE workflow_id = ?",
			"DELETE FROM workflows WHERE id = ?",
		} {
			if err := tx.Exec(q, id).Error; err != nil {
				return fmt.Errorf("delete workflow %d: %w", id, err)
			}
		}
		return nil
	})
}

// StartRun writes a run and decides it in the same transaction, so its
// first steps' jobs are written when it returns.
func (s *Store) StartRun(ctx context.Context, p *chimedb.StartRunParams) (*models.WorkflowRun, error) {
	if _, err := models.MergeParams(nil, p.Params); err != nil {
		return nil, fmt.Errorf("run params: %w: %w", err, chimedb.ErrInvalid)
	}
	var run models.WorkflowRun
	err := s.InTx(ctx, func(tx *gorm.DB) error {
		var err error
		run, err = s.startRunTx(tx, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &run, nil
}

func (s *Store) startRunTx(tx *gorm.DB, p *chimedb.StartRunParams) (models.WorkflowRun, error) {
	var wfs []lockedWorkflow
	q := tx.Model(&models.Workflow{}).Select("workflows.*, "+stampOf("workflows.id")).Where("id = ?", p.WorkflowID)
	what := fmt.Sprint(p.WorkflowID)
	if p.WorkflowID == 0 {
		q, what = tx.Model(&models.Workflow{}).Select("workflows.*, "+stampOf("workflows.id")).Where("name = ?", p.Workflow), fmt.Sprintf("%q", p.Workflow)
	}
	if err := q.Limit(1).Scan(&wfs).Error; err != nil {
		return models.WorkflowRun{}, fmt.Errorf("workflow %s: %w", what, err)
	}
	if len(wfs) == 0 {
		return models.WorkflowRun{}, fmt.Errorf("workflow %s: %w", what, chimedb.ErrNotFound)
	}
	wf, stamp := &wfs[0].Workflow, ""
	if wfs[0].WfStamp != nil {
		stamp = *wfs[0].WfStamp
	}
	now := DBTime(time.Now())
	// Written running: it is decided below, in this transaction, which
	// holds its row's lock since the INSERT.
	run := models.WorkflowRun{WorkflowID: wf.ID, Status: models.RunRunning, Generation: 1, Params: p.Params,
		StartedBy: truncateUTF8(p.StartedBy, 191), StartedAt: &now, CreatedAt: now, UpdatedAt: now}
	if err := tx.Create(&run).Error; err != nil {
		return run, fmt.Errorf("insert run of workflow %q: %w", wf.Name, err)
	}
	if err := s.decideRun(tx, &run, stamp, nil, true, now); err != nil {
		return run, err
	}
	return run, nil
}

// lockedWorkflow is a workflow's row with its stamp (see lockRun).
type lockedWorkflow struct {
	models.Workflow
	WfStamp *string `gorm:"column:wf_stamp"`
}

// GetRun returns a run with the state of every step (see runGraph.decide;
// a step a finished or stopped run will never write shows canceled).
func (s *Store) GetRun(ctx context.Context, id int64) (*chimedb.RunView, error) {
	var v *chimedb.RunView
	err := s.InTx(ctx, func(tx *gorm.DB) error {
		var run models.WorkflowRun
		if err := first(tx.Where("id = ?", id), &run); err != nil {
			return fmt.Errorf("run %d: %w", id, err)
		}
		g, err := s.loadRunGraph(tx, &run, "")
		if err != nil {
			return err
		}
		v = &chimedb.RunView{Run: run, Workflow: g.wf, Edges: g.edges}
		if g.bad != "" {
			for _, st := range g.steps {
				v.Steps = append(v.Steps, chimedb.RunStepView{Step: st, State: models.StepWaiting})
			}
			return nil
		}
		d := g.decide()
		halted := run.Status.Finished() || g.stopped(d)
		var jobIDs []int64
		for _, j := range g.jobs {
			if j.JobID != nil {
				jobIDs = append(jobIDs, *j.JobID)
			}
		}
		jobs := map[int64]*models.Job{}
		for c := range slices.Chunk(jobIDs, 500) {
			var part []models.Job
			if err := tx.Where("id IN ?", c).Find(&part).Error; err != nil {
				return fmt.Errorf("jobs of run %d: %w", id, err)
			}
			for i := range part {
				jobs[part[i].ID] = &part[i]
			}
		}
		for _, st := range g.steps {
			sv := chimedb.RunStepView{Step: st, State: d.states[st.ID]}
			if j := g.jobs[st.ID]; j != nil && j.JobID != nil {
				sv.Job = jobs[*j.JobID]
			}
			if sv.State == models.StepWaiting && halted {
				sv.State = models.StepCanceled
			}
			v.Steps = append(v.Steps, sv)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// ListRuns returns runs, newest first.
func (s *Store) ListRuns(ctx context.Context, p *chimedb.ListRunsParams) ([]models.WorkflowRun, error) {
	q := s.db.WithContext(ctx).Order("id DESC")
	if p.WorkflowID > 0 {
		q = q.Where("workflow_id = ?", p.WorkflowID)
	}
	if p.Status != "" {
		q = q.Where("status = ?", p.Status)
	}
	limit := p.Limit
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	var out []models.WorkflowRun
	if err := q.Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return out, nil
}

// CancelRun ends a run that is not over as canceled: its pending jobs
// are canceled, its running ones asked to stop (jobs.control = stop, as
// ControlJob does), and no step starts after. Over already: wraps
// chimedb.ErrRunState.
func (s *Store) CancelRun(ctx context.Context, id int64, reason string) (*models.WorkflowRun, error) {
	if reason == "" {
		reason = "canceled"
	}
	return s.changeRun(ctx, id, func(tx *gorm.DB, run *models.WorkflowRun, now time.Time) error {
		if run.Status.Finished() {
			return fmt.Errorf("run %d is already %s: %w", id, run.Status, chimedb.ErrRunState)
		}
		if err := s.endRun(tx, id, map[string]any{}, models.RunCanceled, reason, now, nil); err != nil {
			return err
		}
		var pending []int64
		if err := tx.Raw(`SELECT id FROM `+s.jobsByID()+` WHERE run_id = ? AND status = ?`+s.lockClause(), id, models.JobPending).
			Scan(&pending).Error; err != nil {
			return fmt.Errorf("jobs of run %d: %w", id, err)
		}
		if len(pending) > 0 {
			if err := tx.Exec(`UPDATE jobs SET status = ?, control = '', finished_at = ? WHERE id IN ? AND status = ?`,
				models.JobCanceled, now, pending, models.JobPending).Error; err != nil {
				return fmt.Errorf("cancel the jobs of run %d: %w", id, err)
			}
			if err := s.enqueueNotices(tx, pending); err != nil {
				return err
			}
		}
		if err := tx.Exec(`UPDATE jobs SET control = ? WHERE run_id = ? AND status IN ?`,
			models.ControlStop, id, activeStatuses).Error; err != nil {
			return fmt.Errorf("stop the jobs of run %d: %w", id, err)
		}
		return nil
	})
}

// RerunRun runs a failed or canceled run again from the steps that did
// not succeed: the run moves to its next generation, in which the
// succeeded steps keep their jobs and the others (and what they skipped)
// are decided afresh. Otherwise wraps chimedb.ErrRunState.
func (s *Store) RerunRun(ctx context.Context, id int64) (*models.WorkflowRun, error) {
	return s.changeRun(ctx, id, func(tx *gorm.DB, run *models.WorkflowRun, now time.Time) error {
		if run.Status != models.RunFailed && run.Status != models.RunCanceled {
			return fmt.Errorf("run %d is %s; only a failed or canceled run can be run again: %w", id, run.Status, chimedb.ErrRunState)
		}
		if err := tx.Exec(`UPDATE workflow_runs SET status = ?, generation = generation + 1, finished_at = NULL, reason = '' WHERE id = ?`,
			models.RunRunning, id).Error; err != nil {
			return fmt.Errorf("rerun run %d: %w", id, err)
		}
		return s.advanceRun(tx, id, nil, now)
	})
}

// PauseRun stops a pending or running run from writing more steps; the
// steps already written run on. Otherwise wraps chimedb.ErrRunState.
func (s *Store) PauseRun(ctx context.Context, id int64) (*models.WorkflowRun, error) {
	return s.changeRun(ctx, id, func(tx *gorm.DB, run *models.WorkflowRun, now time.Time) error {
		if run.Status != models.RunPending && run.Status != models.RunRunning {
			return fmt.Errorf("run %d is %s; only a pending or running run can be paused: %w", id, run.Status, chimedb.ErrRunState)
		}
		return s.setRun(tx, id, map[string]any{"status": models.RunPaused})
	})
}

// ResumeRun lets a paused run go on, deciding it at once. Otherwise wraps
// chimedb.ErrRunState.
func (s *Store) ResumeRun(ctx context.Context, id int64) (*models.WorkflowRun, error) {
	return s.changeRun(ctx, id, func(tx *gorm.DB, run *models.WorkflowRun, now time.Time) error {
		if run.Status != models.RunPaused {
			return fmt.Errorf("run %d is %s; only a paused run can be resumed: %w", id, run.Status, chimedb.ErrRunState)
		}
		if err := s.setRun(tx, id, map[string]any{"status": models.RunRunning}); err != nil {
			return err
		}
		return s.advanceRun(tx, id, nil, now)
	})
}

// changeRun runs fn on run id, locked, in a transaction, and returns the
// row afterwards.
func (s *Store) changeRun(ctx context.Context, id int64, fn func(tx *gorm.DB, run *models.WorkflowRun, now time.Time) error) (*models.WorkflowRun, error) {
	var out models.WorkflowRun
	err := s.InTx(ctx, func(tx *gorm.DB) error {
		var run models.WorkflowRun
		if err := first(s.forUpdate(tx.Where("id = ?", id)), &run); err != nil {
			return fmt.Errorf("run %d: %w", id, err)
		}
		if err := fn(tx, &run, DBTime(time.Now())); err != nil {
			return err
		}
		out = models.WorkflowRun{}
		return first(tx.Where("id = ?", id), &out)
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// AdvanceRuns decides up to limit runs that no completion will decide:
// pending runs (an INSERT by plain SQL starts a run this way) and running
// runs none of whose jobs is live (their last job ended by a path that
// does not decide runs: a recovery, an admin's SQL, a crash before the
// decision). Each is decided in a transaction of its own; one the
// database refuses to decide fails with the reason, so that it is not
// retried forever. It returns how many runs it decided.
func (s *Store) AdvanceRuns(ctx context.Context, limit int) (int, error) {
	if limit <= 0 {
		limit = 100
	}
	var ids []int64
	if err := s.db.WithContext(ctx).Raw(`SELECT r.id FROM workflow_runs r WHERE r.status = ? OR (r.status = ? AND NOT EXISTS (
		SELECT 1 FROM workflow_run_steps rs JOIN jobs j ON j.id = rs.job_id WHERE rs.run_id = r.id AND j.status IN ?))
		ORDER BY r.id LIMIT ?`, models.RunPending, models.RunRunning, liveStatuses, limit).Scan(&ids).Error; err != nil {
		return 0, fmt.Errorf("find runs to decide: %w", err)
	}
	n := 0
	for _, id := range ids {
		err := s.InTx(ctx, func(tx *gorm.DB) error { return s.advanceRun(tx, id, nil, DBTime(time.Now())) })
		if err == nil {
			n++
			continue
		}
		if ctx.Err() != nil || transient(err) {
			return n, err
		}
		s.log.WithError(err).WithField("run_id", id).Error("could not decide this workflow run; failing it")
		ferr := s.InTx(ctx, func(tx *gorm.DB) error {
			return s.endRun(tx, id, map[string]any{}, models.RunFailed, "chime could not write its next steps: "+err.Error(), DBTime(time.Now()), nil)
		})
		if ferr != nil {
			return n, errors.Join(err, ferr)
		}
		n++
	}
	return n, nil
}

// CountRunsByStatus counts runs by status, for chime_workflow_runs.
func (s *Store) CountRunsByStatus(ctx context.Context) (map[models.RunStatus]int64, error) {
	var rows []struct {
		Status string
		N      int64
	}
	if err := s.db.WithContext(ctx).Raw(`SELECT status, COUNT(*) AS n FROM workflow_runs GROUP BY status`).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("count runs: %w", err)
	}
	out := make(map[models.RunStatus]int64, len(rows))
	for _, r := range rows {
		out[models.RunStatus(r.Status)] = r.N
	}
	return out, nil
}
