package api

import (
	"net/http"
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

	{method: "GET", path: Prefix + "/nodes", handler: (*Server).listNodes},

	{method: "GET", path: Prefix + "/queues", handler: (*Server).listQueues},
	{method: "GET", path: Prefix + "/queues/{name}", handler: (*Server).getQueue},
	{method: "PUT", path: Prefix + "/queues/{name}", handler: (*Server).putQueue},
	{method: "DELETE", path: Prefix + "/queues/{name}", handler: (*Server).deleteQueue},
	{method: "POST", path: Prefix + "/queues/{name}/pause", handler: (*Server).pauseQueue},
	{method: "POST", path: Prefix + "/queues/{name}/resume", handler: (*Server).resumeQueue},

	{method: "GET", path: Prefix + "/configurations", handler: (*Server).listConfigurations},
	{method: "GET", path: Prefix + "/configurations/{name}", handler: (*Server).getConfiguration},
	{method: "PUT", path: Prefix + "/configurations/{name}", handler: (*Server).setConfiguration},
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
		mux.Handle(rt.method+" "+rt.path, s.authorize(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			e := needsJSON(r)
			if e == nil {
				e = checkQuery(r)
			}
			if e == nil {
				e = h(s, w, r)
			}
			if e != nil {
				s.writeError(w, r, e)
			}
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
