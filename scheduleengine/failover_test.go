package scheduleengine

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// heldStore lets a test hold one WriteFires call between planning and
// commit: the fire transaction of a leader that passed its lease check and
// then stalled (a loaded database, a lock wait, a paused process).
type heldStore struct {
	*store.Store
	hold    atomic.Bool   // the next WriteFires is held
	entered chan struct{} // closed when the held call has its batch
	release chan struct{} // close to let it commit
}

func (h *heldStore) WriteFires(ctx context.Context, p *chimedb.WriteFiresParams) (*chimedb.WriteFiresResult, error) {
	if h.hold.CompareAndSwap(true, false) {
		close(h.entered)
		<-h.release
	}
	return h.Store.WriteFires(ctx, p)
}

// The double catch-up of the three-node kill test, made deterministic. A
// survivor (a) takes the lease after a gap and plans one catch-up job for
// it, but its commit is held up past its lease; the other survivor (b)
// takes over, reads the trigger row the held batch has not advanced yet and
// writes its own catch-up for the same gap, with a different scheduled_at
// (each counts up to its own takeover), so the unique key does not catch
// it. When the held batch commits it must write nothing: its plan started
// from a last_fire_at the row no longer holds.
func TestStaleBatchWritesNoSecondCatchUp(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		leadA, leadB := &switchLeadership{}, &switchLeadership{}
		held := &heldStore{Store: st, entered: make(chan struct{}), release: make(chan struct{})}
		a := setupWithClock(t, held, "a", newClock(), func(c *Config) { c.Leadership = leadA })
		b := setupWithClock(t, st, "b", a.clock, func(c *Config) { c.Leadership = leadB })
		start := a.clock.Now()
		s := a.schedule(t, models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("* * * * * *")}, start)

		// a leads and fires +0 … +2; b stands by and reads the rows.
		leadA.set(true)
		for d := range 3 {
			a.at(t, start.Add(time.Duration(d)*time.Second))
			b.at(t, start.Add(time.Duration(d)*time.Second))
		}
		require.Len(t, jobsOf(t, st, s.ID), 3)

		// a loses the lease; nobody fires +3 and +4.
		leadA.set(false)
		a.at(t, start.Add(2500*time.Millisecond))
		require.False(t, a.e.IsLeader())

		// a takes the lease again at +4.5 s and plans a catch-up for +3 and
		// +4; its commit stalls.
		held.hold.Store(true)
		a.clock.Advance(start.Add(4500 * time.Millisecond).Sub(a.clock.Now()))
		leadA.set(true)
		select {
		case <-held.entered:
		case <-time.After(10 * time.Second):
			t.Fatal("a wrote no batch after taking the lead")
		}

		// Stalled past its lease: b takes over at +6.5 s and catches up
		// +3 … +6 from the row a's batch has not advanced.
		a.clock.Advance(start.Add(6500 * time.Millisecond).Sub(a.clock.Now()))
		leadA.set(false)
		leadB.set(true)
		b.at(t, start.Add(6500*time.Millisecond))
		require.True(t, b.e.IsLeader())
		catchUps := func() []models.Job {
			var out []models.Job
			for _, j := range jobsOf(t, st, s.ID) {
				if j.CatchUp {
					out = append(out, j)
				}
			}
			return out
		}
		require.Len(t, catchUps(), 1)

		// a's batch commits at last.
		close(held.release)
		settle(t, a.e)
		got := catchUps()
		require.Len(t, got, 1, "one catch-up job for the one gap, got them at %v", scheduledAts(got))
		require.True(t, start.Add(6*time.Second).Equal(got[0].ScheduledAt))
		require.Equal(t, 4, got[0].MissedFires)
		tr := triggerOf(t, st, s.ID)
		require.True(t, start.Add(6*time.Second).Equal(*tr.LastFireAt), "the stale batch must not set the trigger back, got %v", tr.LastFireAt)
		require.EqualValues(t, 4, tr.FiredCount)

		// b goes on from its own state, and a, should it lead again, from
		// the row as it is now: no further catch-up for the same gap.
		b.at(t, start.Add(7*time.Second))
		leadB.set(false)
		b.at(t, start.Add(7500*time.Millisecond))
		leadA.set(true)
		a.at(t, start.Add(8*time.Second))
		require.Len(t, catchUps(), 1, "+8 s is a's to fire on time, and nothing before it is missing")
		jobs := jobsOf(t, st, s.ID)
		require.True(t, start.Add(8*time.Second).Equal(jobs[len(jobs)-1].ScheduledAt))
	})
}

func scheduledAts(jobs []models.Job) []time.Time {
	out := make([]time.Time, len(jobs))
	for i, j := range jobs {
		out[i] = j.ScheduledAt
	}
	return out
}
