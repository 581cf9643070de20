package store_test

import (
	"context"
	"github.com/chimesched/chime/chimedb"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

// tryLease is TryAcquireLease as (held, expires_at, error).
func tryLease(st *store.Store, name, holder string, ttl time.Duration) (bool, time.Time, error) {
	l, err := st.TryAcquireLease(context.Background(), name, holder, ttl)
	if err != nil {
		return false, time.Time{}, err
	}
	return l.Held, l.ExpiresAt, nil
}

// A lease row written by hand with an absurd expiry (far past any TTL, or
// no time at all) stops no cluster for good: a node that finds it cuts it
// to the database's now + its TTL, says so, and takes the lease over once
// that has passed on the database's clock. UPDATE leases SET holder =
// 'ghost', expires_at = '9999-01-01' stopped every node's fires until
// year 9999, with nothing in the log but "standing by".
func TestAbsurdLeaseExpiresOnTheDatabaseClock(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		require.NoError(t, st.RegisterNode(ctx, &chimedb.RegisterNodeParams{ID: "b"}))
		absurd := []string{"9999-01-01 00:00:00"}
		switch st.Dialect() {
		case store.SQLite:
			absurd = append(absurd, "not a time")
		case store.Postgres:
			absurd = append(absurd, "infinity")
		}
		const ttl = 300 * time.Millisecond
		for _, exp := range absurd {
			_, err := st.TryAcquireLease(ctx, "scheduler", "a", time.Minute)
			require.NoError(t, err)
			require.NoError(t, st.DB().Exec("UPDATE leases SET holder = 'ghost', expires_at = ? WHERE name = 'scheduler'", exp).Error)
			_, err = st.GetLease(ctx, "scheduler")
			require.NoError(t, err, "expires_at %q: the row reads", exp)

			try, err := st.TryAcquireLease(ctx, "scheduler", "b", ttl)
			require.NoError(t, err, "expires_at %q", exp)
			require.False(t, try.Held, "expires_at %q: the lease expires after the TTL, not at once", exp)
			require.Equal(t, "ghost", try.Holder)
			require.False(t, try.HolderLive, "no node is called ghost")
			require.NotEmpty(t, try.Cut, "expires_at %q: cut", exp)
			now, err := st.DBNow(ctx)
			require.NoError(t, err)
			require.False(t, try.ExpiresAt.After(now.Add(ttl)), "expires_at %q: cut to now + TTL, got %v", exp, try.ExpiresAt)

			deadline := time.Now().Add(20 * time.Second)
			for {
				try, err = st.TryAcquireLease(ctx, "scheduler", "b", ttl)
				require.NoError(t, err, "expires_at %q", exp)
				if try.Held {
					break
				}
				require.Empty(t, try.Cut, "cut once")
				require.True(t, time.Now().Before(deadline), "expires_at %q: b never took the lease over", exp)
				time.Sleep(50 * time.Millisecond) // the poll step of a wait with a deadline: the database's clock must pass the TTL
			}
			require.NoError(t, st.ReleaseLease(ctx, "scheduler", "b"))
		}
	})
}

// A lease whose holder is a live node with a sane expiry is neither cut
// nor taken, and the caller hears that the holder is live; the holder's
// own renewals never see a cut.
func TestLiveLeaseIsNotCut(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		require.NoError(t, st.RegisterNode(ctx, &chimedb.RegisterNodeParams{ID: "a"}))
		try, err := st.TryAcquireLease(ctx, "scheduler", "a", time.Minute)
		require.NoError(t, err)
		require.True(t, try.Held)
		// b's TTL is a tenth of a's and a little: a's expiry is as far as
		// it may lie.
		try, err = st.TryAcquireLease(ctx, "scheduler", "b", 6100*time.Millisecond)
		require.NoError(t, err)
		require.False(t, try.Held)
		require.True(t, try.HolderLive)
		require.Empty(t, try.Cut)
		try, err = st.TryAcquireLease(ctx, "scheduler", "a", time.Minute)
		require.NoError(t, err)
		require.True(t, try.Held)
	})
}
