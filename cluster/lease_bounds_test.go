package cluster

import (
	"context"
	"github.com/chimesched/chime/chimedb"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

// A standby that finds the lease held by a name no node has, until year
// 9999, says both, once, and leads once the TTL has passed on the
// database's clock. Before, it stood by until 9999 and logged nothing
// but "standing by".
func TestElectorTakesOverAnAbsurdLease(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		log := logrus.New()
		hook := logtest.NewLocal(log)
		require.NoError(t, st.DB().Exec("INSERT INTO leases (name, holder, expires_at) VALUES ('scheduler', 'ghost', '9999-01-01 00:00:00')").Error)
		e, err := NewElector(st, &ElectorConfig{Name: chimedb.SchedulerLease, Holder: "b", TTL: 300 * time.Millisecond, Renew: 100 * time.Millisecond,
			Margin: 50 * time.Millisecond, Clock: clockwork.NewFakeClock(), Logger: log})
		require.NoError(t, err)
		e.renew(ctx)
		require.False(t, e.Leading(), "not before the TTL")
		e.renew(ctx)
		said := func(part string) int {
			n := 0
			for _, en := range hook.AllEntries() {
				if en.Level == logrus.WarnLevel && strings.Contains(en.Message, part) && en.Data["holder"] == "ghost" {
					n++
				}
			}
			return n
		}
		require.Equal(t, 1, said("more than 10 TTLs"), "the cut is said")
		require.Equal(t, 1, said("held by no live node"), "the unknown holder is said, once")
		deadline := time.Now().Add(20 * time.Second)
		for !e.Leading() {
			require.True(t, time.Now().Before(deadline), "b never took the lease over")
			time.Sleep(50 * time.Millisecond) // the poll step of a wait with a deadline: the database's clock must pass the TTL
			e.renew(ctx)
		}
		require.Equal(t, 1, said("held by no live node"))
	})
}
