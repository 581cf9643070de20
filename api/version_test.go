package api

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/buildinfo"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

// GET /api/v1/version answers the binary's build, the fields `chime
// version --json` prints; it takes no parameters. (TestAuthAndOps checks
// that it needs the token.) It reads no table, so one database shows it.
func TestVersion(t *testing.T) {
	t.Parallel()
	b := setup(t, testdb.Open(t, store.SQLite))
	got := b.ok(200, "GET", "/api/v1/version", "")
	want := buildinfo.Get()
	require.Equal(t, want.Version, got["version"])
	require.Equal(t, want.GoVersion, got["go_version"])
	require.EqualValues(t, buildinfo.KnownSchema(), got["schema_version"])
	require.Contains(t, got, "commit")
	require.Contains(t, got, "build_date")
	require.Contains(t, got, "modified")
	b.fails(400, "x", "unknown query parameter", "GET", "/api/v1/version?x=1", "")
}
