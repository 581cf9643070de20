package api

import (
	"net/http"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// route is one entry of the API. The table below is both what the mux
// serves and what the OpenAPI test checks the document against, so a route
// cannot be added without documenting it.
type route struct {
	method  string
	path    string // a net/http pattern path, e.g. /api/v1/jobs/{id}
	handler func(*Server, http.ResponseWriter, *http.Request) *apiError
	public  bool // served without the bearer token
}

// Prefix is where the versioned API lives.
const Prefix = "/api/v1"

var routeTable = []route{
	{method: "GET", path: "/healthz", public: true},
	{method: "GET", path: "/readyz", public: true},
	{method: "GET", path: "/metrics", public: true},
	{method: "GET", path: Prefix + "/openapi.json", handler: (*Server).openAPI},

	{method: "GET", path: Prefix + "/definitions", handler: (*Server).listDefinitions},
	{method: "POST", path: Prefix + "/definitions", handler: (*Server).createDefinition},
	{method: "GET", path: Prefix + "/definitions/{id}", handler: (*Server).getDefinition},
	{method: "PATCH", path: Prefix + "/definitions/{id}", handler: (*Server).updateDefinition},
	{method: "DELETE", path: Prefix + "/definitions/{id}", handler: (*Server).deleteDefinition},

	{method: "GET", path: Prefix + "/schedules", handler: (*Server).listSchedules},
	{method: "POST", path: Prefix + "/schedules", handler: (*Server).createSchedule},
	{method: "GET", path: Prefix + "/schedules/{id}", handler: (*Server).getSchedule},
	{method: "PATCH", path: Prefix + "/schedules/{id}", handler: (*Server).updateSchedule},
	{method: "DELETE", path: Prefix + "/schedules/{id}", handler: (*Server).deleteSchedule},
	{method: "POST", path: Prefix + "/schedules/{id}/pause", handler: (*Server).pauseSchedule},
	{method: "POST", path: Prefix + "/schedules/{id}/resume", handler: (*Server).resumeSchedule},
	{method: "POST", path: Prefix + "/schedules/{id}/trigger", handler: (*Server).triggerSchedule},

	{method: "GET", path: Prefix + "/calendars", handler: (*Server).listCalendars},
	{method: "POST", path: Prefix + "/calendars", handler: (*Server).createCalendar},
	{method: "GET", path: Prefix + "/calendars/{id}", handler: (*Server).getCalendar},
	{method: "PATCH", path: Prefix + "/calendars/{id}", handler: (*Server).updateCalendar},
	{method: "DELETE", path: Prefix + "/calendars/{id}", handler: (*Server).deleteCalendar},

	{method: "GET", path: Prefix + "/jobs", handler: (*Server).listJobs},
	{method: "POST", path: Prefix + "/jobs", handler: (*Server).runJob},
	{method: "GET", path: Prefix + "/jobs/{id}", handler: (*Server).getJob},
	{method: "GET", path: Prefix + "/jobs/{id}/logs", handler: (*Server).jobLogs},
	{method: "POST", path: Prefix + "/jobs/{id}/pause", handler: (*Server).pauseJob},
	{method: "POST", path: Prefix + "/jobs/{id}/resume", handler: (*Server).resumeJob},
	{method: "POST", path: Prefix + "/jobs/{id}/stop", handler: (*Server).stopJob},
	{method: "POST", path: Prefix + "/jobs/{id}/reset", handler: (*Server).resetJob},

	{method: "GET", path: Prefix + "/notifications", handler: (*Server).listNotifications},

	{method: "GET", path: Prefix + "/alert-channels", handler: (*Server).listAlertChannels},
	{method: "POST", path: Prefix + "/alert-channels", handler: (*Server).createAlertChannel},
	{method: "PATCH", path: Prefix + "/alert-channels/{id}", handler: (*Server).updateAlertChannel},
	{method: "DELETE", path: Prefix + "/alert-channels/{id}", handler: (*Server).deleteAlertChannel},
	{method: "POST", path: Prefix + "/alert-channels/{id}/test", handler: (*Server).testAlertChannel},
	{method: "GET", path: Prefix + "/alert-rules", handler: (*Server).listAlertRules},
	{method: "POST", path: Prefix + "/alert-rules", handler: (*Server).createAlertRule},
	{method: "PATCH", path: Prefix + "/alert-rules/{id}", handler: (*Server).updateAlertRule},
	{method: "DELETE", path: Prefix + "/alert-rules/{id}", handler: (*Server).deleteAlertRule},
	{method: "GET", path: Prefix + "/alerts", handler: (*Server).listAlerts},
	{method: "GET", path: Prefix + "/workflows", handler: (*Server).listWorkflows},
	{method: "POST", path: Prefix + "/workflows", handler: (*Server).createWorkflow},
	{method: "GET", path: Prefix + "/workflows/{id}", handler: (*Server).getWorkflow},
	{method: "DELETE", path: Prefix + "/workflows/{id}", handler: (*Server).deleteWorkflow},
	{method: "POST", path: Prefix + "/workflows/{id}/runs", handler: (*Server).startRun},
	{method: "GET", path: Prefix + "/runs", handler: (*Server).listRuns},
	{method: "GET", path: Prefix + "/runs/{id}", handler: (*Server).getRun},
	{method: "POST", path: Prefix + "/runs/{id}/cancel", handler: cancelRun},
	{method: "POST", path: Prefix + "/runs/{id}/rerun", handler: rerunRun},
	{method: "POST", path: Prefix + "/runs/{id}/pause", handler: pauseRun},
	{method: "POST", path: Prefix + "/runs/{id}/resume", handler: resumeRun},

	{method: "GET", path: Prefix + "/nodes", handler: (*Server).listNodes},
	{method: "POST", path: Prefix + "/nodes/{node}/drain", handler: (*Server).drainNode},
	{method: "POST", path: Prefix + "/nodes/{node}/undrain", handler: (*Server).undrainNode},
	{method: "GET", path: Prefix + "/version", handler: (*Server).version},

	{method: "GET", path: Prefix + "/queues", handler: (*Server).listQueues},
	{method: "GET", path: Prefix + "/queues/{name}", handler: (*Server).getQueue},
	{method: "PUT", path: Prefix + "/queues/{name}", handler: (*Server).putQueue},
	{method: "DELETE", path: Prefix + "/queues/{name}", handler: (*Server).deleteQueue},
	{method: "POST", path: Prefix + "/queues/{name}/pause", handler: (*Server).pauseQueue},
	{method: "POST", path: Prefix + "/queues/{name}/resume", handler: (*Server).resumeQueue},

	{method: "GET", path: Prefix + "/configurations", handler: (*Server).listConfigurations},
	{method: "GET", path: Prefix + "/configurations/{name}", handler: (*Server).getConfiguration},
	{method: "PUT", path: Prefix + "/configurations/{name}", handler: (*Server).setConfiguration},

	{method: "GET", path: Prefix + "/whoami", handler: (*Server).whoami},
	{method: "GET", path: Prefix + "/tokens", handler: (*Server).listTokens},
	{method: "POST", path: Prefix + "/tokens", handler: (*Server).createToken},
	{method: "POST", path: Prefix + "/tokens/{name}/revoke", handler: (*Server).revokeToken},

	{method: "GET", path: Prefix + "/audit", handler: (*Server).listAudit},
	{method: "GET", path: Prefix + "/secrets", handler: (*Server).listSecrets},
	{method: "POST", path: Prefix + "/secrets", handler: (*Server).setSecret},
	{method: "DELETE", path: Prefix + "/secrets/{name}", handler: (*Server).deleteSecret},
	{method: "POST", path: Prefix + "/secrets/rotate", handler: (*Server).rotateSecrets},
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /metrics", metricsHandler)
	for _, rt := range routeTable {
		if rt.handler == nil {
			continue
		}
		h := rt.handler
		ru := ruleOf(rt.method, rt.path)
		mux.Handle(rt.method+" "+rt.path, s.authorize(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// The rule first: a refused request learns nothing from the
			// checks of its body.
			e := s.permit(r, PrincipalOf(r.Context()), ru)
			if e == nil {
				e = needsJSON(r)
			}
			if e == nil {
				e = checkQuery(r)
			}
			rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
			if e == nil {
				r = withActor(r)
				e = h(s, rec, r)
			}
			if e != nil {
				if e.status == http.StatusForbidden {
					s.refused(r, e)
				}
				s.writeError(w, r, e)
				return
			}
			s.logChange(r, rec.status)
		})))
	}
	// Anything else under the prefix is a JSON 404 (after auth, so the
	// route list is not probed anonymously), not the mux's text one.
	mux.Handle(Prefix+"/", s.authorize(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, notFound("no route %s %s; see %s/openapi.json", r.Method, r.URL.Path, Prefix))
	})))
	if s.cfg.Console != nil {
		mux.Handle("/", s.cfg.Console(mux))
	}
	return s.logRequests(s.guard(mux))
}

