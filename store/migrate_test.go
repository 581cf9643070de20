package store_test

import (
	"context"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	chimesql "github.com/chimesched/chime/sql"
	"github.com/chimesched/chime/store"
)

// ApplyMigrations says which migrations it applied, by version and name,
// and applies none the second time: the schema version alone read the same
// both times.
func TestApplyMigrationsSaysWhich(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	st, err := store.Open(ctx, store.Config{Driver: store.SQLite, DSN: filepath.Join(t.TempDir(), "chime.db"), Logger: log})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	files, err := fs.Glob(chimesql.Migrations, "sqlite/*.sql")
	require.NoError(t, err)
	require.NotEmpty(t, files)

	res, err := st.ApplyMigrations(ctx)
	require.NoError(t, err)
	require.Len(t, res.Applied, len(files))
	require.Equal(t, store.Migration{Version: 1, Name: "init"}, res.Applied[0])
	require.Equal(t, "00001_init", res.Applied[0].String())
	last := res.Applied[len(res.Applied)-1]
	require.Equal(t, last.Version, res.Version)
	require.Equal(t, filepath.Base(files[len(files)-1]), last.String()+".sql")

	again, err := st.ApplyMigrations(ctx)
	require.NoError(t, err)
	require.Empty(t, again.Applied)
	require.Equal(t, res.Version, again.Version)

	// After a rollback of the last two, exactly those two. (Versions may
	// have gaps: branches take their numbers before they merge.)
	require.NoError(t, st.MigrateDownTo(ctx, res.Applied[len(res.Applied)-3].Version))
	partial, err := st.ApplyMigrations(ctx)
	require.NoError(t, err)
	require.Equal(t, res.Applied[len(res.Applied)-2:], partial.Applied)
	require.Equal(t, res.Version, partial.Version)
}
