package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/tasks"
)

var jobStatuses = []string{
	string(models.JobPending), string(models.JobQueued), string(models.JobRunning), string(models.JobPaused),
	string(models.JobSucceeded), string(models.JobFailed), string(models.JobStopped), string(models.JobCanceled),
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) *apiError {
	p, e := listQuery(r, []string{"status", "schedule_id", "job_definition_id", "since", "until"}, jobStatuses)
	if e != nil {
		return e
	}
	items, err := s.st.Admin().ListJobs(r.Context(), p)
	if err != nil {
		return s.fromStore(r, err, "a job")
	}
	s.writeJSON(w, r, http.StatusOK, viewPage(r, pageOf(items, p, func(j *models.Job) int64 { return j.ID }), s.jobView))
	return nil
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) *apiError {
	id, e := pathID(r, "job")
	if e != nil {
		return e
	}
	return s.writeJob(w, r, http.StatusOK, id)
}

func (s *Server) writeJob(w http.ResponseWriter, r *http.Request, status int, id int64) *apiError {
	j, err := s.st.Admin().GetJob(r.Context(), id)
	if err != nil {
		return s.fromStore(r, err, "a job")
	}
	s.writeJSON(w, r, status, s.jobView(r, j))
	return nil
}

// jobLogs lists a job's log lines oldest first; next_cursor continues after
// the last line shown, so a client can poll it to follow a running job.
// Unlike the other lists, next_cursor is set whenever lines were returned.
// After a succeeded job's derived last line it stands for the last stored
// line before it (models.LogPositionPastOutcome): lines stored later are
// listed still, and the derived one is not listed again.
func (s *Server) jobLogs(w http.ResponseWriter, r *http.Request) *apiError {
	id, e := pathID(r, "job")
	if e != nil {
		return e
	}
	p, e := listQuery(r, nil, nil)
	if e != nil {
		return e
	}
	admin := s.st.Admin()
	if _, err := admin.GetJob(r.Context(), id); err != nil {
		return s.fromStore(r, err, "a job")
	}
	// For logs the cursor is the last id seen and the walk goes up.
	lines, err := admin.ListJobLogs(r.Context(), id, p.BeforeID, p.Limit-1)
	if err != nil {
		return s.fromStore(r, err, "a job")
	}
	out := List[models.JobLog]{Items: lines}
	if out.Items == nil {
		out.Items = []models.JobLog{}
	}
	if n := len(lines); n > 0 {
		out.NextCursor = encodeCursor(logPositionAfter(p.BeforeID, lines))
	} else if p.BeforeID > 0 {
		out.NextCursor = encodeCursor(p.BeforeID)
	}
	s.writeJSON(w, r, http.StatusOK, out)
	return nil
}

// logPositionAfter is the position after lines, listed from position
// after: the last line's id, marked past the derived line once that has
// been listed, now or before (see models.SplitLogPosition).
func logPositionAfter(after int64, lines []models.JobLog) int64 {
	stored, outcomeSeen := models.SplitLogPosition(after)
	for _, l := range lines {
		if l.ID == models.OutcomeLogID {
			outcomeSeen = true
		} else {
			stored = l.ID
		}
	}
	if outcomeSeen && stored != models.OutcomeLogID {
		return models.LogPositionPastOutcome(stored)
	}
	return stored
}

func (s *Server) pauseJob(w http.ResponseWriter, r *http.Request) *apiError {
	return s.controlJob(w, r, models.ControlPause)
}

func (s *Server) resumeJob(w http.ResponseWriter, r *http.Request) *apiError {
	return s.controlJob(w, r, models.ControlResume)
}

func (s *Server) stopJob(w http.ResponseWriter, r *http.Request) *apiError {
	return s.controlJob(w, r, models.ControlStop)
}

// resetJob is the admin's repair for a job stuck in queued, running or
// paused on a node that will not finish it: it goes back to pending for
// another attempt, as failover would do. A job whose node is alive and
// beating, and which itself was heard from within the failover window, is
// a 409: the old run would go on beside the new one and could no longer be
// stopped. ?force=true is for a job stuck on a live node: it asks the run
// to stop, waits up to ForceResetWait for the node to act, and then resets
// whatever is left. A job that stopped on the request is answered as it is
// (status stopped), not reset. A pending job is left as it is; a finished
// one is a 409.
func (s *Server) resetJob(w http.ResponseWriter, r *http.Request) *apiError {
	id, e := pathID(r, "job")
	if e != nil {
		return e
	}
	force := false
	for name, vals := range r.URL.Query() {
		if name != "force" {
			return badRequest(name, "unknown query parameter %q; reset takes force", name)
		}
		v, err := strconv.ParseBool(vals[0])
		if err != nil || len(vals) > 1 {
			return badRequest("force", "force must be true or false, given once")
		}
		force = v
	}
	const who = "an admin via the API"
	var (
		j   *models.Job
		err error
	)
	if force {
		j, err = s.forceReset(r, id, who)
	} else {
		j, err = s.st.ResetSilentJob(r.Context(), id, who, s.cfg.FailoverAfter)
	}
	if err != nil {
		return s.fromStore(r, err, "a job")
	}
	s.log.WithFields(logrus.Fields{"job_id": id, "status": string(j.Status), "force": force}).Info("api: job reset")
	if j.Status == models.JobPending {
		s.jobsAdded()
	}
	s.writeJSON(w, r, http.StatusOK, s.jobView(r, j))
	return nil
}

