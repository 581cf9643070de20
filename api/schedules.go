package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/scheduleengine"
	"github.com/chimesched/chime/trigger"
	"github.com/chimesched/chime/validate"
)

// previewFires is how many fire times a schedule shows.
const previewFires = 5

// ScheduleView is a schedules row as the API shows it: the columns plus
// the next fire times, so an admin can check a cron expression and time zone.
type ScheduleView struct {
	models.Schedule
	// CatchUpOnResume is, for a paused schedule that missed fires while
	// paused, the catch-up that resuming it now writes at once, before
	// NextFires. Only in the answers about one schedule (show, create,
	// update, pause, resume); absent when resuming writes none.
	CatchUpOnResume *CatchUpOnResume `json:"catch_up_on_resume,omitempty"`
	// NextFires are the next fire times after now, in UTC; empty when the
	// schedule will not fire (completed, invalid, past its end, no runs left).
	NextFires []time.Time `json:"next_fires"`
	Validity
}

// CatchUpOnResume is scheduleengine.PreviewResume's answer: the engine's
// own computation of what a resume writes.
type CatchUpOnResume struct {
	// ScheduledAt is the catch-up job's scheduled_at: the latest missed
	// fire (under fire_all, that of the latest catch-up job).
	ScheduledAt time.Time `json:"scheduled_at"`
	// MissedFires is how many missed fires it collapses (its missed_fires;
	// under fire_all, one per job).
	MissedFires int `json:"missed_fires"`
	// Jobs is how many catch-up jobs: 1 under fire_once, one per missed
	// fire (up to scheduleengine.fire_all_cap) under fire_all.
	Jobs int `json:"jobs"`
}

var scheduleStatuses = []string{string(models.ScheduleActive), string(models.SchedulePaused), string(models.ScheduleCompleted), string(models.ScheduleInvalid)}

// views adds the next fire times to rows; with one (the answer about a
// single schedule), the catch-up a paused one's resume would write too.
func (s *Server) views(r *http.Request, rows []models.Schedule, one bool) ([]ScheduleView, error) {
	ctx := r.Context()
	ids := make([]int64, len(rows))
	for i := range rows {
		ids[i] = rows[i].ID
	}
	trig, err := s.st.Admin().ScheduleTriggers(ctx, ids)
	if err != nil {
		return nil, err
	}
	var calIDs []int64
	for i := range rows {
		if rows[i].CalendarID != nil {
			calIDs = append(calIDs, *rows[i].CalendarID)
		}
	}
	cals, err := s.st.Admin().Calendars(ctx, calIDs)
	if err != nil {
		return nil, err
	}
	now := s.now()
	out := make([]ScheduleView, len(rows))
	for i := range rows {
		out[i] = ScheduleView{Schedule: rows[i], NextFires: []time.Time{}}
		row := &out[i].Schedule
		out[i].Validity = s.shown(r, "schedules", row.ID, "params", &row.Params)
		if row.Status != models.ScheduleActive && row.Status != models.SchedulePaused {
			continue
		}
		var cal *models.Calendar
		if row.CalendarID != nil {
			cal = cals[*row.CalendarID]
		}
		t, err := trigger.New(row, cal)
		if err != nil {
			continue
		}
		left := -1 // runs left; -1: no bound
		tt, hasTrig := trig[row.ID]
		if hasTrig && tt.RemainingCount != nil {
			left = int(max(*tt.RemainingCount, 0))
		} else if row.MaxRuns != nil {
			left = max(*row.MaxRuns, 0)
		}
		if one && row.Status == models.SchedulePaused {
			var ttp *models.TimeTrigger
			if hasTrig {
				ttp = &tt
			}
			c, err := s.catchUpOnResume(ctx, row, ttp, cal, now)
			if err != nil {
				return nil, err
			}
			if out[i].CatchUpOnResume = c; c != nil && left >= 0 {
				left = max(left-c.Jobs, 0) // the catch-up uses runs up
			}
		}
		n := previewFires
		if left >= 0 {
			n = min(n, left)
		}
		out[i].NextFires = nextFires(t, now, n)
	}
	return out, nil
}

