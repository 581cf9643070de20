package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

// A node whose clock is minutes off, ahead or behind, neither steals the
// live lease nor declares the live leader dead, and a skewed leader keeps
// its lease: every judgement is made on the database's clock. The control
// at the end shows the same node does act on real silence and expiry.
func TestSkewedClockNeitherStealsNorKills(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name         string
		leader, peer time.Duration // skew of each node's clock
	}{
		{"peer_ahead_10m", 0, 10 * time.Minute},
		{"peer_behind_10m", 0, -10 * time.Minute},
		{"leader_behind_10m", -10 * time.Minute, 0},
		{"leader_ahead_10m", 10 * time.Minute, 0},
	}
	for _, d := range testdb.Dialects {
		for _, c := range cases {
			t.Run(fmt.Sprint(d, "/", c.name), func(t *testing.T) {
				st := testdb.Open(t, d)
				ctx := context.Background()
				aClock := clockwork.NewFakeClockAt(time.Now().Add(c.leader))
				bClock := clockwork.NewFakeClockAt(time.Now().Add(c.peer))
				a := newTestNode(t, st, "a", aClock)
				b := newTestNode(t, st, "b", bClock)
				a.sched.renew(ctx)
				require.True(t, a.sched.Leading())

				// b lives through three failover windows by its own clock, in a
				// few real milliseconds: it judges, and finds a alive.
				for range 3 * int(testFailover/testHeartbeat) {
					bClock.Advance(testHeartbeat)
					b.beatOnce(ctx)
					b.sched.renew(ctx)
					require.False(t, b.sched.Leading(), "b must not take a live lease")
				}
				require.GreaterOrEqual(t, b.members.ContactFor(), testFailover, "b was in a position to judge")
				require.Equal(t, chimedb.NodeAlive, nodeStatus(t, st, "a"), "a live node must not be declared dead")
				aClock.Advance(testHeartbeat)
				a.beatOnce(ctx)
				a.sched.renew(ctx)
				require.True(t, a.sched.Leading(), "the skewed leader keeps its lease")
				l, err := st.GetLease(ctx, chimedb.SchedulerLease)
				require.NoError(t, err)
				require.Equal(t, "a", l.Holder)
				require.True(t, l.Live)

				// Control: real silence and a real expiry, by the database's clock.
				ageNode(t, st, "a", time.Minute)
				require.NoError(t, st.DB().Exec("UPDATE leases SET expires_at = ? WHERE name = ?",
					store.DBTime(time.Now().Add(-time.Minute)), chimedb.SchedulerLease).Error)
				bClock.Advance(testHeartbeat)
				b.beatOnce(ctx)
				b.sched.renew(ctx)
				require.Equal(t, chimedb.NodeDead, nodeStatus(t, st, "a"))
				require.True(t, b.sched.Leading())
				a.sched.renew(ctx)
				require.False(t, a.sched.Leading(), "a sees it lost the lease")
			})
		}
	}
}

// A leader stops leading at its renewal's start + TTL − margin on its own
// clock, while the lease is still live in the database: it stops firing
// before anyone can take over. OnChange hears both changes.
func TestLeaderStopsBeforeLeaseExpires(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		clock := clockwork.NewFakeClockAt(time.Now())
		// A real TTL long enough that the database lease outlives the test.
		e, err := NewElector(st, &ElectorConfig{Name: "x", Holder: "a", TTL: time.Minute, Renew: time.Second, Margin: 5 * time.Second, Clock: clock, Logger: testLogger()})
		require.NoError(t, err)
		var changes []bool
		e.OnChange(func(v bool) { changes = append(changes, v) })
		e.renew(ctx)
		require.True(t, e.Leading())
		clock.Advance(time.Minute - 5*time.Second - time.Millisecond)
		require.True(t, e.Leading())
		clock.Advance(time.Millisecond)
		require.False(t, e.Leading())
		e.publish()
		l, err := st.GetLease(ctx, "x")
		require.NoError(t, err)
		require.True(t, l.Live, "the database lease is still live when the leader has stopped")
		try, err := st.TryAcquireLease(ctx, "x", "b", time.Minute)
		require.NoError(t, err)
		require.False(t, try.Held)
		require.Equal(t, []bool{true, false}, changes)
		e.renew(ctx)
		require.True(t, e.Leading(), "the holder may renew an unexpired lease")
		require.NoError(t, e.Stop(ctx), "stop before start is harmless")
	})
}
