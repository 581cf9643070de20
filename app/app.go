// Package app assembles a chime node from configuration: the store, the
// schedule engine, the task engine, email notifications and the API, with one
// start and one graceful stop. It is what `chime serve` runs, and what a
// program that adds its own task plugins runs through cli.Main (see
// examples/report).
//
// app may import every chime package except cli and cmd.
package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/alert"
	"github.com/chimesched/chime/api"
	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/cluster"
	"github.com/chimesched/chime/configs"
	"github.com/chimesched/chime/console"
	"github.com/chimesched/chime/internal/metrics"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/notify"
	"github.com/chimesched/chime/scheduleengine"
	"github.com/chimesched/chime/secrets"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/taskengine"
	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/tasks/builtin"
)

// Options are what a caller may set beyond the configuration.
type Options struct {
	// NoMigrate skips applying migrations at start.
	NoMigrate bool
	// Logger receives every line (default: logrus's standard logger).
	Logger *logrus.Logger
	// Registry holds the task types this node runs (default: tasks.Default()).
	// The built-in tasks are added to it unless it already has them.
	Registry *tasks.Registry
	// OnFireCommitted is the schedule engine's (see scheduleengine.Config),
	// for benchmarks.
	OnFireCommitted func(due, committed time.Time)
}

// StoreConfig is how cfg opens the database.
func StoreConfig(cfg *configs.Config, log logrus.FieldLogger) store.Config {
	return store.Config{
		Driver:       store.Dialect(cfg.Database.Driver),
		DSN:          cfg.Database.DSN,
		MaxOpenConns: cfg.Database.MaxOpenConns,
		Logger:       log,
		Holder:       "chime node " + cfg.Node.ID,
		OnTxRetry:    func(reason string) { metrics.TxRetries.WithLabelValues(reason).Inc() },
	}
}

// OpenStore opens the configured database. A SQLite file is this process's
// alone until the store is closed: a second chime process on it is refused
// (store.ErrSQLiteInUse) instead of joining as a second node.
func OpenStore(ctx context.Context, cfg *configs.Config, log logrus.FieldLogger) (*store.Store, error) {
	sc := StoreConfig(cfg, log)
	sc.Exclusive = true
	return store.Open(ctx, sc)
}

// Migrate applies the embedded migrations and says which it applied.
func Migrate(ctx context.Context, cfg *configs.Config, log logrus.FieldLogger) (store.MigrateResult, error) {
	st, err := OpenStore(ctx, cfg, log)
	if err != nil {
		return store.MigrateResult{}, err
	}
	defer st.Close()
	if err := checkSchema(ctx, st, cfg, log); err != nil {
		return store.MigrateResult{}, err
	}
	res, err := st.ApplyMigrations(ctx)
	if err != nil {
		return res, fmt.Errorf("migrate: %w", err)
	}
	return res, nil
}

// migrateAtStart applies the migrations serve starts with and logs which,
// or that none were needed: an upgrade is seen in the log.
func migrateAtStart(ctx context.Context, st *store.Store, log logrus.FieldLogger) error {
	res, err := st.ApplyMigrations(ctx)
	for _, m := range res.Applied {
		log.WithFields(logrus.Fields{"migration": m.String(), "version": m.Version}).Info("applied migration")
	}
	if err != nil {
		return err
	}
	if len(res.Applied) == 0 {
		log.WithField("schema_version", res.Version).Info("schema is up to date: no migration needed")
		return nil
	}
	log.WithFields(logrus.Fields{"schema_version": res.Version, "applied": len(res.Applied)}).
		Info("applied migrations: the schema is up to date")
	return nil
}

