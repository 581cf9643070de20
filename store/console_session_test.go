package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

func TestConsoleSessionRevocations(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
		require.NoError(t, st.RevokeSession(ctx, "aa", now.Add(time.Hour), now))
		// Two logouts of one session (two tabs) are one revocation.
		require.NoError(t, st.RevokeSession(ctx, "aa", now.Add(time.Hour), now))
		gone, err := st.SessionRevoked(ctx, "aa")
		require.NoError(t, err)
		require.True(t, gone)
		gone, err = st.SessionRevoked(ctx, "bb")
		require.NoError(t, err)
		require.False(t, gone)
		// Past its cookie's expiry a revocation goes at the next logout.
		later := now.Add(2 * time.Hour)
		require.NoError(t, st.RevokeSession(ctx, "bb", later.Add(time.Hour), later))
		gone, err = st.SessionRevoked(ctx, "aa")
		require.NoError(t, err)
		require.False(t, gone)
		gone, err = st.SessionRevoked(ctx, "bb")
		require.NoError(t, err)
		require.True(t, gone)
	})
}
