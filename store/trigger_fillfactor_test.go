package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

// Migration 00029 leaves half of each time_triggers page free on
// PostgreSQL, so that a fire's update of its row can stay on the row's
// page without new index entries (a HOT update).
func TestTimeTriggersFillfactor(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.Postgres)
	var opts []string
	require.NoError(t, st.DB().Raw("SELECT unnest(reloptions) FROM pg_class WHERE oid = 'time_triggers'::regclass").Scan(&opts).Error)
	require.Contains(t, opts, "fillfactor=50")
}