// Serve runs a chime node until ctx ends, then stops it gracefully within
// cfg.ShutdownGrace and some margin: its services stop in the reverse of
// their start (see node.plan), the API first and the cluster membership
// last, so running jobs get their grace on a node that still beats.
func Serve(ctx context.Context, cfg *configs.Config, opts Options) error {
	log := opts.Logger
	if log == nil {
		log = logrus.StandardLogger()
	}
	if err := hardenProcess(); err != nil {
		log.WithError(err).Warn("could not make the process non-dumpable: same-user jobs may read its environment")
	}
	st, err := OpenStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := checkSchema(ctx, st, cfg, log); err != nil {
		return err
	}
	if !opts.NoMigrate {
		if err := migrateAtStart(ctx, st, log); err != nil {
			return err
		}
	}
	base := *cfg
	n := &node{cfg: cfg, base: &base, log: log, st: st}
	if err := n.loadSettings(ctx); err != nil {
		return err
	}
	// api.token comes only from the file or the environment; without one,
	// the node generates or reads its token file.
	if err := EnsureToken(cfg, log); err != nil {
		return err
	}
	warnNoSMTP(ctx, st, cfg, log)
	if err := n.start(ctx, opts); err != nil {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		return errors.Join(err, n.stop(stopCtx))
	}
	log.WithFields(logrus.Fields{
		"node_id": cfg.Node.ID, "driver": cfg.Database.Driver, "version": Build().Version,
		"commit": Build().Commit, "schema_known": Build().Schema,
		"scheduler": cfg.ScheduleEngine.Enabled, "worker": cfg.TaskEngine.Enabled,
	}).Info("chime node started")
	<-ctx.Done()
	log.Info("shutting down")
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownGrace.D()+10*time.Second)
	defer cancel()
	err = n.stop(stopCtx)
	log.Info("chime node stopped")
	return err
}

// node is one running chime process's parts, started in stages (plan) and
// stopped in reverse.
type node struct {
	cfg  *configs.Config // in effect: base with the configurations rows
	base *configs.Config // file, environment and flags
	log  *logrus.Logger
	st   *store.Store
	// clock drives the settings watcher (default: the real clock).
	clock clockwork.Clock

	settings *settings
	cluster  *cluster.Node
	mailer   *liveMailer
	sender   *notify.Sender
	alerts   *alert.Dispatcher
	judge    *alert.Evaluator
	tasks    *taskengine.Engine
	sched    *scheduleengine.Engine
	api      *api.Server
	apiLn    net.Listener // opened before joining; served from the last stage
	// keys seal and open the secrets table: from the file or the
	// environment only (secrets.*), never from a configurations row.
	keys     *secrets.Keyring
	services services
	abort    context.CancelFunc // ends the context the services run in
}

// loadSettings applies the configurations rows over the file and
// environment. A bad row is logged and ignored, never a reason not to start.
func (n *node) loadSettings(ctx context.Context) error {
	n.settings = newSettings(n.base, n.st, n.log)
	eff, err := n.settings.load(ctx)
	if err != nil {
		return fmt.Errorf("read the configurations table: %w", err)
	}
	*n.cfg = *eff
	n.settings.current = eff
	if eff.Log.Level != n.base.Log.Level {
		if err := setLogLevel(n.log, eff.Log.Level); err != nil {
			return err
		}
	}
	return nil
}

func setLogLevel(log *logrus.Logger, level string) error {
	lvl, err := logrus.ParseLevel(strings.ToLower(level))
	if err != nil {
		return fmt.Errorf("log.level: %w", err)
	}
	log.SetLevel(lvl)
	return nil
}

// watchSettings applies changed configurations rows while the node runs,
// every scheduleengine.sync_interval: the interval at which the node picks
// up other plain-SQL changes too.
func (n *node) watchSettings(ctx context.Context) {
	h := hooks{
		retentionDays: n.cluster.SetRetentionDays,
		smtp:          n.mailer.set,
		logLevel:      func(l string) error { return setLogLevel(n.log, l) },
	}
	if n.tasks != nil {
		h.poolSize, h.pollInterval = n.tasks.SetPoolSize, n.tasks.SetPollInterval
	}
	clock := n.clock
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	n.settings.watch(ctx, clock, n.cfg.ScheduleEngine.SyncInterval.D(), h)
}

