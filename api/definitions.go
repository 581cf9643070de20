package api

import (
	"net/http"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/validate"
)

func (s *Server) listDefinitions(w http.ResponseWriter, r *http.Request) *apiError {
	p, e := listQuery(r, []string{"name", "since", "until"}, nil)
	if e != nil {
		return e
	}
	items, err := s.st.Admin().ListDefinitions(r.Context(), p)
	if err != nil {
		return s.fromStore(r, err, "job definition")
	}
	s.writeJSON(w, r, http.StatusOK, viewPage(r, pageOf(items, p, func(d *models.JobDefinition) int64 { return d.ID }), s.definitionView))
	return nil
}

func (s *Server) getDefinition(w http.ResponseWriter, r *http.Request) *apiError {
	id, e := pathID(r, "job definition")
	if e != nil {
		return e
	}
	d, err := s.st.Admin().GetDefinition(r.Context(), id)
	if err != nil {
		return s.fromStore(r, err, "a job definition")
	}
	s.writeJSON(w, r, http.StatusOK, s.definitionView(r, d))
	return nil
}

func (s *Server) createDefinition(w http.ResponseWriter, r *http.Request) *apiError {
	req := validate.NewDefinitionRequest()
	if e := decodeBody(w, r, req); e != nil {
		return e
	}
	d, e := validateDefinition(s.cfg.Registry, req)
	if e != nil {
		return e
	}
	if e := s.mayNameDefinition(r, d); e != nil {
		return e
	}
	if e := s.queueExists(r, "queue", d.Queue); e != nil {
		return e
	}
	if err := s.st.Admin().CreateDefinition(r.Context(), d); err != nil {
		return s.fromStore(r, err, "a job definition")
	}
	w.Header().Set("Location", Prefix+"/definitions/"+itoa(d.ID))
	s.writeJSON(w, r, http.StatusCreated, s.definitionView(r, d))
	return nil
}

// updateDefinition applies the body's fields over the stored row (JSON
// merge semantics: absent keys keep their value) and validates the result
// as a whole.
func (s *Server) updateDefinition(w http.ResponseWriter, r *http.Request) *apiError {
	id, e := pathID(r, "job definition")
	if e != nil {
		return e
	}
	admin := s.st.Admin()
	cur, err := admin.GetDefinition(r.Context(), id)
	if err != nil {
		return s.fromStore(r, err, "a job definition")
	}
	req := validate.DefinitionRequestOf(cur)
	if e := decodeBody(w, r, req); e != nil {
		return e
	}
	d, e := validateDefinition(s.cfg.Registry, req)
	if e != nil {
		return e
	}
	if e := s.mayNameDefinition(r, d); e != nil {
		return e
	}
	if d.Queue != cur.Queue {
		if e := s.queueExists(r, "queue", d.Queue); e != nil {
			return e
		}
	}
	d.ID, d.CreatedAt = id, cur.CreatedAt
	if err := admin.UpdateDefinition(r.Context(), d); err != nil {
		return s.fromStore(r, err, "a job definition")
	}
	// Schedules of this definition fire its new defaults and policy.
	s.schedulesChanged(0)
	s.writeJSON(w, r, http.StatusOK, s.definitionView(r, d))
	return nil
}

func (s *Server) deleteDefinition(w http.ResponseWriter, r *http.Request) *apiError {
	id, e := pathID(r, "job definition")
	if e != nil {
		return e
	}
	if err := s.st.Admin().DeleteDefinition(r.Context(), id); err != nil {
		return s.fromStore(r, err, "a job definition")
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
