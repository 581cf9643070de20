package api

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// workflows is the store's workflows, when it has them.
func (s *Server) workflows() (chimedb.WorkflowStore, *apiError) {
	if w, ok := s.st.(chimedb.WorkflowStore); ok {
		return w, nil
	}
	return nil, &apiError{status: http.StatusNotImplemented, Error: Error{Error: "this store has no workflows"}}
}

// fromWorkflowStore maps the workflow sentinels, then the common ones.
func (s *Server) fromWorkflowStore(r *http.Request, err error, what string) *apiError {
	switch {
	case errors.Is(err, chimedb.ErrInvalid):
		return badRequest("", "%s", trimSuffix(err, chimedb.ErrInvalid))
	case errors.Is(err, chimedb.ErrNoDefinition):
		return badRequest("steps", "%s", trimSuffix(err, chimedb.ErrNoDefinition))
	case errors.Is(err, chimedb.ErrRunState):
		return conflict("", "%s", trimSuffix(err, chimedb.ErrRunState))
	}
	return s.fromStore(r, err, what)
}

func trimSuffix(err, sentinel error) string {
	msg := err.Error()
	if n := len(msg) - len(sentinel.Error()) - 2; n > 0 && msg[n:] == ": "+sentinel.Error() {
		return msg[:n]
	}
	return msg
}

func (s *Server) listWorkflows(w http.ResponseWriter, r *http.Request) *apiError {
	ws, e := s.workflows()
	if e != nil {
		return e
	}
	q := r.URL.Query()
	for k := range q {
		if k != "name" {
			return badRequest(k, "unknown query parameter %q (accepted: name)", k)
		}
	}
	all, err := ws.ListWorkflows(r.Context())
	if err != nil {
		return s.fromStore(r, err, "a workflow")
	}
	items := all
	if q.Has("name") {
		items = nil
		for _, wf := range all {
			if wf.Name == q.Get("name") {
				items = append(items, wf)
			}
		}
	}
	if items == nil {
		items = []models.Workflow{}
	}
	s.writeJSON(w, r, http.StatusOK, List[models.Workflow]{Items: items})
	return nil
}

// createWorkflow writes a workflow from its steps and edges by name
// (chimedb.WorkflowSpec); a bad graph is a 400 that says what is wrong.
func (s *Server) createWorkflow(w http.ResponseWriter, r *http.Request) *apiError {
	ws, e := s.workflows()
	if e != nil {
		return e
	}
	var spec chimedb.WorkflowSpec
	if e := decodeBody(w, r, &spec); e != nil {
		return e
	}
	g, err := ws.CreateWorkflow(r.Context(), &spec)
	if err != nil {
		return s.fromWorkflowStore(r, err, "a workflow")
	}
	w.Header().Set("Location", Prefix+"/workflows/"+itoa(g.ID))
	s.writeJSON(w, r, http.StatusCreated, g)
	return nil
}

func (s *Server) getWorkflow(w http.ResponseWriter, r *http.Request) *apiError {
	ws, e := s.workflows()
	if e != nil {
		return e
	}
	id, e := pathID(r, "workflow")
	if e != nil {
		return e
	}
	g, err := ws.GetWorkflow(r.Context(), id)
	if err != nil {
		return s.fromStore(r, err, "a workflow")
	}
	s.writeJSON(w, r, http.StatusOK, g)
	return nil
}