// start builds every service, then starts them stage by stage. Building
// first means that whatever can fail on this node alone (a bad setting,
// api.addr, a port in use, a bad TLS pair) fails before the node joins the
// cluster, leaving no node row, lease or claimed job behind.
//
// The services run until stop, not until ctx ends: a serve context that
// ends (SIGTERM) must not stop the cluster membership before the task
// engine's grace is over. ctx ending while they start aborts the start.
func (n *node) start(ctx context.Context, opts Options) error {
	if err := n.build(ctx, opts); err != nil {
		return err
	}
	run, abort := context.WithCancel(context.WithoutCancel(ctx))
	n.abort = abort
	detach := context.AfterFunc(ctx, abort)
	defer detach()
	return n.services.start(run)
}

// stop stops the services in the reverse of their start, within ctx.
func (n *node) stop(ctx context.Context) error {
	err := n.services.stop(ctx)
	if n.abort != nil {
		n.abort()
	}
	return err
}

// plan lists the node's services in stages (see services). The order
// constraints that remain, from the first stage up:
//
//  0. The mailer: the sender and the email task send through it; it is
//     closed once neither can send any more.
//  1. The cluster membership, and the outbox sender. The task engine's
//     recovery and the scheduler's election assume this node is
//     registered; it leaves (and gives its leases back) only once the
//     engines have stopped, so it beats through the shutdown grace. The
//     sender needs neither engine; stopping after them, it may still send
//     the notices of their last jobs.
//  2. The task engine.
//  3. The schedule engine, whose fires hand jobs to the task engine and
//     wake it, and which stops first so that no fire reaches a stopping
//     task engine; beside it, on PostgreSQL, the LISTEN for jobs other
//     writers insert, which wakes the task engine too.
//  4. The API, last up and first down, so no request reaches a service
//     that has not started or has stopped; beside it the settings watcher,
//     which retunes the services below.
func (n *node) plan() []stage {
	s := []stage{
		{{"mailer", mailerService{n.mailer}}},
		{{"cluster", n.cluster}, {"notification sender", n.sender}, {"alert dispatcher", n.alerts}, {"alert evaluator", n.judge}},
		nil,
		nil,
		{{"api", apiService{n.api, n.apiLn}}, {"settings watcher", &loop{run: n.watchSettings}}},
	}
	if n.tasks != nil {
		s[2] = append(s[2], named{"task engine", n.tasks})
		if n.st.Dialect() == store.Postgres {
			s[3] = append(s[3], named{"jobs listener", &loop{run: n.listenJobs}})
		}
	}
	if n.sched != nil {
		s[3] = append(s[3], named{"schedule engine", n.sched})
	}
	return slices.DeleteFunc(s, func(st stage) bool { return len(st) == 0 })
}

// build makes every service of the node, stopped, and plans their stages.
func (n *node) build(ctx context.Context, opts Options) error {
	reg := opts.Registry
	if reg == nil {
		reg = tasks.Default()
	}
	// Always a mailer, off without smtp.host: smtp.* rows can turn email on
	// or change it while the node runs.
	n.mailer = &liveMailer{log: n.log, tail: n.st}
	if err := n.mailer.set(n.cfg.SMTP); err != nil {
		return err
	}
	// Should what follows fail, stop closes the mailer all the same.
	n.services.stages = []stage{{{"mailer", mailerService{n.mailer}}}}
	if err := n.loadKeys(); err != nil {
		return err
	}
	if !slices.Contains(reg.Kinds(), "sleep") {
		if err := builtin.Register(reg, builtin.WithSender(n.mailer)); err != nil {
			return err
		}
	}
	if err := n.buildCluster(); err != nil {
		return err
	}
	if err := n.buildEngines(ctx, reg, opts); err != nil {
		return err
	}
	// Every node sends from the outbox while it has SMTP, whatever its
	// roles: notices of jobs failed by failover or canceled need no worker.
	// smtp.* rows may turn email on or off while it runs.
	o := senderTuning
	o.NodeID, o.Logger = n.cfg.Node.ID, n.log
	o.OnFailure = func(int64, error) { metrics.NotificationFailures.Inc() }
	var err error
	if n.sender, err = notify.NewSender(n.st, n.mailer.get, &o); err != nil {
		return err
	}
	n.buildAlerts()
	// Last: once the listener is open, nothing else can fail to build.
	if err := n.buildAPI(reg); err != nil {
		return err
	}
	n.services.stages = n.plan()
	return nil
}

