package scheduleengine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
