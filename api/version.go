package api

import "net/http"

// version answers which build this node runs. It needs the token like the
// rest of /api/v1: a version tells an attacker which fixes a node lacks,
// and /healthz and /readyz, which are public, say nothing of it.
func (s *Server) version(w http.ResponseWriter, r *http.Request) *apiError {
	for name := range r.URL.Query() {
		return badRequest(name, "unknown query parameter %q; version takes none", name)
	}
	s.writeJSON(w, r, http.StatusOK, s.cfg.Build)
	return nil
}