// loadKeys reads the keys of the secrets table. A key that does not
// parse stops the start; no key at all is allowed, and every use of a
// secret then fails with secrets.ErrNoKey.
func (n *node) loadKeys() error {
	s := n.base.Secrets
	kr, err := secrets.LoadKeyring(s.Key, s.OldKeys, s.KeyFile)
	if err != nil {
		return fmt.Errorf("secrets (CHIME_SECRETS_KEY, CHIME_SECRETS_OLD_KEYS, CHIME_SECRETS_KEY_FILE): %w", err)
	}
	n.keys = kr
	if kr.Configured() {
		n.log.WithField("key_id", kr.CurrentID()).Info("secrets: encryption key configured")
	} else {
		n.log.Debug("secrets: no encryption key configured; jobs referring to secrets fail on this node")
	}
	return nil
}

// buildAlerts makes the alert dispatcher every node runs and the
// evaluator that judges the rules while this node holds the maintenance
// lease (package alert).
func (n *node) buildAlerts() {
	a := alertTuning
	a.NodeID, a.Logger, a.Mailer, a.SelfHosts = n.cfg.Node.ID, n.log, n.mailer.get, []string{n.cfg.API.Addr}
	n.alerts = alert.NewDispatcher(n.st, &a)
	e := evaluatorTuning
	e.Leading, e.Logger, e.OnRecorded = n.cluster.MaintenanceLeading, n.log, n.alerts.Wake
	n.judge = alert.NewEvaluator(n.st, &e)
}

// alertTuning and evaluatorTuning are alerting's timing; zero fields take
// package alert's defaults. Tests shorten them.
var (
	alertTuning     alert.DispatcherConfig
	evaluatorTuning alert.EvaluatorConfig
)

// buildCluster makes the node's membership, with the roles it plays.
func (n *node) buildCluster() error {
	cfg := n.cfg
	var roles []string
	if cfg.ScheduleEngine.Enabled {
		roles = append(roles, "scheduler")
	}
	if cfg.TaskEngine.Enabled {
		roles = append(roles, "worker")
	}
	cn, err := cluster.New(n.st, &cluster.Config{
		NodeID: cfg.Node.ID, Roles: strings.Join(roles, ","), Tags: strings.Join(cfg.Node.TagList(), ","), Version: nodeVersion(),
		Heartbeat: cfg.Cluster.Heartbeat.D(), FailoverAfter: cfg.Cluster.FailoverAfter.D(),
		RetentionDays: cfg.RetentionDays, Logger: n.log,
		// The engines are built after the cluster: these look them up
		// when called.
		OnDrain: func(drain string) {
			if n.tasks != nil {
				n.tasks.SetDrain(drain)
			}
		},
		Idle: func() bool { return n.tasks == nil || n.tasks.Idle() },
	})
	if err != nil {
		return err
	}
	n.cluster = cn
	return nil
}

