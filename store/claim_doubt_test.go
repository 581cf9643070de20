package store_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/faultproxy"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// A claim whose COMMIT reaches the server while the answer never reaches
// the node (the primary fails over, or the route drops, right then) has
// committed: the rows are queued or running on the node. Before the fix
// ClaimJobs returned the lost connection's error, the node never ran the
// jobs, and, the node being alive and beating for its jobs, nobody ever
// recovered them: the Patroni failover test found 28 jobs running on a
// live node that ran nothing. ClaimJobs now asks the server whether the
// claim's rows are the node's and returns them when they are; when the
// connection is lost before the COMMIT, the claim rolled back and it
// still returns the error. SQLite has no connection to lose.
func TestClaimCommitAnswerLost(t *testing.T) {
	t.Parallel()
	for _, d := range testdb.ServerDialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st, cfg := testdb.OpenConfig(t, d)
			ctx := context.Background()
			def := testdb.Definition(t, st, &testdb.DefinitionOpts{})
			ids := make([]int64, 3)
			for i := range ids {
				ids[i] = testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID}).ID
			}
			pst, p := viaFaultProxy(t, cfg)
			// The COMMIT statement as each driver sends it: a COM_QUERY;
			// pgx's simple query, NUL-ended (the connection's
			// "read committed" must not match).
			commit := []byte("\x03COMMIT")
			if d == store.Postgres {
				commit = []byte("commit\x00")
			}

			// Lost before the COMMIT: nothing claimed, an error.
			p.CutAfter([]byte("queued_at"))
			_, err := pst.ClaimJobs(ctx, &chimedb.ClaimParams{NodeID: "n1", Now: time.Now(), Limit: 5})
			require.Error(t, err)
			for _, id := range ids {
				require.Equal(t, models.JobPending, testdb.GetJob(t, st, id).Status, "job %d", id)
			}
			// The server rolls the cut claim back only once it reads the
			// end of the stream, which under load comes after ClaimJobs
			// has returned: until then that transaction locks the rows
			// it picked, and the next claim rightly skips them (SKIP
			// LOCKED), claims nothing, and returns its own lost COMMIT as
			// the error it is. A locking read of the rows waits for the
			// rollback.
			require.NoError(t, st.InTx(ctx, func(tx *gorm.DB) error {
				var locked []int64
				return tx.Raw("SELECT id FROM jobs WHERE id IN ? FOR UPDATE", ids).Scan(&locked).Error
			}))

			// Lost after the COMMIT reached the server: the claim stands,
			// and ClaimJobs says so.
			p.CutAfter(commit)
			res, err := pst.ClaimJobs(ctx, &chimedb.ClaimParams{NodeID: "n1", Now: time.Now(), Limit: 5})
			require.NoError(t, err, "the claim committed, and ClaimJobs lost its jobs")
			require.Len(t, res.Jobs, len(ids))
			for _, id := range ids {
				j := testdb.GetJob(t, st, id)
				require.Equal(t, models.JobQueued, j.Status, "job %d", id)
				require.Equal(t, "n1", j.NodeID, "job %d", id)
			}
			for i, j := range res.Jobs {
				require.Equal(t, ids[i], j.ID)
				require.NotNil(t, j.Definition, "job %d's definition", j.ID)
			}
		})
	}
}

// viaFaultProxy opens a second store on cfg's server through a fault proxy.
func viaFaultProxy(t *testing.T, cfg store.Config) (*store.Store, *faultproxy.Proxy) {
	t.Helper()
	target := cfg.DSN
	if cfg.Driver == store.Postgres {
		u, err := url.Parse(cfg.DSN)
		require.NoError(t, err)
		target = u.Host
	} else {
		target = target[strings.Index(target, "tcp(")+4:]
		target = target[:strings.Index(target, ")")]
	}
	p, err := faultproxy.Start(target)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	pcfg := cfg
	pcfg.DSN = strings.Replace(cfg.DSN, target, p.Addr(), 1)
	pst, err := store.Open(context.Background(), pcfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = pst.Close() })
	return pst, p
}