// forceReset asks the job to stop, polls until its node acted or
// ForceResetWait passed, then resets it unless it finished meanwhile.
func (s *Server) forceReset(r *http.Request, id int64, who string) (*models.Job, error) {
	ctx := r.Context()
	j, err := s.st.AskJobToStop(ctx, id, who)
	switch {
	case err != nil:
		return nil, err
	case j.Status.Finished():
		return nil, fmt.Errorf("job %d is %s: %w", id, j.Status, chimedb.ErrJobState)
	case j.Status == models.JobPending:
		return j, nil
	}
	// The node acts on control within its control interval (1s by
	// default); a task's Stop may take its own grace period.
	deadline := time.NewTimer(s.cfg.ForceResetWait)
	defer deadline.Stop()
	tick := time.NewTicker(forcePoll)
	defer tick.Stop()
wait:
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline.C:
			break wait
		case <-tick.C:
			j, err = s.st.Admin().GetJob(ctx, id)
			if err != nil {
				return nil, err
			}
			if j.Status.Finished() || j.Status == models.JobPending {
				return j, nil
			}
		}
	}
	return s.st.ResetJob(ctx, id, who+" (forced after the stop request was not acted on within "+s.cfg.ForceResetWait.String()+")")
}

// forcePoll is how often a forced reset looks whether the stop took effect.
const forcePoll = 100 * time.Millisecond

// controlJob records a control request; the node running the job acts on
// it within its control interval. The answer is 202 with the row as it is
// now: control shows the request, status changes when the engine acts (or
// at once, to canceled, for a pending job asked to stop).
func (s *Server) controlJob(w http.ResponseWriter, r *http.Request, c models.JobControl) *apiError {
	id, e := pathID(r, "job")
	if e != nil {
		return e
	}
	j, err := s.st.Admin().ControlJob(r.Context(), id, c)
	if err != nil {
		return s.fromStore(r, err, "a job")
	}
	entry := s.log.WithFields(logrus.Fields{"job_id": id, "control": string(c), "status": string(j.Status)})
	if j.ScheduleID != nil {
		entry = entry.WithField("schedule_id", *j.ScheduleID)
	}
	entry.Info("api: job control requested")
	s.writeJSON(w, r, http.StatusAccepted, s.jobView(r, j))
	return nil
}

// runJob writes an ad hoc job of a definition: its default params merged
// with the request's params, due at run_at (default now).
func (s *Server) runJob(w http.ResponseWriter, r *http.Request) *apiError {
	var req runRequest
	if e := decodeBody(w, r, &req); e != nil {
		return e
	}
	if req.JobDefinitionID <= 0 {
		return badRequest("job_definition_id", "job_definition_id is required")
	}
	params, e := checkObject("params", req.Params)
	if e != nil {
		return e
	}
	admin := s.st.Admin()
	def, err := admin.GetDefinition(r.Context(), req.JobDefinitionID)
	if errors.Is(err, chimedb.ErrNotFound) {
		return badRequest("job_definition_id", "job definition %d does not exist", req.JobDefinitionID)
	}
	if err != nil {
		return s.fromStore(r, err, "a job definition")
	}
	// Params change what runs: an operator runs a definition as it is.
	if e := s.mayUseDefinition(r, def, "job_definition_id", !emptyObject(params)); e != nil {
		return e
	}
	now := s.now()
	job, e := validateRun(s.cfg.Registry, def, params, req.RunAt, req.Priority, now)
	if e != nil {
		return e
	}
	runAt := job.RunAt
	if err := admin.InsertJob(r.Context(), job, fmt.Sprintf("ad hoc run of job definition %d requested through the API", def.ID)); err != nil {
		return s.fromStore(r, err, "a job")
	}
	if !runAt.After(now) {
		s.jobsAdded()
	}
	w.Header().Set("Location", Prefix+"/jobs/"+strconv.FormatInt(job.ID, 10))
	return s.writeJob(w, r, http.StatusCreated, job.ID)
}

// validateRun builds the ad hoc job of def a run request asks for: params
// (already checked to be an object) merged over the definition's defaults
// and checked by the task, due at runAt or now, with priority or the
// definition's. No database: the fuzz target calls it.
func validateRun(reg *tasks.Registry, def *models.JobDefinition, params models.JSON, runAt *time.Time, priority *int64, now time.Time) (*models.Job, *apiError) {
	merged, e := mergeParams(def.DefaultParams, params)
	if e != nil {
		return nil, e
	}
	if e := checkTaskParams(reg, def.TaskType, "params", merged); e != nil {
		return nil, e
	}
	at := now
	if runAt != nil {
		if runAt.Year() < 1970 || runAt.Year() > 9999 {
			return nil, badRequest("run_at", "run_at must be between the years 1970 and 9999")
		}
		at = *runAt
	}
	prio, e := effectivePriority(priority, nil, def)
	if e != nil {
		return nil, e
	}
	return &models.Job{
		JobDefinitionID: def.ID, ScheduledAt: at, RunAt: at,
		MaxAttempts: max(def.MaxAttempts, 1), Params: merged, Priority: prio,
	}, nil
}

// effectivePriority is the priority a job is written with: the request's
// override, else the schedule's, else the definition's. A stored value out
// of range (only plain SQL on a database without the CHECKs could write
// one) falls back to the default rather than fail the insert.
func effectivePriority(override *int64, schedule *int, def *models.JobDefinition) (int, *apiError) {
	switch {
	case override != nil:
		if e := checkPriority(*override); e != nil {
			return 0, e
		}
		return int(*override), nil
	case schedule != nil && models.ValidPriority(int64(*schedule)):
		return *schedule, nil
	case models.ValidPriority(int64(def.Priority)):
		return def.Priority, nil
	}
	return models.PriorityDefault, nil
}

// emptyObject says whether params, an object or nothing, has no keys.
func emptyObject(params models.JSON) bool {
	var m map[string]json.RawMessage
	return len(params) == 0 || (json.Unmarshal(params, &m) == nil && len(m) == 0)
}
