package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/buildinfo"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

// migrate --status and --dry-run change nothing and say what a run would
// do; a database that a newer chime migrated is refused by migrate, by
// --status and by serve, with what to do, unless compatible_schema
// declares it. On each database.
func TestMigrateStatusAndNewerSchema(t *testing.T) {
	t.Parallel()
	known := buildinfo.KnownSchema()
	for _, d := range testdb.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			sc := testdb.Config(t, d)
			dir := t.TempDir()
			config := filepath.Join(dir, "chime.yaml")
			yaml := fmt.Sprintf("database:\n  driver: %s\n  dsn: %q\nlog:\n  level: warn\napi:\n  token_file: %q\n",
				d, sc.DSN, filepath.Join(dir, "api.token"))
			require.NoError(t, os.WriteFile(config, []byte(yaml), 0o600))

			out, errOut, code := runChime(t, "migrate", "--status", "--config", config)
			require.Equal(t, 0, code, errOut)
			require.Contains(t, out, "pending  00001_init\n")
			require.NotContains(t, out, "applied ")
			require.Contains(t, out, fmt.Sprintf("schema version 0 (%s); this chime knows up to %d; %d pending\n", d, known, known))

			out, errOut, code = runChime(t, "migrate", "--dry-run", "--config", config)
			require.Equal(t, 0, code, errOut)
			require.True(t, strings.HasPrefix(out, "would apply 00001_init\n"), out)
			require.Contains(t, out, fmt.Sprintf("would apply %05d_", known))

			// Neither wrote: not even goose's table.
			st, err := store.Open(context.Background(), sc)
			require.NoError(t, err)
			status, err := st.SchemaStatus(context.Background())
			require.NoError(t, err)
			require.Zero(t, status.Version)
			require.NoError(t, st.Close())

			_, errOut, code = runChime(t, "migrate", "--config", config)
			require.Equal(t, 0, code, errOut)
			out, errOut, code = runChime(t, "migrate", "--status", "--config", config)
			require.Equal(t, 0, code, errOut)
			require.Contains(t, out, "applied  00001_init\n")
			require.NotContains(t, out, "pending ")
			out, errOut, code = runChime(t, "migrate", "--dry-run", "--config", config)
			require.Equal(t, 0, code, errOut)
			require.Equal(t, fmt.Sprintf("schema version %d (%s); this chime knows up to %d; 0 pending\n", known, d, known), out)

			// A newer chime's migration, as goose records it.
			newer := known + 1
			st, err = store.Open(context.Background(), sc)
			require.NoError(t, err)
			require.NoError(t, st.DB().Exec("INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, ?)", newer, true).Error)
			require.NoError(t, st.Close())

			hint := fmt.Sprintf("set database.compatible_schema (CHIME_DATABASE_COMPATIBLE_SCHEMA) to %d", newer)
			_, errOut, code = runChime(t, "migrate", "--config", config)
			require.NotEqual(t, 0, code)
			require.Contains(t, errOut, fmt.Sprintf("schema is version %d, newer than %d, the newest this chime", newer, known))
			require.Contains(t, errOut, hint)
			out, errOut, code = runChime(t, "migrate", "--status", "--config", config)
			require.NotEqual(t, 0, code)
			require.Contains(t, out, fmt.Sprintf("unknown  %05d (not in this chime: a newer chime applied it)\n", newer))
			require.Contains(t, errOut, hint)
			// serve refuses before it migrates, joins or listens.
			_, errOut, code = runChime(t, "serve", "--config", config)
			require.NotEqual(t, 0, code)
			require.Contains(t, errOut, hint)

			declared := filepath.Join(dir, "declared.yaml")
			require.NoError(t, os.WriteFile(declared, []byte(strings.Replace(yaml, "database:\n",
				fmt.Sprintf("database:\n  compatible_schema: %d\n", newer), 1)), 0o600))
			out, errOut, code = runChime(t, "migrate", "--config", declared)
			require.Equal(t, 0, code, errOut)
			require.Contains(t, out, "up to date, no migration needed")
		})
	}
}

// chime version prints the build and the schema it knows; --json the
// fields of GET /api/v1/version.
func TestVersionCommand(t *testing.T) {
	t.Parallel()
	out, errOut, code := runChime(t, "version")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `^chime \S+\ncommit: \S.*\nbuilt: \S+\ngo: go\S+\nschema: `+fmt.Sprint(buildinfo.KnownSchema())+"\n$", out)
	out, errOut, code = runChime(t, "version", "--json")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, fmt.Sprintf(`"schema_version": %d`, buildinfo.KnownSchema()))
	_, _, code = runChime(t, "version", "extra")
	require.NotEqual(t, 0, code)
}
