package scheduleengine

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// The engine fires exactly while its Leadership says so, never touches
// the leases table, hears of a change at once, and on gaining the lead
// restores what passed while it did not.
func TestLeadershipDecidesWhoFires(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		lead := &switchLeadership{}
		b := setupWithClock(t, st, "n1", newClock(), func(c *Config) { c.Leadership = lead })
		start := b.clock.Now()
		s := b.schedule(t, models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("*/10 * * * * *")}, start)

		b.at(t, start.Add(time.Second))
		require.False(t, b.e.IsLeader())
		b.at(t, start.Add(20*time.Second))
		require.Empty(t, jobsOf(t, st, s.ID), "a standby writes nothing")

		b.at(t, start.Add(21*time.Second))
		lead.set(true) // at +21 s: the loop may see it before a later Advance
		b.at(t, start.Add(21*time.Second))
		require.True(t, b.e.IsLeader())
		b.at(t, start.Add(30*time.Second))
		jobs := jobsOf(t, st, s.ID)
		require.Len(t, jobs, 2)
		require.True(t, jobs[0].CatchUp, "what passed before it led is one catch-up")
		require.Equal(t, 3, jobs[0].MissedFires)
		require.True(t, start.Add(30*time.Second).Equal(jobs[1].ScheduledAt))

		lead.set(false)
		b.at(t, start.Add(31*time.Second))
		require.False(t, b.e.IsLeader())
		b.at(t, start.Add(50*time.Second))
		require.Len(t, jobsOf(t, st, s.ID), 2, "no fire after the lead is lost")

		var leases int64
		require.NoError(t, st.DB().Model(&models.Lease{}).Count(&leases).Error)
		require.Zero(t, leases, "the engine leaves the lease row to the Leadership")
	})
}

// ensureStore records the schedules EnsureTriggers is asked to create a
// trigger row for.
type ensureStore struct {
	*store.Store
	mu    sync.Mutex
	asked []int64
}

func (s *ensureStore) EnsureTriggers(ctx context.Context, p *chimedb.EnsureTriggersParams) error {
	s.mu.Lock()
	for _, r := range p.Triggers {
		s.asked = append(s.asked, r.ScheduleID)
	}
	s.mu.Unlock()
	return s.Store.EnsureTriggers(ctx, p)
}

func (s *ensureStore) askedFor() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.asked)
}

// A standby that first read a schedule before its trigger row existed
// asks for no such row once it leads: the row exists by then, and asking
// is an upsert that waits for any transaction holding the row. In
// TestFreezeLeader the frozen leader's fire transaction held every row of
// its batch until the server rolled it back (store.DefaultIdleTxTimeout),
// and the new leader's loop sat in that upsert as long, firing nothing:
// every schedule fired again only ~29 s after the freeze.
func TestNewLeaderAsksNoTriggerRowThatExists(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		leadA, leadB := &switchLeadership{}, &switchLeadership{}
		ens := &ensureStore{Store: st}
		a := setupWithClock(t, st, "a", newClock(), func(c *Config) { c.Leadership = leadA })
		b := setupWithClock(t, ens, "b", a.clock, func(c *Config) { c.Leadership = leadB })
		start := a.clock.Now()
		s := a.schedule(t, models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("* * * * * *")}, start)

		b.at(t, start) // b's first read: no trigger row yet
		leadA.set(true)
		for d := range 3 {
			a.at(t, start.Add(time.Duration(d)*time.Second))
			b.at(t, start.Add(time.Duration(d)*time.Second))
		}
		fired := len(jobsOf(t, st, s.ID))
		require.Positive(t, fired)
		require.NotZero(t, triggerOf(t, st, s.ID).FiredCount, "a created and advanced the trigger row")

		leadA.set(false)
		a.at(t, start.Add(2500*time.Millisecond))
		leadB.set(true)
		b.at(t, start.Add(2500*time.Millisecond))
		b.at(t, start.Add(4*time.Second))
		require.True(t, b.e.IsLeader())
		require.Greater(t, len(jobsOf(t, st, s.ID)), fired, "b fires once it leads")
		require.NotContains(t, ens.askedFor(), s.ID, "b asked to create a trigger row a had created")
	})
}
