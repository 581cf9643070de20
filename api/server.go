package api

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/configs"
	"github.com/chimesched/chime/internal/buildinfo"
	"github.com/chimesched/chime/internal/loopback"
	"github.com/chimesched/chime/internal/metrics"
	"github.com/chimesched/chime/internal/startstop"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/secrets"
	"github.com/chimesched/chime/tasks"
)

// DefaultAddr is where the API listens when Config.Addr is empty.
const DefaultAddr = "127.0.0.1:8080"

// MinTokenLength is the shortest token accepted on a non-loopback address.
const MinTokenLength = 16

// Defaults of Config.FailoverAfter and Config.ForceResetWait.
const (
	DefaultFailoverAfter  = 20 * time.Second
	DefaultForceResetWait = 15 * time.Second
)

// Config configures the API server.
type Config struct {
	// Registry lists the task types this node knows; definitions naming
	// another type are refused. Default: tasks.Default().
	Registry *tasks.Registry
	// Token is the bearer token every /api/v1 request must carry: the
	// bootstrap admin, beside the named tokens of api_tokens. Empty
	// disables auth (everyone is admin), which is allowed only on a
	// loopback Addr.
	Token string
	// EditorTaskTypes are the task types the editor role may create,
	// change and delete definitions and schedules of. Nil: every type
	// of Registry but shell and httpcall, which run whatever their params
	// say; those stay admin's.
	EditorTaskTypes []string
	// Addr is the listen address (default DefaultAddr).
	Addr string
	// Listener, when set, is served instead of listening on Addr (which
	// still decides the loopback and token checks): app opens it before
	// the node joins the cluster, so a port in use stops start-up before
	// the node registers. Start takes it over; Stop closes it.
	Listener net.Listener
	// TLSCert and TLSKey are PEM files; set both to serve HTTPS, so a token
	// never crosses a network in clear. Neither: plain HTTP.
	TLSCert, TLSKey string
	// HSTS sends Strict-Transport-Security on every answer, so a browser
	// that reached the API over HTTPS never uses plain HTTP for its host
	// again: set it when browsers reach it only over HTTPS (it serves TLS,
	// or a proxy that terminates TLS is in front).
	HSTS bool
	// FailoverAfter is the cluster's failover window: a job whose node and
	// heartbeat were heard from within it counts as live, and is not reset
	// without force (default 20s, the cluster's default).
	FailoverAfter time.Duration
	// ForceResetWait bounds how long a forced reset waits for the node
	// running the job to act on the stop request (default 15s).
	ForceResetWait time.Duration
	// Logger receives the server's lines (default: logrus's standard logger).
	Logger logrus.FieldLogger
	// NodeID names this node in log lines.
	NodeID string
	// Build is what GET /api/v1/version answers (app sets it from
	// buildinfo; zero: the binary's own buildinfo.Get()).
	Build buildinfo.Info
	// OnSchedulesChanged, when set, is called after a schedule is created,
	// changed, paused, resumed or deleted through the API, so the local
	// schedule engine applies it at once instead of at its next sync scan.
	// scheduleID is 0 when a job definition changed, which may change how
	// any of its schedules fire. It must not block.
	OnSchedulesChanged func(scheduleID int64)
	// Settings is the node's configuration from its file and environment,
	// before configurations rows: a row written through the API is checked
	// on top of it and the other rows, as a node would at start. Default:
	// the embedded chime.yaml.
	Settings *configs.Config
	// OnJobsAdded, when set, is called after the API wrote a due job (a
	// trigger or an ad hoc run), so the local task engine polls at once.
	// It must not block.
	OnJobsAdded func()
	// Console, when set, builds the handler served at "/" beside /api/v1
	// (the web console). It receives the API's own routes, so every write
	// the console makes goes through the API's validation and store calls.
	// It sits behind the same guard (cross-origin protection, the Host
	// check of a tokenless server, nosniff) but not behind the bearer
	// check: the console authenticates its own sessions.
	Console func(api http.Handler) http.Handler
	// Alerts is the alerting tables (default: st, when it has them); nil
	// answers the alert routes 501.
	Alerts chimedb.AlertStore
	// TestAlertChannel, when set, sends a test message through a channel
	// now (POST /alert-channels/{id}/test); app wires package alert's.
	TestAlertChannel func(ctx context.Context, c *models.AlertChannel) error
	// Secrets seals the values POST /secrets sets and rotates them; nil
	// or without a key, those requests are refused (503) and nothing is
	// stored. The API never opens a secret for an answer.
	Secrets *secrets.Keyring
}