// catchUpOnResume asks the schedule engine what resuming row at now
// writes at once; nil when nothing.
func (s *Server) catchUpOnResume(ctx context.Context, row *models.Schedule, tt *models.TimeTrigger, cal *models.Calendar, now time.Time) (*CatchUpOnResume, error) {
	var def *models.JobDefinition
	var wf *models.Workflow
	if row.WorkflowID != nil { // its catch-up is a run
		ws, ok := s.st.(chimedb.WorkflowStore)
		if !ok {
			return nil, nil
		}
		g, err := ws.GetWorkflow(ctx, *row.WorkflowID)
		if errors.Is(err, chimedb.ErrNotFound) {
			return nil, nil // the engine would mark it invalid
		}
		if err != nil {
			return nil, err
		}
		wf = &g.Workflow
	} else {
		d, err := s.st.Admin().GetDefinition(ctx, row.JobDefinitionID)
		if errors.Is(err, chimedb.ErrNotFound) {
			return nil, nil // the engine would mark it invalid
		}
		if err != nil {
			return nil, err
		}
		def = d
	}
	se := s.cfg.Settings.ScheduleEngine
	opts := scheduleengine.ResumeOptions{MisfireThreshold: se.MisfireThreshold.D(), FireAllCap: se.FireAllCap}
	if row.Concurrency == models.ConcurrencyForbid {
		busy, err := s.st.UnfinishedSchedules(ctx, []int64{row.ID})
		if err != nil {
			return nil, err
		}
		opts.Busy = busy[row.ID]
	}
	c, ok := scheduleengine.PreviewResume(chimedb.ScheduleRow{Schedule: *row, Definition: def, Workflow: wf, Trigger: tt, Calendar: cal}, opts, now)
	if !ok {
		return nil, nil
	}
	return &CatchUpOnResume{ScheduledAt: c.ScheduledAt.UTC(), MissedFires: c.MissedFires, Jobs: c.Jobs}, nil
}

func (s *Server) view(r *http.Request, row *models.Schedule) (*ScheduleView, error) {
	v, err := s.views(r, []models.Schedule{*row}, true)
	if err != nil {
		return nil, err
	}
	return &v[0], nil
}

func (s *Server) listSchedules(w http.ResponseWriter, r *http.Request) *apiError {
	p, e := listQuery(r, []string{"name", "status", "job_definition_id", "since", "until"}, scheduleStatuses)
	if e != nil {
		return e
	}
	rows, err := s.st.Admin().ListSchedules(r.Context(), p)
	if err != nil {
		return s.fromStore(r, err, "a schedule")
	}
	page := pageOf(rows, p, func(s *models.Schedule) int64 { return s.ID })
	items, err := s.views(r, page.Items, false)
	if err != nil {
		return s.fromStore(r, err, "a schedule")
	}
	s.writeJSON(w, r, http.StatusOK, List[ScheduleView]{Items: items, NextCursor: page.NextCursor})
	return nil
}

func (s *Server) getSchedule(w http.ResponseWriter, r *http.Request) *apiError {
	id, e := pathID(r, "schedule")
	if e != nil {
		return e
	}
	row, err := s.st.Admin().GetSchedule(r.Context(), id)
	if err != nil {
		return s.fromStore(r, err, "a schedule")
	}
	return s.writeSchedule(w, r, http.StatusOK, row)
}

func (s *Server) writeSchedule(w http.ResponseWriter, r *http.Request, status int, row *models.Schedule) *apiError {
	v, err := s.view(r, row)
	if err != nil {
		return s.fromStore(r, err, "a schedule")
	}
	s.writeJSON(w, r, status, v)
	return nil
}

