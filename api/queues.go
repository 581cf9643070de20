package api

import (
	"errors"
	"net/http"
	"unicode/utf8"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/validate"
)

// queueView is a queue as the API shows it: the row, its jobs, and why it
// is invalid (its jobs then wait) or missing (named, but no row).
type queueView struct {
	Name         string `json:"name"`
	Description  string `json:"description"`
	MaxRunning   *int64 `json:"max_running"`
	RateLimit    *int64 `json:"rate_limit"`
	RatePeriodMs *int64 `json:"rate_period_ms"`
	Paused       bool   `json:"paused"`
	Running      int64  `json:"running"`
	Waiting      int64  `json:"waiting"`
	Invalid      string `json:"invalid,omitempty"`
	Missing      bool   `json:"missing,omitempty"`
}

func viewQueue(q *chimedb.QueueState) queueView {
	return queueView{Name: q.Name, Description: q.Description, MaxRunning: q.MaxRunning, RateLimit: q.RateLimit,
		RatePeriodMs: q.RatePeriodMs, Paused: q.Paused, Running: q.Running, Waiting: q.Waiting, Invalid: q.Invalid, Missing: q.Missing}
}

// queueRequest is the body of PUT /queues/{name}: every field, as a
// configuration is set whole. Absent limits are none.
type queueRequest struct {
	Description  string `json:"description"`
	MaxRunning   *int64 `json:"max_running"`
	RateLimit    *int64 `json:"rate_limit"`
	RatePeriodMs *int64 `json:"rate_period_ms"`
	Paused       bool   `json:"paused"`
}

func queueName(r *http.Request) (string, *apiError) {
	name := r.PathValue("name")
	if e := validate.CheckQueueName("name", name); e != nil {
		return "", badRequest("name", "%s", e.Message)
	}
	return name, nil
}

// queueExists refuses a queue name no queues row holds: its jobs would
// wait until an admin created it.
func (s *Server) queueExists(r *http.Request, field, name string) *apiError {
	if e := validate.CheckQueueName(field, name); e != nil {
		return badRequest(field, "%s", e.Message)
	}
	_, err := s.st.Admin().GetQueue(r.Context(), name)
	if errors.Is(err, chimedb.ErrNotFound) {
		return badRequest(field, "queue %q does not exist (create it with PUT %s/queues/%s)", name, Prefix, name)
	}
	if err != nil {
		return s.fromStore(r, err, "a queue")
	}
	return nil
}

func (s *Server) listQueues(w http.ResponseWriter, r *http.Request) *apiError {
	qs, err := s.st.Admin().ListQueues(r.Context())
	if err != nil {
		return s.fromStore(r, err, "a queue")
	}
	items := make([]queueView, 0, len(qs))
	for i := range qs {
		items = append(items, viewQueue(&qs[i]))
	}
	s.writeJSON(w, r, http.StatusOK, List[queueView]{Items: items})
	return nil
}

func (s *Server) getQueue(w http.ResponseWriter, r *http.Request) *apiError {
	name, e := queueName(r)
	if e != nil {
		return e
	}
	q, err := s.st.Admin().GetQueue(r.Context(), name)
	if err != nil {
		return s.fromStore(r, err, "a queue")
	}
	s.writeJSON(w, r, http.StatusOK, viewQueue(q))
	return nil
}

// putQueue creates the queue or replaces its settings. Jobs already
// running are never stopped by a lower limit: it binds new starts.
func (s *Server) putQueue(w http.ResponseWriter, r *http.Request) *apiError {
	name, e := queueName(r)
	if e != nil {
		return e
	}
	var req queueRequest
	if e := decodeBody(w, r, &req); e != nil {
		return e
	}
	if utf8.RuneCountInString(req.Description) > validate.MaxDescription {
		return badRequest("description", "description is longer than %d characters", validate.MaxDescription)
	}
	q := &models.Queue{Name: name, Description: req.Description, MaxRunning: req.MaxRunning, RateLimit: req.RateLimit,
		RatePeriodMs: req.RatePeriodMs, Paused: req.Paused}
	if reason := models.CheckQueue(q); reason != "" {
		return badRequest("queue", "%s", reason)
	}
	admin := s.st.Admin()
	if err := admin.PutQueue(r.Context(), q); err != nil {
		return s.fromStore(r, err, "a queue")
	}
	st, err := admin.GetQueue(r.Context(), name)
	if err != nil {
		return s.fromStore(r, err, "a queue")
	}
	s.writeJSON(w, r, http.StatusOK, viewQueue(st))
	return nil
}

func (s *Server) deleteQueue(w http.ResponseWriter, r *http.Request) *apiError {
	name, e := queueName(r)
	if e != nil {
		return e
	}
	if err := s.st.Admin().DeleteQueue(r.Context(), name); err != nil {
		return s.fromStore(r, err, "a queue")
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) pauseQueue(w http.ResponseWriter, r *http.Request) *apiError {
	return s.setQueuePaused(w, r, true)
}

func (s *Server) resumeQueue(w http.ResponseWriter, r *http.Request) *apiError {
	return s.setQueuePaused(w, r, false)
}

// setQueuePaused stops or resumes new starts of the queue's jobs,
// cluster-wide from the next claim; running jobs go on.
func (s *Server) setQueuePaused(w http.ResponseWriter, r *http.Request, paused bool) *apiError {
	name, e := queueName(r)
	if e != nil {
		return e
	}
	admin := s.st.Admin()
	if _, err := admin.SetQueuePaused(r.Context(), name, paused); err != nil {
		return s.fromStore(r, err, "a queue")
	}
	st, err := admin.GetQueue(r.Context(), name)
	if err != nil {
		return s.fromStore(r, err, "a queue")
	}
	s.writeJSON(w, r, http.StatusOK, viewQueue(st))
	return nil
}
