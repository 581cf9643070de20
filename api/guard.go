package api

import (
	"mime"
	"net/http"
	"strings"

	"github.com/chimesched/chime/internal/loopback"
)

// guard wraps the whole API with the defences that do not depend on the
// route: nosniff on every answer, the Host check of a tokenless server, and
// Go's cross-origin protection. A browser on the admin's machine can reach
// a loopback API; without these, any page it visits could create a shell
// job (cross-site POST) or, after rebinding its own name to 127.0.0.1,
// read the answers.
func (s *Server) guard(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.log.WithFields(map[string]any{"method": r.Method, "path": r.URL.Path, "origin": r.Header.Get("Origin")}).
			Warn("api: cross-origin request refused")
		s.writeJSON(w, r, http.StatusForbidden, Error{Error: "cross-origin request refused: the API takes state-changing " +
			"requests only from non-browser clients or pages of its own origin"})
	}))
	protected := cop.Handler(next)
	checkHost := s.cfg.Token == ""
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if s.cfg.HSTS {
			// A year, this host only: its neighbours' TLS is not chime's to promise.
			w.Header().Set("Strict-Transport-Security", "max-age=31536000")
		}
		// With a token, the token is the defence and a proxy may send any
		// Host; without one, only the Host tells a rebinding page apart.
		if checkHost && (r.Host == "" || !loopback.Host(r.Host)) {
			s.log.WithField("host", r.Host).Warn("api: request for a Host that is not loopback refused")
			s.writeJSON(w, r, http.StatusMisdirectedRequest, Error{Error: "Host " + quoteHost(r.Host) + " refused: without api.token " +
				"this API answers only requests for localhost or a loopback address"})
			return
		}
		protected.ServeHTTP(w, r)
	})
}

func quoteHost(h string) string {
	if len(h) > 100 {
		h = h[:100] + "..."
	}
	return `"` + strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '"' {
			return '?'
		}
		return r
	}, h) + `"`
}

// needsJSON refuses a request body that is not declared JSON. Browsers send
// text/plain, form and multipart bodies cross-site without a preflight;
// application/json they do not, so requiring it closes that door even for
// a browser that sends no Origin. A body-less POST (pause, stop, reset)
// carries nothing to check; cross-origin protection covers it.
func needsJSON(r *http.Request) *apiError {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
	default:
		return nil
	}
	if r.ContentLength == 0 {
		return nil
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err == nil && mt == "application/json" {
		return nil
	}
	return &apiError{status: http.StatusUnsupportedMediaType, Error: Error{
		Error: "a request body must be sent with Content-Type: application/json"}}
}
