package console

import (
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/tasks"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Defaults of Config.
const (
	DefaultSessionTTL       = 12 * time.Hour
	DefaultFailedLoginDelay = time.Second
	DefaultFailoverAfter    = 20 * time.Second
)

// Config configures the console.
type Config struct {
	// Registry lists the task types a definition may name (default tasks.Default()).
	Registry *tasks.Registry
	// Token is the API token, the console's password. Empty: no login,
	// which the API allows on a loopback address only.
	Token string
	// TokenFile is the file the server read its token from (or wrote it
	// to); the login page names it. Empty when the configuration set the
	// token (api.token, CHIME_API_TOKEN).
	TokenFile string
	// Secure marks the console's cookies Secure and names them with the
	// __Host- prefix: set it when browsers reach the console only over
	// HTTPS (the API serves TLS, or a proxy that terminates TLS is in
	// front). A browser then never sends the session over plain HTTP.
	Secure bool
	// SessionTTL bounds a session's life (default 12h).
	SessionTTL time.Duration
	// FailedLoginDelay is how long a wrong token is answered after; failed
	// logins are served one at a time, so guessing runs at most one try per
	// delay per node (default 1s).
	FailedLoginDelay time.Duration
	// FailoverAfter is the cluster's failover window: a node silent for
	// longer is shown as silent (default 20s).
	FailoverAfter time.Duration
	// Logger receives the console's lines.
	Logger logrus.FieldLogger
	// Version is shown in the footer.
	Version string
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Console serves the web console.
type Console struct {
	st    chimedb.ConsoleStore
	cfg   Config
	log   logrus.FieldLogger
	pages map[string]*template.Template
	key   []byte
	api   http.Handler

	failed chan struct{} // one failed login answered at a time
}

// New checks cfg and parses the templates; the console reads st, and
// writes through the API. cfg is copied; nil is the zero Config.
func New(st chimedb.ConsoleStore, c *Config) (*Console, error) {
	if st == nil {
		return nil, errors.New("console: New: nil store")
	}
	var cfg Config
	if c != nil {
		cfg = *c
	}
	if cfg.Registry == nil {
		cfg.Registry = tasks.Default()
	}
	if cfg.Logger == nil {
		cfg.Logger = logrus.StandardLogger()
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.FailedLoginDelay <= 0 {
		cfg.FailedLoginDelay = DefaultFailedLoginDelay
	}
	if cfg.FailoverAfter <= 0 {
		cfg.FailoverAfter = DefaultFailoverAfter
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	pages, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	key, err := sessionKey(cfg.Token)
	if err != nil {
		return nil, err
	}
	return &Console{
		st: st, cfg: cfg, log: cfg.Logger.WithField("component", "console"), pages: pages, key: key,
		failed: make(chan struct{}, 1),
	}, nil
}

// Handler returns the console's handler; api is the API's routes, which
// the console calls in-process for every write. It is the shape of
// api.Config.Console.
func (c *Console) Handler(api http.Handler) http.Handler {
	c.api = api
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	fileServer := http.StripPrefix("/static/", http.FileServerFS(static))
	mux.Handle("GET /static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		fileServer.ServeHTTP(w, r)
	}))
	mux.HandleFunc("GET /login", c.loginPage)
	mux.HandleFunc("POST /login", c.login)
	mux.Handle("POST /logout", c.authed(c.logout))

	mux.Handle("GET /{$}", c.authed(c.overview))
	mux.Handle("GET /schedules", c.authed(c.schedules))
	mux.Handle("GET /schedules/new", c.authed(c.newSchedule))
	mux.Handle("POST /schedules/new", c.authed(c.createSchedule))
	mux.Handle("POST /schedules/preview", c.authed(c.previewSchedule))
	mux.Handle("GET /schedules/{id}", c.authed(c.schedule))
	mux.Handle("GET /schedules/{id}/edit", c.authed(c.editSchedule))
	mux.Handle("POST /schedules/{id}/edit", c.authed(c.updateSchedule))
	mux.Handle("GET /schedules/{id}/delete", c.authed(c.confirmDeleteSchedule))
	mux.Handle("POST /schedules/{id}/delete", c.authed(c.deleteSchedule))
	mux.Handle("POST /schedules/{id}/{action}", c.authed(c.scheduleAction))

	mux.Handle("GET /jobs", c.authed(c.jobs))
	mux.Handle("GET /jobs/{id}", c.authed(c.job))
	mux.Handle("GET /jobs/{id}/log", c.authed(c.jobLog))
	mux.Handle("POST /jobs/{id}/{action}", c.authed(c.jobAction))

	mux.Handle("GET /definitions", c.authed(c.definitions))
	mux.Handle("GET /definitions/new", c.authed(c.newDefinition))
	mux.Handle("GET /definitions/{id}", c.authed(c.definition))
	mux.Handle("POST /definitions/new", c.authed(c.createDefinition))
	mux.Handle("GET /definitions/{id}/edit", c.authed(c.editDefinition))
	mux.Handle("POST /definitions/{id}/edit", c.authed(c.updateDefinition))
	mux.Handle("GET /definitions/{id}/delete", c.authed(c.confirmDeleteDefinition))
	mux.Handle("POST /definitions/{id}/delete", c.authed(c.deleteDefinition))

	mux.Handle("GET /queues", c.authed(c.queues))
	mux.Handle("POST /queues/{name}/{action}", c.authed(c.queueAction))
	mux.Handle("GET /secrets", c.authed(c.secrets))
	mux.Handle("POST /secrets", c.authed(c.setSecret))
	mux.Handle("POST /secrets/delete", c.authed(c.deleteSecret))
	mux.Handle("POST /nodes/{node}/{action}", c.authed(c.nodeAction))
	mux.Handle("GET /nodes", c.authed(c.nodes))
	mux.Handle("GET /alerts", c.authed(c.alerts))
	mux.Handle("POST /alerts/channels/{id}/test", c.authed(c.testChannel))
	mux.Handle("POST /alerts/channels", c.authed(c.createChannel))
	mux.Handle("POST /alerts/rules", c.authed(c.createRule))
	mux.Handle("GET /audit", c.authed(c.audit))

	mux.Handle("GET /workflows", c.authed(c.workflows))
	mux.Handle("GET /workflows/{id}", c.authed(c.workflow))
	mux.Handle("POST /workflows/{id}/run", c.authed(c.startRun))
	mux.Handle("GET /runs/{id}", c.authed(c.run))
	mux.Handle("POST /runs/{id}/{action}", c.authed(c.runAction))
	mux.Handle("/", c.authed(func(w http.ResponseWriter, r *http.Request, s *session) {
		c.fail(w, r, s, http.StatusNotFound, "There is no page at this address.")
	}))
	return headers(mux)
}

// headers sets the defences every console answer carries. No inline
// script or style is allowed: a job's output that slipped past escaping
// still could not run.
func headers(next http.Handler) http.Handler {
	const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}