// workflowFor resolves the workflow a schedule request names (by name in
// req.Workflow, or workflow_id) and checks that it exists. On an update
// (cur, the stored row), naming the other kind of target than the row's
// switches to it: the row's old target is dropped, as a schedule names
// exactly one.
func (s *Server) workflowFor(r *http.Request, req *validate.ScheduleRequest, cur *models.Schedule) *apiError {
	if cur != nil {
		newWF := req.Workflow != nil || !sameID(req.WorkflowID, cur.WorkflowID)
		newDef := req.JobDefinitionID != cur.JobDefinitionID
		switch {
		case newWF && !newDef && req.JobDefinitionID != 0 && (req.Workflow == nil || *req.Workflow != ""):
			req.JobDefinitionID = 0
		case newDef && !newWF && req.JobDefinitionID != 0:
			req.WorkflowID = nil
		}
	}
	if req.Workflow == nil && req.WorkflowID == nil {
		return nil
	}
	ws, e := s.workflows()
	if e != nil {
		return e
	}
	if req.Workflow != nil {
		list, err := ws.ListWorkflows(r.Context())
		if err != nil {
			return s.fromStore(r, err, "a workflow")
		}
		req.WorkflowID = nil
		for i := range list {
			if list[i].Name == *req.Workflow {
				req.WorkflowID = &list[i].ID
			}
		}
		if req.WorkflowID == nil {
			return badRequest("workflow", "workflow %q does not exist", *req.Workflow)
		}
		return nil
	}
	if *req.WorkflowID <= 0 {
		return nil // Validate says why
	}
	if _, err := ws.GetWorkflow(r.Context(), *req.WorkflowID); errors.Is(err, chimedb.ErrNotFound) {
		return badRequest("workflow_id", "workflow %d does not exist", *req.WorkflowID)
	} else if err != nil {
		return s.fromStore(r, err, "a workflow")
	}
	return nil
}