// Server is the HTTP API.
type Server struct {
	st      chimedb.AdminStore
	cfg     Config
	log     logrus.FieldLogger
	handler http.Handler
	now     func() time.Time
	badRows onceSet // rows logged as invalid (see shown)

	tls  *tls.Config
	auth *authLimiter

	startstop.Base
	mu       sync.Mutex
	srv      *http.Server
	listener net.Listener
	serveErr error
}

// New checks cfg and builds the server on st, the database. It refuses an
// empty Token on an address that is not loopback: the API can create jobs
// that run shell commands, so it must not be open to the network without
// auth. cfg is copied; nil is the zero Config.
func New(st chimedb.AdminStore, c *Config) (*Server, error) {
	if st == nil {
		return nil, errors.New("api: New: nil store")
	}
	var cfg Config
	if c != nil {
		cfg = *c
	}
	if cfg.Registry == nil {
		cfg.Registry = tasks.Default()
	}
	if cfg.Alerts == nil {
		cfg.Alerts, _ = st.(chimedb.AlertStore)
	}
	if cfg.Logger == nil {
		cfg.Logger = logrus.StandardLogger()
	}
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.Build == (buildinfo.Info{}) {
		cfg.Build = buildinfo.Get()
	}
	if cfg.Settings == nil {
		defaults, err := configs.Load("", func(string) string { return "" })
		if err != nil {
			return nil, fmt.Errorf("api: embedded configuration: %w", err)
		}
		cfg.Settings = defaults
	}
	loopback, err := isLoopback(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("api.addr %q: %w", cfg.Addr, err)
	}
	log := cfg.Logger.WithField("component", "api")
	if cfg.NodeID != "" {
		log = log.WithField("node_id", cfg.NodeID)
	}
	if cfg.FailoverAfter <= 0 {
		cfg.FailoverAfter = DefaultFailoverAfter
	}
	if cfg.ForceResetWait <= 0 {
		cfg.ForceResetWait = DefaultForceResetWait
	}
	var tlsCfg *tls.Config
	switch {
	case (cfg.TLSCert == "") != (cfg.TLSKey == ""):
		return nil, errors.New("api.tls_cert and api.tls_key (CHIME_API_TLS_CERT, CHIME_API_TLS_KEY) go together: set both or neither")
	case cfg.TLSCert != "":
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("api.tls_cert/api.tls_key: %w", err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if cfg.Token != "" && !loopback && len(cfg.Token) < MinTokenLength {
		return nil, fmt.Errorf("api.token is %d characters long: a token that guards a non-loopback address (%s) "+
			"must have at least %d characters", len(cfg.Token), cfg.Addr, MinTokenLength)
	}
	if cfg.Token != "" && len(cfg.Token) < MinTokenLength {
		log.Warnf("api.token is %d characters long: use at least %d (a generated one has 43); "+
			"only this host can reach the API, but every local user can guess at it", len(cfg.Token), MinTokenLength)
	}
	if cfg.Token == "" {
		if !loopback {
			return nil, fmt.Errorf("api.addr %q is not a loopback address and api.token is empty: "+
				"set api.token (CHIME_API_TOKEN) or listen on 127.0.0.1", cfg.Addr)
		}
		log.Warn("api.token is empty: the API accepts unauthenticated requests from this host; set api.token (CHIME_API_TOKEN)")
	}
	if cfg.Token != "" && !loopback && tlsCfg == nil {
		log.Warn("the API serves plain HTTP on a non-loopback address: the token crosses the network in clear; " +
			"set api.tls_cert and api.tls_key, or put a TLS proxy in front")
	}
	s := &Server{st: st, cfg: cfg, log: log, now: time.Now, tls: tlsCfg, auth: newAuthLimiter(time.Now())}
	s.handler = s.routes()
	return s, nil
}

// isLoopback reports whether addr (host:port) can only be reached from
// this host. An empty host means every interface.
func isLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	return host != "" && loopback.Host(host), nil
}

// Handler returns the API's HTTP handler, for tests and for embedding in
// another server.
func (s *Server) Handler() http.Handler { return s.handler }

// Start listens on Config.Addr and serves in the background until Stop.
// Calling it again while running is a no-op.
func (s *Server) Start(ctx context.Context) error {
	_, finished, ok := s.StartInit(ctx)
	if !ok {
		return nil
	}
	s.mu.Lock() // Stop waits for the server to be set up
	defer s.mu.Unlock()
	ln := s.cfg.Listener
	if ln == nil {
		var lc net.ListenConfig
		var err error
		if ln, err = lc.Listen(ctx, "tcp", s.cfg.Addr); err != nil {
			finished()
			return fmt.Errorf("api: listen on %s: %w", s.cfg.Addr, err)
		}
	}
	base := context.WithoutCancel(ctx)
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return base },
		TLSConfig:         s.tls,
	}
	s.srv, s.listener, s.serveErr = srv, ln, nil
	go func() {
		defer finished()
		var err error
		if s.tls != nil {
			err = srv.ServeTLS(ln, "", "")
		} else {
			err = srv.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.WithError(err).Error("api: server stopped")
			s.mu.Lock()
			s.serveErr = err
			s.mu.Unlock()
		}
	}()
	s.log.WithFields(logrus.Fields{"addr": ln.Addr().String(), "tls": s.tls != nil}).Info("api listening")
	return nil
}