// ClientHeader names the client of a request: the CLI sends
// "X-Chime-Client: cli", and the audit log records its changes with door
// cli. Any client can send it, so it is informational, never trusted for
// access.
const ClientHeader = "X-Chime-Client"

// withActor hands the store who makes a change and through which door,
// for the audit log: the request's principal; the door is the console
// for its sessions, cli when the client says so, api otherwise.
func withActor(r *http.Request) *http.Request {
	p := PrincipalOf(r.Context())
	if p == nil || r.Method == http.MethodGet {
		return r
	}
	door := models.AuditDoorAPI
	switch {
	case p.Via == models.AuditDoorConsole:
		door = models.AuditDoorConsole
	case r.Header.Get(ClientHeader) == models.AuditDoorCLI:
		door = models.AuditDoorCLI
	}
	return r.WithContext(chimedb.WithActor(r.Context(), chimedb.Actor{Name: p.Name, Door: door}))
}

// logChange logs, at info, a request that changed something: who, through
// what door, the route and the object's path. Reads and dry runs change
// nothing.
func (s *Server) logChange(r *http.Request, status int) {
	if r.Method == http.MethodGet || status >= 400 || r.URL.Query().Get("dry_run") == "true" || r.URL.Query().Get("dry_run") == "1" {
		return
	}
	s.changed(r, "change", logrus.Fields{"method": r.Method, "route": r.Pattern, "path": r.URL.Path, "status": status})
}