func (s *Server) deleteWorkflow(w http.ResponseWriter, r *http.Request) *apiError {
	ws, e := s.workflows()
	if e != nil {
		return e
	}
	id, e := pathID(r, "workflow")
	if e != nil {
		return e
	}
	if err := ws.DeleteWorkflow(r.Context(), id); err != nil {
		return s.fromStore(r, err, "a workflow")
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// startRunRequest is the body of POST /workflows/{id}/runs.
type startRunRequest struct {
	Params    models.JSON `json:"params"`
	StartedBy string      `json:"started_by"`
}

func (s *Server) startRun(w http.ResponseWriter, r *http.Request) *apiError {
	ws, e := s.workflows()
	if e != nil {
		return e
	}
	id, e := pathID(r, "workflow")
	if e != nil {
		return e
	}
	var req startRunRequest
	if r.ContentLength != 0 {
		if e := decodeBody(w, r, &req); e != nil {
			return e
		}
	}
	if req.StartedBy == "" {
		req.StartedBy = "api"
	}
	run, err := ws.StartRun(r.Context(), &chimedb.StartRunParams{WorkflowID: id, Params: req.Params, StartedBy: req.StartedBy})
	if err != nil {
		return s.fromWorkflowStore(r, err, "a run")
	}
	w.Header().Set("Location", Prefix+"/runs/"+itoa(run.ID))
	s.writeJSON(w, r, http.StatusCreated, run)
	return nil
}

// listRuns lists runs newest first: ?workflow_id=, ?status=, ?limit= (at
// most 1000, default 100).
func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) *apiError {
	ws, e := s.workflows()
	if e != nil {
		return e
	}
	p := &chimedb.ListRunsParams{}
	for k, v := range r.URL.Query() {
		switch k {
		case "workflow_id":
			id, err := strconv.ParseInt(v[0], 10, 64)
			if err != nil || id <= 0 {
				return badRequest(k, "workflow_id must be a positive integer")
			}
			p.WorkflowID = id
		case "status":
			st := models.RunStatus(v[0])
			switch st {
			case models.RunPending, models.RunRunning, models.RunPaused, models.RunSucceeded, models.RunFailed, models.RunCanceled:
			default:
				return badRequest(k, "status must be pending, running, paused, succeeded, failed or canceled")
			}
			p.Status = st
		case "limit":
			n, err := strconv.Atoi(v[0])
			if err != nil || n < 1 || n > 1000 {
				return badRequest(k, "limit must be 1 to 1000")
			}
			p.Limit = n
		default:
			return badRequest(k, "unknown query parameter %q (accepted: workflow_id, status, limit)", k)
		}
	}
	items, err := ws.ListRuns(r.Context(), p)
	if err != nil {
		return s.fromStore(r, err, "a run")
	}
	if items == nil {
		items = []models.WorkflowRun{}
	}
	s.writeJSON(w, r, http.StatusOK, List[models.WorkflowRun]{Items: items})
	return nil
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) *apiError {
	ws, e := s.workflows()
	if e != nil {
		return e
	}
	id, e := pathID(r, "run")
	if e != nil {
		return e
	}
	v, err := ws.GetRun(r.Context(), id)
	if err != nil {
		return s.fromStore(r, err, "a run")
	}
	s.writeJSON(w, r, http.StatusOK, v)
	return nil
}

// runAction is POST /runs/{id}/cancel, rerun, pause or resume.
func runAction(act func(ws chimedb.WorkflowStore, r *http.Request, id int64) (*models.WorkflowRun, error)) func(*Server, http.ResponseWriter, *http.Request) *apiError {
	return func(s *Server, w http.ResponseWriter, r *http.Request) *apiError {
		ws, e := s.workflows()
		if e != nil {
			return e
		}
		id, e := pathID(r, "run")
		if e != nil {
			return e
		}
		run, err := act(ws, r, id)
		if err != nil {
			return s.fromWorkflowStore(r, err, "a run")
		}
		s.writeJSON(w, r, http.StatusOK, run)
		return nil
	}
}

var (
	cancelRun = runAction(func(ws chimedb.WorkflowStore, r *http.Request, id int64) (*models.WorkflowRun, error) {
		return ws.CancelRun(r.Context(), id, "canceled through the API")
	})
	rerunRun = runAction(func(ws chimedb.WorkflowStore, r *http.Request, id int64) (*models.WorkflowRun, error) {
		return ws.RerunRun(r.Context(), id)
	})
	pauseRun = runAction(func(ws chimedb.WorkflowStore, r *http.Request, id int64) (*models.WorkflowRun, error) {
		return ws.PauseRun(r.Context(), id)
	})
	resumeRun = runAction(func(ws chimedb.WorkflowStore, r *http.Request, id int64) (*models.WorkflowRun, error) {
		return ws.ResumeRun(r.Context(), id)
	})
)
