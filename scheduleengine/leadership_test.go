package scheduleengine

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// switchLeadership is a Leadership a test flips by hand, as the cluster's
// elector flips on the database's clock.
type switchLeadership struct {
	leading atomic.Bool
	mu      sync.Mutex
	fns     []func(bool)
}

func (l *switchLeadership) Leading() bool { return l.leading.Load() }

func (l *switchLeadership) OnChange(fn func(bool)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fns = append(l.fns, fn)
}

func (l *switchLeadership) set(v bool) {
	l.leading.Store(v)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, fn := range l.fns {
		fn(v)
	}
}

// With a Leadership, the engine fires exactly while it leads, never touches
// the leases table, hears of a change at once, and on gaining the lead
// restores what passed while it did not.
func TestLeadershipDecidesWhoFires(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		lead := &switchLeadership{}
		b := setupWithClock(t, st, "n1", setup(t, st, "unused").clock, func(c *Config) { c.Leadership = lead })
		start := b.clock.Now()
		s := b.schedule(t, models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("*/10 * * * * *")}, start)

		b.at(t, start.Add(time.Second))
		require.False(t, b.e.IsLeader())
		b.at(t, start.Add(20*time.Second))
		require.Empty(t, jobsOf(t, st, s.ID), "a standby writes nothing")

		lead.set(true)
		nudged(t, b.e)
		b.at(t, start.Add(21*time.Second))
		require.True(t, b.e.IsLeader())
		b.at(t, start.Add(30*time.Second))
		jobs := jobsOf(t, st, s.ID)
		require.Len(t, jobs, 2)
		require.True(t, jobs[0].CatchUp, "what passed before it led is one catch-up")
		require.Equal(t, 3, jobs[0].MissedFires)
		require.True(t, start.Add(30*time.Second).Equal(jobs[1].ScheduledAt))

		lead.set(false)
		nudged(t, b.e)
		b.at(t, start.Add(31*time.Second))
		require.False(t, b.e.IsLeader())
		b.at(t, start.Add(50*time.Second))
		require.Len(t, jobsOf(t, st, s.ID), 2, "no fire after the lead is lost")

		var leases int64
		require.NoError(t, st.DB().Model(&models.Lease{}).Count(&leases).Error)
		require.Zero(t, leases, "the engine leaves the lease row to the Leadership")
	})
}

// nudged takes the engine's nudge and does what its run loop does with it:
// ask the Leadership again at the next tick instead of LeaseTTL/3 later.
func nudged(t *testing.T, e *Engine) {
	t.Helper()
	select {
	case <-e.leadNudge:
		e.leaseDue = time.Time{}
	default:
		t.Fatal("OnChange did not nudge the engine")
	}
}
