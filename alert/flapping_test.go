package alert_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// TestLeaseFlapping: the scheduler lease taken more than max_changes
// times within within_seconds alerts once, with who took it; when the
// changes fall out of the window, the alert resolves. Renewals are no
// changes; a holder an admin writes with SQL is one.
func TestLeaseFlapping(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		f := newFix(t, st, time.Now().Add(time.Minute))
		f.rule(models.EventLeaseFlapping, func(r *models.AlertRule) {
			r.Params = models.JSON(`{"max_changes":3,"within_seconds":600}`)
		})
		f.rule(models.EventLeaseFlapping, func(r *models.AlertRule) {
			r.Params = models.JSON(`{"max_changes":1,"within_seconds":600,"lease":"maintenance"}`)
		})
		take := func(holder string) {
			t.Helper()
			try, err := st.TryAcquireLease(f.ctx, "scheduler", holder, time.Minute)
			require.NoError(t, err)
			require.True(t, try.Held, "%s takes the free lease", holder)
		}
		changes := func() int {
			t.Helper()
			cs, err := st.LeaseChanges(f.ctx, "scheduler", time.Time{}, 0)
			require.NoError(t, err)
			return len(cs)
		}
		take("a") // the lease created: its first holder is a change
		for range 3 {
			take("a") // renewals are none
		}
		require.Equal(t, 1, changes())
		require.NoError(t, st.ReleaseLease(f.ctx, "scheduler", "a"))
		take("b")
		require.NoError(t, st.ReleaseLease(f.ctx, "scheduler", "b"))
		take("a")
		require.Equal(t, 3, changes(), "a release is no change; the next holder is")
		require.Zero(t, f.pass(), "3 changes are not more than 3")
		// An admin hands the lease over by hand.
		require.NoError(t, st.DB().Exec("UPDATE leases SET holder = ? WHERE name = ?", "c", "scheduler").Error)
		require.Equal(t, 4, changes())
		require.Equal(t, 1, f.pass())
		require.Zero(t, f.pass(), "still flapping: one alert per episode")
		p := f.rcv.payloads()
		require.Len(t, p, 1)
		require.Equal(t, models.EventLeaseFlapping, p[0].Event)
		require.Equal(t, "lease:scheduler", p[0].Subject)
		require.Contains(t, p[0].Summary, "changed hands 4 times in the last 10m0s (more than 3); last taken by c")
		require.EqualValues(t, 4, p[0].Details["changes"])
		require.Equal(t, []any{"a", "b", "a", "c"}, p[0].Details["last_holders"])

		// Ten minutes on, the changes are out of the window: calm again.
		f.clock.Advance(11 * time.Minute)
		require.Equal(t, 1, f.pass())
		require.Equal(t, []string{"lease_flapping/firing", "lease_flapping/resolved"}, f.rcv.events())
		require.Contains(t, f.rcv.payloads()[1].Summary, "the scheduler lease has calmed down: 0 changes")
		require.Zero(t, f.pass())

		// The evaluator keeps them a week and a day (the widest window a
		// rule may ask, and some), then deletes them.
		n, err := st.PruneLeaseChanges(f.ctx, f.clock.Now().Add(-time.Hour))
		require.NoError(t, err)
		require.Zero(t, n)
		f.clock.Advance(8 * 24 * time.Hour)
		require.Zero(t, f.pass())
		n, err = st.PruneLeaseChanges(f.ctx, f.clock.Now())
		require.NoError(t, err)
		require.Zero(t, n, "the evaluator deleted them already")
		require.Zero(t, changes())
	})
}