func sameID(a, b *int64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// definitionFor loads the definition a schedule request names; a missing
// one is nil, for validateSchedule to report on the right field.
func (s *Server) definitionFor(r *http.Request, id int64) (*models.JobDefinition, *apiError) {
	if id <= 0 {
		return nil, nil
	}
	d, err := s.st.Admin().GetDefinition(r.Context(), id)
	if errors.Is(err, chimedb.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, s.fromStore(r, err, "a job definition")
	}
	return d, nil
}

// createSchedule writes a schedule; with ?dry_run=true it only validates
// and answers 200 with the row it would write and its next fire times.
func (s *Server) createSchedule(w http.ResponseWriter, r *http.Request) *apiError {
	dryRun, e := dryRunParam(r)
	if e != nil {
		return e
	}
	req := validate.NewScheduleRequest()
	if e := decodeBody(w, r, req); e != nil {
		return e
	}
	if e := s.workflowFor(r, req, nil); e != nil {
		return e
	}
	def, e := s.definitionFor(r, req.JobDefinitionID)
	if e != nil {
		return e
	}
	if e := s.mayUseDefinition(r, def, "job_definition_id", true); e != nil {
		return e
	}
	cal, e := s.calendarFor(r, req)
	if e != nil {
		return e
	}
	row, _, e := validateSchedule(s.cfg.Registry, req, def, cal, s.now())
	if e != nil {
		return e
	}
	if dryRun {
		return s.writeSchedule(w, r, http.StatusOK, row)
	}
	if err := s.st.Admin().CreateSchedule(r.Context(), row); err != nil {
		if errors.Is(err, chimedb.ErrNoDefinition) {
			return badRequest("job_definition_id", "job definition %d does not exist", row.JobDefinitionID)
		}
		if errors.Is(err, chimedb.ErrNoWorkflow) {
			return badRequest("workflow_id", "workflow %d does not exist", *row.WorkflowID)
		}
		if errors.Is(err, chimedb.ErrNoCalendar) {
			return badRequest("calendar_id", "calendar %d does not exist", *row.CalendarID)
		}
		return s.fromStore(r, err, "a schedule")
	}
	s.schedulesChanged(row.ID)
	w.Header().Set("Location", Prefix+"/schedules/"+itoa(row.ID))
	return s.writeSchedule(w, r, http.StatusCreated, row)
}

func dryRunParam(r *http.Request) (bool, *apiError) {
	q := r.URL.Query()
	for name := range q {
		if name != "dry_run" {
			return false, badRequest(name, "unknown query parameter %q (accepted: dry_run)", name)
		}
	}
	switch v := q.Get("dry_run"); v {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	default:
		return false, badRequest("dry_run", "dry_run must be true or false, got %q", v)
	}
}

// updateSchedule applies the body's fields over the stored row (absent
// keys keep their value, null clears a nullable column) and validates the
// result as a whole. Editing an invalid or completed schedule makes it
// active again unless the body sets status: the edit is how an admin fixes
// or extends it, and the engine re-judges it at once.
func (s *Server) updateSchedule(w http.ResponseWriter, r *http.Request) *apiError {
	id, e := pathID(r, "schedule")
	if e != nil {
		return e
	}
	admin := s.st.Admin()
	cur, err := admin.GetSchedule(r.Context(), id)
	if err != nil {
		return s.fromStore(r, err, "a schedule")
	}
	req := validate.ScheduleRequestOf(cur)
	if cur.Status == models.ScheduleInvalid || cur.Status == models.ScheduleCompleted {
		req.Status = models.ScheduleActive
	}
	if e := decodeBody(w, r, req); e != nil {
		return e
	}
	if e := s.workflowFor(r, req, cur); e != nil {
		return e
	}
	def, e := s.definitionFor(r, req.JobDefinitionID)
	if e != nil {
		return e
	}
	if e := s.mayUseDefinition(r, def, "job_definition_id", true); e != nil {
		return e
	}
	cal, e := s.calendarFor(r, req)
	if e != nil {
		return e
	}
	row, _, e := validateSchedule(s.cfg.Registry, req, def, cal, cur.CreatedAt)
	if e != nil {
		return e
	}
	row.ID = id
	if err := admin.UpdateSchedule(r.Context(), row); err != nil {
		if errors.Is(err, chimedb.ErrNoDefinition) {
			return badRequest("job_definition_id", "job definition %d does not exist", row.JobDefinitionID)
		}
		if errors.Is(err, chimedb.ErrNoWorkflow) {
			return badRequest("workflow_id", "workflow %d does not exist", *row.WorkflowID)
		}
		if errors.Is(err, chimedb.ErrNoCalendar) {
			return badRequest("calendar_id", "calendar %d does not exist", *row.CalendarID)
		}
		return s.fromStore(r, err, "a schedule")
	}
	s.schedulesChanged(id)
	return s.getSchedule(w, r)
}

func (s *Server) deleteSchedule(w http.ResponseWriter, r *http.Request) *apiError {
	id, e := pathID(r, "schedule")
	if e != nil {
		return e
	}
	if err := s.st.Admin().DeleteSchedule(r.Context(), id); err != nil {
		return s.fromStore(r, err, "a schedule")
	}
	s.schedulesChanged(id)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) pauseSchedule(w http.ResponseWriter, r *http.Request) *apiError {
	return s.setScheduleStatus(w, r, models.SchedulePaused, models.ScheduleActive)
}

func (s *Server) resumeSchedule(w http.ResponseWriter, r *http.Request) *apiError {
	return s.setScheduleStatus(w, r, models.ScheduleActive, models.SchedulePaused)
}

// setScheduleStatus pauses or resumes. Asking for the state a schedule is
// already in succeeds without a change; a completed or invalid schedule is
// a 409, since pausing or resuming it cannot mean anything.
func (s *Server) setScheduleStatus(w http.ResponseWriter, r *http.Request, to, from models.ScheduleStatus) *apiError {
	id, e := pathID(r, "schedule")
	if e != nil {
		return e
	}
	row, changed, err := s.st.Admin().SetScheduleStatus(r.Context(), id, to, from)
	if err != nil {
		return s.fromStore(r, err, "a schedule")
	}
	if !changed && row.Status != to {
		verb := map[models.ScheduleStatus]string{models.SchedulePaused: "paused", models.ScheduleActive: "resumed"}[to]
		reason := ""
		if row.StatusReason != "" {
			reason = " (" + row.StatusReason + ")"
		}
		return conflict("", "schedule %d is %s%s and cannot be %s; edit it to make it active again", id, row.Status, reason, verb)
	}
	if changed {
		s.schedulesChanged(id)
	}
	return s.writeSchedule(w, r, http.StatusOK, row)
}

// triggerSchedule fires a schedule now: one pending job with
// scheduled_at = now, the definition's defaults merged with the schedule's
// params, and the definition's max_attempts, as the engine would write it.
// It works on a paused schedule too: a manual run is what pause leaves open.
// The body is optional: {"priority": n} overrides the schedule's priority
// for this job.
func (s *Server) triggerSchedule(w http.ResponseWriter, r *http.Request) *apiError {
	id, e := pathID(r, "schedule")
	if e != nil {
		return e
	}
	var req triggerRequest
	if e := decodeOptionalBody(w, r, &req); e != nil {
		return e
	}
	admin := s.st.Admin()
	sch, err := admin.GetSchedule(r.Context(), id)
	if err != nil {
		return s.fromStore(r, err, "a schedule")
	}
	if sch.WorkflowID != nil {
		return s.triggerWorkflowSchedule(w, r, sch, &req)
	}
	def, err := admin.GetDefinition(r.Context(), sch.JobDefinitionID)
	if errors.Is(err, chimedb.ErrNotFound) {
		return conflict("job_definition_id", "schedule %d names job definition %d, which does not exist", id, sch.JobDefinitionID)
	}
	if err != nil {
		return s.fromStore(r, err, "a job definition")
	}
	params, e := mergeParams(def.DefaultParams, sch.Params)
	if e != nil {
		return e
	}
	if e := checkTaskParams(s.cfg.Registry, def.TaskType, "params", params); e != nil {
		return conflict(e.Field, "schedule %d cannot run: %s", id, e.Error.Error)
	}
	prio, e := effectivePriority(req.Priority, sch.Priority, def)
	if e != nil {
		return e
	}
	now := s.now()
	job := &models.Job{
		ScheduleID: &sch.ID, JobDefinitionID: def.ID, ScheduledAt: now, RunAt: now,
		MaxAttempts: max(def.MaxAttempts, 1), Params: params, Priority: prio,
	}
	if err := admin.InsertJob(r.Context(), job, fmt.Sprintf("triggered through the API from schedule %d", id)); err != nil {
		if errors.Is(err, chimedb.ErrConflict) {
			return conflict("", "schedule %d already has a job at %s; try again", id, now.UTC().Format(time.RFC3339Nano))
		}
		return s.fromStore(r, err, "a job")
	}
	s.jobsAdded()
	return s.writeJob(w, r, http.StatusCreated, job.ID)
}

// triggerWorkflowSchedule is triggerSchedule for a schedule of a
// workflow: it starts a run now with the schedule's params and answers
// with the run (201, Location /runs/{id}). A run has no priority of its
// own, so the body's is refused.
func (s *Server) triggerWorkflowSchedule(w http.ResponseWriter, r *http.Request, sch *models.Schedule, req *triggerRequest) *apiError {
	if req.Priority != nil {
		return badRequest("priority", "schedule %d starts workflow runs, which have no priority (their steps' definitions do)", sch.ID)
	}
	ws, e := s.workflows()
	if e != nil {
		return e
	}
	run, err := ws.StartRun(r.Context(), &chimedb.StartRunParams{WorkflowID: *sch.WorkflowID, Params: sch.Params,
		StartedBy: fmt.Sprintf("schedule %s (triggered through the API)", sch.Name)})
	if errors.Is(err, chimedb.ErrNotFound) {
		return conflict("workflow_id", "schedule %d names workflow %d, which does not exist", sch.ID, *sch.WorkflowID)
	}
	if err != nil {
		return s.fromWorkflowStore(r, err, "a run")
	}
	w.Header().Set("Location", Prefix+"/runs/"+itoa(run.ID))
	s.writeJSON(w, r, http.StatusCreated, run)
	return nil
}