// Addr returns the address the server listens on (useful with port 0),
// or "" when it is not started.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener == nil {
		return ""
	}
	return s.listener.Addr().String()
}

// Stop shuts the server down gracefully: it stops accepting, lets requests
// in flight finish until ctx ends, then closes what is left. Stop before
// Start, or twice, is harmless.
func (s *Server) Stop(ctx context.Context) error {
	stopped, ok := s.StopInit()
	if !ok {
		return nil
	}
	s.mu.Lock()
	srv := s.srv
	s.srv, s.listener = nil, nil
	s.mu.Unlock()
	if srv == nil {
		return nil // Start failed
	}
	err := srv.Shutdown(ctx)
	if err != nil {
		_ = srv.Close()
	}
	<-stopped
	s.mu.Lock()
	serveErr := s.serveErr
	s.mu.Unlock()
	return errors.Join(err, serveErr)
}

// logRequests logs every request at debug level, and 5xx answers as warnings.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		entry := s.log.WithFields(logrus.Fields{
			"method": r.Method, "path": r.URL.Path, "status": rec.status, "duration": time.Since(start).Round(time.Microsecond),
		})
		if rec.status >= 500 {
			entry.Warn("api request failed")
		} else {
			entry.Debug("api request")
		}
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, r, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.st.Ping(ctx); err != nil {
		s.log.WithError(err).Warn("api: readiness check: database unreachable")
		// The driver's error can carry the DSN's host, user or file path:
		// it goes to the log, and /readyz is public.
		s.writeJSON(w, r, http.StatusServiceUnavailable, Error{Error: "database unreachable; see the server log"})
		return
	}
	s.writeJSON(w, r, http.StatusOK, map[string]string{"status": "ready"})
}

var metricsHandler = promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{})

func (s *Server) schedulesChanged(id int64) {
	if s.cfg.OnSchedulesChanged != nil {
		s.cfg.OnSchedulesChanged(id)
	}
}

func (s *Server) jobsAdded() {
	if s.cfg.OnJobsAdded != nil {
		s.cfg.OnJobsAdded()
	}
}
