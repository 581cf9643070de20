package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

// next returns the next leadership change an elector published, or fails
// the test when none comes.
func next(t *testing.T, changes <-chan bool) bool {
	t.Helper()
	select {
	case v := <-changes:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("the elector published no change")
		return false
	}
}

// An elector whose context ends stands down (it no longer leads, and says
// so) and starts again like any stopped service; Stop gives the lease back.
func TestElectorStopsWithItsContextAndRestarts(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := t.Context()
		e, err := NewElector(st, &ElectorConfig{Name: "x", Holder: "a", TTL: time.Minute, Renew: 50 * time.Millisecond, Margin: 5 * time.Second, Logger: testLogger()})
		require.NoError(t, err)
		changes := make(chan bool, 8)
		e.OnChange(func(v bool) { changes <- v })

		cctx, cancel := context.WithCancel(ctx)
		require.NoError(t, e.Start(cctx))
		require.True(t, next(t, changes))
		cancel()
		require.False(t, next(t, changes), "an elector whose context ended stands down")
		<-e.Stopped()
		require.False(t, e.Leading())

		require.NoError(t, e.Start(ctx))
		require.True(t, next(t, changes), "a stopped elector starts again")
		require.NoError(t, e.Stop(ctx))
		require.False(t, next(t, changes))
		l, err := st.GetLease(ctx, "x")
		require.NoError(t, err)
		require.False(t, l.Live, "Stop gave the lease back")
	})
}

// A bad ElectorConfig is an error, not a panic.
func TestNewElectorRefusesBadConfig(t *testing.T) {
	t.Parallel()
	st := &store.Store{}
	for _, c := range []*ElectorConfig{
		nil,
		{Holder: "a", TTL: time.Minute, Renew: time.Second},
		{Name: "x", TTL: time.Minute, Renew: time.Second},
		{Name: "x", Holder: "a", Renew: time.Second},
		{Name: "x", Holder: "a", TTL: time.Minute},
		{Name: "x", Holder: "a", TTL: time.Minute, Renew: time.Second, Margin: time.Minute},
	} {
		_, err := NewElector(st, c)
		require.Error(t, err, "%+v", c)
	}
	_, err := NewElector(nil, &ElectorConfig{Name: "x", Holder: "a", TTL: time.Minute, Renew: time.Second})
	require.Error(t, err)
	_, err = NewElector(st, &ElectorConfig{Name: "x", Holder: "a", TTL: time.Minute, Renew: time.Second})
	require.NoError(t, err)
}