// buildEngines makes the engines this node's roles ask for.
func (n *node) buildEngines(ctx context.Context, reg *tasks.Registry, opts Options) error {
	cfg := n.cfg
	var wake func()
	var fires scheduleengine.Store = n.st
	if cfg.TaskEngine.Enabled {
		watch, err := n.watchJobs(ctx)
		if err != nil {
			return err
		}
		te, err := taskengine.New(n.st, &taskengine.Config{
			NodeID:          cfg.Node.ID,
			NodeTags:        cfg.Node.TagList(),
			Logger:          n.log,
			PollInterval:    cfg.TaskEngine.PollInterval.D(),
			Watch:           watch,
			WakeInterval:    cfg.TaskEngine.WakeInterval.D(),
			PoolSize:        cfg.TaskEngine.PoolSize,
			Backlog:         cfg.TaskEngine.Backlog,
			ControlInterval: cfg.TaskEngine.ControlInterval.D(),
			DrainTimeout:    cfg.TaskEngine.DrainTimeout.D(),
			ShutdownGrace:   cfg.ShutdownGrace.D(),
			// Running jobs' heartbeat_at must beat as often as the node, or the
			// reconciler would take them for stalled in a short failover window.
			HeartbeatInterval: cfg.Cluster.Heartbeat.D(),
			Registry:          reg,
			Secrets:           &secrets.Source{St: n.st.Admin(), Keys: n.keys},
		})
		if err != nil {
			return err
		}
		n.tasks = te
		wake = te.Wake
		// Fires hand their jobs to this node's workers in their own
		// transaction, when there are free ones.
		fires = te.HandoffStore(n.st)
	}
	if !cfg.ScheduleEngine.Enabled {
		return nil
	}
	se, err := scheduleengine.New(fires, &scheduleengine.Config{
		NodeID:           cfg.Node.ID,
		Logger:           n.log,
		SyncInterval:     cfg.ScheduleEngine.SyncInterval.D(),
		MisfireThreshold: cfg.ScheduleEngine.MisfireThreshold.D(),
		FireAllCap:       cfg.ScheduleEngine.FireAllCap,
		BatchSize:        cfg.ScheduleEngine.BatchSize,
		BatchWait:        cfg.ScheduleEngine.BatchWait.D(),
		FireAhead:        fireAhead(n.st.Dialect(), cfg),
		OnFire:           wake,
		OnFireCommitted:  opts.OnFireCommitted,
		// The scheduler lease is the cluster's, judged on the
		// database's clock; the engine follows it.
		Leadership: n.cluster.SchedulerElector(),
		// And each batch checks that lease in its own transaction, so a
		// COMMIT that reaches the database after the lease passed on
		// (a partition, a frozen process) writes nothing.
		Fence: &chimedb.LeaseFence{Name: chimedb.SchedulerLease, Holder: cfg.Node.ID, IdleTimeout: fenceIdle(n.st.Dialect(), cfg)},
	})
	if err != nil {
		return err
	}
	n.sched = se
	return nil
}

// listenJobs, on PostgreSQL, wakes the task engine on every NOTIFY of a due
// job, so that a job inserted by another node or by plain SQL starts within
// milliseconds instead of at the next poll (elsewhere there is no NOTIFY,
// and plan runs no listener). It returns when ctx ends.
func (n *node) listenJobs(ctx context.Context) {
	if err := n.st.ListenJobs(ctx, n.tasks.Wake); err != nil && ctx.Err() == nil {
		n.log.WithError(err).Warn("not listening for new jobs; they start at the next poll")
	}
}

// watchJobs returns what the task engine reads every
// taskengine.wake_interval to learn of jobs other nodes and plain SQL add:
// nothing on PostgreSQL, where NOTIFY wakes it (see listenJobs), or when
// the interval is 0.
func (n *node) watchJobs(ctx context.Context) (taskengine.JobsWatch, error) {
	if n.st.Dialect() == store.Postgres || n.cfg.TaskEngine.WakeInterval == 0 {
		return nil, nil
	}
	return n.st.WatchJobs(ctx)
}

