package app

import (
	"context"
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/configs"
	"github.com/chimesched/chime/store"
)

// SchemaTooNewError is why a node, or `chime migrate`, refuses a database
// that a newer chime migrated: this binary does not know what the newer
// migrations changed, so its statements may miss a column the new code
// relies on, or write what the new code reads otherwise.
type SchemaTooNewError struct {
	Driver string
	// Version is the database's schema; Known the newest this binary
	// embeds; Compatible what database.compatible_schema declares.
	Version, Known, Compatible int64
	Build                      string
}

func (e *SchemaTooNewError) Error() string {
	return fmt.Sprintf("the %s database's schema is version %d, newer than %d, the newest this chime (%s) knows: "+
		"a newer chime migrated it. Run a chime whose `chime version` shows schema %d or more (releases.tsv and CHANGELOG.md list them); "+
		"or, only if CHANGELOG.md's upgrade notes say this release runs on schema %d, set database.compatible_schema "+
		"(CHIME_DATABASE_COMPATIBLE_SCHEMA) to %d",
		e.Driver, e.Version, e.Known, e.Build, e.Version, e.Version, e.Version)
}

// SchemaStatus opens the configured database and compares its schema with
// the embedded migrations, writing nothing.
func SchemaStatus(ctx context.Context, cfg *configs.Config, log logrus.FieldLogger) (store.SchemaStatus, error) {
	st, err := OpenStore(ctx, cfg, log)
	if err != nil {
		return store.SchemaStatus{}, err
	}
	defer st.Close()
	return st.SchemaStatus(ctx)
}

// checkSchema refuses a schema newer than this binary knows unless the
// configuration declares it compatible. It runs before any migration is
// applied and before any service starts.
func checkSchema(ctx context.Context, st *store.Store, cfg *configs.Config, log logrus.FieldLogger) error {
	status, err := st.SchemaStatus(ctx)
	if err != nil {
		return fmt.Errorf("read the schema version: %w", err)
	}
	return SchemaAllowed(status, cfg, log)
}

// SchemaAllowed is nil unless status is newer than this chime knows and the
// configuration does not declare it compatible.
func SchemaAllowed(status store.SchemaStatus, cfg *configs.Config, log logrus.FieldLogger) error {
	if !status.Newer() {
		return nil
	}
	if status.Version <= cfg.Database.CompatibleSchema {
		log.WithFields(logrus.Fields{
			"schema_version": status.Version, "schema_known": status.Known,
			"compatible_schema": cfg.Database.CompatibleSchema,
		}).Warn("the database's schema is newer than this chime knows; starting because database.compatible_schema declares it compatible")
		return nil
	}
	return &SchemaTooNewError{
		Driver: cfg.Database.Driver, Version: status.Version, Known: status.Known,
		Compatible: cfg.Database.CompatibleSchema, Build: Build().Short(),
	}
}
