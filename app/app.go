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
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/api"
	"github.com/chimesched/chime/cluster"
	"github.com/chimesched/chime/configs"
	"github.com/chimesched/chime/internal/metrics"
	"github.com/chimesched/chime/notify"
	"github.com/chimesched/chime/scheduleengine"
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
}

// OpenStore opens the configured database.
func OpenStore(ctx context.Context, cfg *configs.Config, log logrus.FieldLogger) (*store.Store, error) {
	return store.Open(ctx, store.Config{
		Driver:       store.Dialect(cfg.Database.Driver),
		DSN:          cfg.Database.DSN,
		MaxOpenConns: cfg.Database.MaxOpenConns,
		Logger:       log,
	})
}

// Migrate applies the embedded migrations and returns the schema version.
func Migrate(ctx context.Context, cfg *configs.Config, log logrus.FieldLogger) (int64, error) {
	st, err := OpenStore(ctx, cfg, log)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	v, err := st.Migrate(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	return v, nil
}

// Serve runs a chime node until ctx ends, then stops it gracefully: the
// schedule engine first (no new fires), then the task engine (running jobs
// get cfg.ShutdownGrace to finish), then the mailer's queue.
func Serve(ctx context.Context, cfg *configs.Config, opts Options) error {
	log := opts.Logger
	if log == nil {
		log = logrus.StandardLogger()
	}
	st, err := OpenStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer st.Close()
	if !opts.NoMigrate {
		v, err := st.Migrate(ctx)
		if err != nil {
			return err
		}
		log.WithField("schema_version", v).Info("schema is up to date")
	}
	if err := applyConfigurations(ctx, st, cfg); err != nil {
		return err
	}
	warnNoSMTP(ctx, st, cfg, log)
	n := &node{cfg: cfg, log: log, st: st}
	if err := n.start(ctx, opts); err != nil {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		return errors.Join(err, n.stop(stopCtx))
	}
	log.WithFields(logrus.Fields{
		"node_id": cfg.Node.ID, "driver": cfg.Database.Driver, "version": Version,
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

// node is one running chime process's parts, started in dependency order
// and stopped in reverse.
type node struct {
	cfg *configs.Config
	log *logrus.Logger
	st  *store.Store

	cluster *cluster.Node
	mailer  *notify.Mailer
	sender  *notify.Sender
	tasks   *taskengine.Engine
	sched   *scheduleengine.Engine
	api     *api.Server
}

func (n *node) start(ctx context.Context, opts Options) error {
	cfg := n.cfg
	reg := opts.Registry
	if reg == nil {
		reg = tasks.Default()
	}
	if cfg.SMTP.Host != "" {
		m, err := notify.New(notify.Config{
			Host: cfg.SMTP.Host, Port: cfg.SMTP.Port, Username: cfg.SMTP.Username,
			Password: cfg.SMTP.Password, From: cfg.SMTP.From, TLS: cfg.SMTP.TLS,
		}, &notify.Options{
			Logger:    n.log,
			LogTailer: n.st,
			OnFailure: func(int64, error) { metrics.NotificationFailures.Inc() },
		})
		if err != nil {
			return err
		}
		n.mailer = m
	}
	// Membership first: the task engine's recovery and the scheduler's
	// election both assume this node is registered and beating.
	var roles []string
	if cfg.ScheduleEngine.Enabled {
		roles = append(roles, "scheduler")
	}
	if cfg.TaskEngine.Enabled {
		roles = append(roles, "worker")
	}
	cn, err := cluster.New(n.st, &cluster.Config{
		NodeID: cfg.Node.ID, Roles: strings.Join(roles, ","), Version: Version,
		Heartbeat: cfg.Cluster.Heartbeat.D(), FailoverAfter: cfg.Cluster.FailoverAfter.D(),
		RetentionDays: cfg.RetentionDays, Logger: n.log,
	})
	if err != nil {
		return err
	}
	if err := cn.Start(ctx); err != nil {
		return err
	}
	n.cluster = cn
	if !slices.Contains(reg.Kinds(), "sleep") {
		var bopts []builtin.Option
		if n.mailer != nil {
			bopts = append(bopts, builtin.WithSender(n.mailer))
		}
		if err := builtin.Register(reg, bopts...); err != nil {
			return err
		}
	}
	var wake func()
	if cfg.TaskEngine.Enabled {
		te, err := taskengine.New(n.st, taskengine.Config{
			NodeID:          cfg.Node.ID,
			Logger:          n.log,
			PollInterval:    cfg.TaskEngine.PollInterval.D(),
			PoolSize:        cfg.TaskEngine.PoolSize,
			ControlInterval: cfg.TaskEngine.ControlInterval.D(),
			ShutdownGrace:   cfg.ShutdownGrace.D(),
			// Running jobs' heartbeat_at must beat as often as the node, or the
			// reconciler would take them for stalled in a short failover window.
			HeartbeatInterval: cfg.Cluster.Heartbeat.D(),
			Registry:          reg,
		})
		if err != nil {
			return err
		}
		if err := te.Start(ctx); err != nil {
			return err
		}
		n.tasks = te
		wake = te.Wake
	}
	if n.mailer != nil {
		// Every node with SMTP sends from the outbox, whatever its roles:
		// notices of jobs failed by failover or canceled need no worker.
		o := senderTuning
		o.NodeID, o.Logger = cfg.Node.ID, n.log
		o.OnFailure = func(int64, error) { metrics.NotificationFailures.Inc() }
		n.sender = notify.NewSender(n.mailer, n.st, o)
		n.sender.Start(ctx)
	}
	if cfg.ScheduleEngine.Enabled {
		se, err := scheduleengine.New(n.st, &scheduleengine.Config{
			NodeID:           cfg.Node.ID,
			Logger:           n.log,
			SyncInterval:     cfg.ScheduleEngine.SyncInterval.D(),
			MisfireThreshold: cfg.ScheduleEngine.MisfireThreshold.D(),
			FireAllCap:       cfg.ScheduleEngine.FireAllCap,
			BatchSize:        cfg.ScheduleEngine.BatchSize,
			BatchWait:        cfg.ScheduleEngine.BatchWait.D(),
			OnFire:           wake,
			// The scheduler lease is the cluster's, judged on the
			// database's clock; the engine follows it.
			Leadership: cn.SchedulerElector(),
		})
		if err != nil {
			return err
		}
		if err := se.Start(ctx); err != nil {
			return err
		}
		n.sched = se
	}
	srv, err := api.New(api.Config{
		Store: n.st, Registry: reg, Token: cfg.API.Token, Addr: cfg.API.Addr,
		Logger: n.log, NodeID: cfg.Node.ID,
		OnSchedulesChanged: func(int64) {
			if n.sched != nil {
				n.sched.Refresh()
			}
		},
		OnJobsAdded: wake,
	})
	if err != nil {
		return err
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	n.api = srv
	return nil
}

func (n *node) stop(ctx context.Context) error {
	var errs []error
	if n.api != nil {
		errs = append(errs, n.api.Stop(ctx))
	}
	if n.sched != nil {
		errs = append(errs, n.sched.Stop(ctx))
	}
	if n.tasks != nil {
		errs = append(errs, n.tasks.Stop(ctx))
	}
	if n.sender != nil {
		errs = append(errs, n.sender.Stop(ctx))
	}
	if n.mailer != nil {
		errs = append(errs, n.mailer.Close(ctx))
	}
	if n.cluster != nil {
		errs = append(errs, n.cluster.Stop(ctx))
	}
	return errors.Join(errs...)
}

// senderTuning is the outbox sender's timing; zero fields take
// notify's defaults. Tests shorten it.
var senderTuning notify.SenderOptions

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

// applyConfigurations lets the paper's Configuration table override the file:
// a row named like a key path ("smtp.from", "taskengine.pool_size") wins over
// chime.yaml, and CHIME_* variables still win over both, since an operator
// sets those for one process on purpose.
func applyConfigurations(ctx context.Context, st *store.Store, cfg *configs.Config) error {
	rows, err := st.Admin().ListConfigurations(ctx)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return nil
	}
	settings := make(map[string]string, len(rows))
	for _, r := range rows {
		settings[strings.TrimSpace(r.Name)] = r.Value
	}
	return cfg.ApplySettings(settings, nil)
}