// buildAPI builds the API server and opens its listener. The callbacks
// reach the engines, which start before the API, through n.
func (n *node) buildAPI(reg *tasks.Registry) (err error) {
	cfg := n.cfg
	ln, err := net.Listen("tcp", cfg.API.Addr)
	if err != nil {
		return fmt.Errorf("api.addr %s (CHIME_API_ADDR): cannot listen: %w", cfg.API.Addr, err)
	}
	defer func() {
		if err != nil {
			_ = ln.Close()
		}
	}()
	n.apiLn = ln
	// Browsers reach the node only over HTTPS when it serves TLS itself or
	// sits behind a proxy that terminates it.
	httpsOnly := cfg.API.TLSCert != "" || cfg.API.TLSProxy
	con, err := console.New(n.st, &console.Config{
		Registry: reg, Token: cfg.API.Token, TokenFile: n.tokenFile(), Secure: httpsOnly,
		FailoverAfter: cfg.Cluster.FailoverAfter.D(), Logger: n.log, Version: Build().Short(),
	})
	if err != nil {
		return err
	}
	srv, err := api.New(n.st, &api.Config{
		Registry: reg, Token: cfg.API.Token, Addr: cfg.API.Addr, Listener: ln,
		TLSCert: cfg.API.TLSCert, TLSKey: cfg.API.TLSKey, HSTS: httpsOnly, FailoverAfter: cfg.Cluster.FailoverAfter.D(),
		Logger: n.log, NodeID: cfg.Node.ID, Settings: n.base, Build: Build(), Secrets: n.keys,
		OnSchedulesChanged: func(int64) {
			if n.sched != nil {
				n.sched.Refresh()
			}
		},
		OnJobsAdded: func() {
			if n.tasks != nil {
				n.tasks.Wake()
			}
		},
		Console: con.Handler,
		TestAlertChannel: func(ctx context.Context, c *models.AlertChannel) error {
			return n.alerts.Send(ctx, c, alert.TestPayload(c, time.Now()))
		},
	})
	if err != nil {
		return err
	}
	n.api = srv
	return nil
}

// tokenFile is the file EnsureToken read the API token from or wrote it
// to, as an absolute path; empty when the configuration set the token.
func (n *node) tokenFile() string {
	if n.base.API.Token != "" {
		return ""
	}
	p, err := TokenFile(n.base)
	if err != nil {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	return p
}

// senderTuning is the outbox sender's timing; zero fields take
// notify's defaults. Tests shorten it.
var senderTuning notify.SenderConfig

// warnNoSMTP warns, at start, when definitions ask for email (notify_on)
// while this node has no smtp.host: their notices are recorded and wait in
// the outbox for a node that can send them. The list is bounded, and a
// database error only costs the warning.
func warnNoSMTP(ctx context.Context, st *store.Store, cfg *configs.Config, log logrus.FieldLogger) {
	if cfg.SMTP.Host != "" {
		return
	}
	const shown = 10
	names, total, err := st.NotifyingDefinitions(ctx, shown)
	if err != nil {
		log.WithError(err).Warn("could not check which definitions ask for email")
		return
	}
	if total == 0 {
		return
	}
	list := strings.Join(names, ", ")
	if total > int64(len(names)) {
		list += fmt.Sprintf(" and %d more", total-int64(len(names)))
	}
	log.WithFields(logrus.Fields{"definitions": list, "count": total}).Warn(
		"definitions ask for email (notify_on) but smtp.host is not set on this node: " +
			"their notices wait in the notifications table until a node with SMTP sends them")
}

// fireAhead is the schedule engine's lead for the configured database:
// none on SQLite, where the batch's open transaction would hold every
// other writer (the task engine's claims and outcomes among them) until
// the instant.
// fenceIdle is how long the database keeps a fire batch's transaction
// while its node sends nothing (chimedb.LeaseFence.IdleTimeout): longer
// than the fire-ahead wait the batch makes on purpose, and short beside the
// lease's TTL, which a takeover waits for anyway.
func fenceIdle(d store.Dialect, cfg *configs.Config) time.Duration {
	ttl := cfg.Cluster.FailoverAfter.D()
	if ttl <= 0 {
		ttl = 20 * time.Second
	}
	return max(ttl/4, fireAhead(d, cfg)+time.Second)
}

func fireAhead(d store.Dialect, cfg *configs.Config) time.Duration {
	if d == store.SQLite {
		return 0
	}
	return cfg.ScheduleEngine.FireAhead.D()
}
