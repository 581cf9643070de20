package app

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/store"
)

// serve's log says which migrations it applied, or that none were needed:
// it said "schema is up to date" right after creating the schema too.
func TestServeLogsTheMigrations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log, hook := test.NewNullLogger()
	log.SetLevel(logrus.InfoLevel)
	st, err := store.Open(ctx, store.Config{Driver: store.SQLite, DSN: filepath.Join(t.TempDir(), "chime.db"), Logger: log})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })

	require.NoError(t, migrateAtStart(ctx, st, log))
	var applied []string
	for _, e := range hook.AllEntries() {
		if e.Message == "applied migration" {
			applied = append(applied, e.Data["migration"].(string))
		}
	}
	require.NotEmpty(t, applied)
	require.Equal(t, "00001_init", applied[0])
	last := hook.LastEntry()
	require.Equal(t, "applied migrations: the schema is up to date", last.Message)
	require.Equal(t, len(applied), last.Data["applied"])
	version := last.Data["schema_version"]

	hook.Reset()
	require.NoError(t, migrateAtStart(ctx, st, log))
	require.Len(t, hook.AllEntries(), 1)
	require.Equal(t, "schema is up to date: no migration needed", hook.LastEntry().Message)
	require.Equal(t, version, hook.LastEntry().Data["schema_version"])
}
