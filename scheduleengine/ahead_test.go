package scheduleengine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// aheadStore reports each batch prepared ahead when it reaches its
// BeforeCommit, with the instant it waits for, before it waits.
type aheadStore struct {
	*store.Store
	prepared chan time.Time
}

func newAheadStore(st *store.Store) *aheadStore {
	return &aheadStore{Store: st, prepared: make(chan time.Time, 16)}
}

func (a *aheadStore) WriteFires(ctx context.Context, p *chimedb.WriteFiresParams) (*chimedb.WriteFiresResult, error) {
	if wait := p.BeforeCommit; wait != nil {
		at := p.Now
		p.BeforeCommit = func(ctx context.Context) error {
			a.prepared <- at
			return wait(ctx)
		}
	}
	return a.Store.WriteFires(ctx, p)
}

func (a *aheadStore) awaitPrepared(t *testing.T) time.Time {
	t.Helper()
	select {
	case at := <-a.prepared:
		return at
	case <-time.After(10 * time.Second):
		t.Fatal("no batch was prepared ahead")
		return time.Time{}
	}
}

func withAhead(d time.Duration) func(*Config) { return func(c *Config) { c.FireAhead = d } }

// everySecondAhead starts an engine on st (MySQL or PostgreSQL: fire-ahead
// holds a transaction open beside other writers, which SQLite's single
// writer cannot) that prepares fires 300 ms ahead, with one every-second
// schedule that has fired at start.
func everySecondAhead(t *testing.T, st *store.Store, opts ...func(*Config)) (*aheadStore, *bundle, time.Time, models.Schedule) {
	t.Helper()
	as := newAheadStore(st)
	b := setupWithClock(t, as, "n1", newClock(), append([]func(*Config){withAhead(300 * time.Millisecond)}, opts...)...)
	start := b.clock.Now()
	s := b.schedule(t, models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("* * * * * *")}, start)
	b.at(t, start) // due when the engine starts: written at once
	require.Len(t, jobsOf(t, st, s.ID), 1)
	return as, b, start, s
}

// A fire prepared ahead is invisible until its instant, commits then, and
// says it was written then; a pause that arrives while it waits waits for
// it and applies after it.
func TestFireAheadCommitsAtItsInstant(t *testing.T) {
	t.Parallel()
	testdb.ForEachServer(t, func(t *testing.T, st *store.Store) {
		as, b, start, s := everySecondAhead(t, st)

		b.clock.Advance(700 * time.Millisecond)
		require.True(t, start.Add(time.Second).Equal(as.awaitPrepared(t)))
		require.Len(t, jobsOf(t, st, s.ID), 1, "a prepared fire must be invisible before its instant")
		require.True(t, start.Equal(*triggerOf(t, st, s.ID).LastFireAt))

		paused := make(chan error, 1)
		go func() {
			paused <- st.DB().Exec("UPDATE schedules SET status = ? WHERE id = ?", models.SchedulePaused, s.ID).Error
		}()
		select {
		case err := <-paused:
			t.Fatalf("the pause went through while the fire it raced held the schedule (err %v)", err)
		case <-time.After(300 * time.Millisecond):
		}

		b.clock.Advance(300 * time.Millisecond)
		select {
		case err := <-paused:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("the pause still waits after the fire's instant")
		}
		jobs := jobsOf(t, st, s.ID)
		require.Len(t, jobs, 2)
		require.True(t, start.Add(time.Second).Equal(jobs[1].ScheduledAt))
		require.True(t, start.Add(time.Second).Equal(jobs[1].CreatedAt), "created_at %v: the batch commits at its instant", jobs[1].CreatedAt)
		require.False(t, jobs[1].CatchUp)

		// The pause came after the fire: nothing more.
		b.e.Refresh()
		b.at(t, start.Add(3*time.Second))
		require.Len(t, jobsOf(t, st, s.ID), 2)
	})
}

// A node that loses the lead while its batch waits rolls it back: the fire
// is the next leader's to write.
func TestFireAheadRollsBackWithoutTheLead(t *testing.T) {
	t.Parallel()
	testdb.ForEachServer(t, func(t *testing.T, st *store.Store) {
		lead := leading()
		as, b, start, s := everySecondAhead(t, st, func(c *Config) { c.Leadership = lead })

		b.clock.Advance(700 * time.Millisecond)
		as.awaitPrepared(t)
		lead.leading.Store(false) // the lease lapses; OnChange comes later
		b.at(t, start.Add(1100*time.Millisecond))
		require.Len(t, jobsOf(t, st, s.ID), 1, "a batch whose node lost the lead must not commit")
		require.True(t, start.Equal(*triggerOf(t, st, s.ID).LastFireAt))
	})
}

// Stop does not wait for a prepared batch's instant: it rolls it back, and
// the next start writes the fire from the tables.
func TestFireAheadStopRollsBack(t *testing.T) {
	t.Parallel()
	testdb.ForEachServer(t, func(t *testing.T, st *store.Store) {
		as, b, start, s := everySecondAhead(t, st)

		b.clock.Advance(700 * time.Millisecond)
		as.awaitPrepared(t)
		stopped := time.Now()
		b.stop(t)
		require.Less(t, time.Since(stopped), 5*time.Second)
		require.Len(t, jobsOf(t, st, s.ID), 1)

		c := setupWithClock(t, st, "n1", b.clock)
		c.at(t, start.Add(1500*time.Millisecond))
		jobs := jobsOf(t, st, s.ID)
		require.Len(t, jobs, 2)
		require.True(t, start.Add(time.Second).Equal(jobs[1].ScheduledAt))
	})
}

// A forbid schedule's fire is not prepared ahead: whether it fires depends
// on its last job at the instant, and its claims lock its row.
func TestFireAheadLeavesForbidSchedulesAlone(t *testing.T) {
	t.Parallel()
	testdb.ForEachServer(t, func(t *testing.T, st *store.Store) {
		as := newAheadStore(st)
		b := setupWithClock(t, as, "n1", newClock(), withAhead(300*time.Millisecond))
		start := b.clock.Now()
		s := b.schedule(t, models.Schedule{ScheduleType: models.ScheduleCron, CronExpr: ptr("* * * * * *"),
			Concurrency: models.ConcurrencyForbid}, start)
		b.at(t, start)
		// Its only job finishes, so the next fire is not blocked.
		require.NoError(t, st.DB().Model(&models.Job{}).Where("schedule_id = ?", s.ID).
			Updates(map[string]any{"status": models.JobSucceeded, "finished_at": start}).Error)

		b.at(t, start.Add(800*time.Millisecond)) // settles: nothing in flight
		require.Len(t, jobsOf(t, st, s.ID), 1)
		b.at(t, start.Add(time.Second))
		require.Len(t, jobsOf(t, st, s.ID), 2)
		select {
		case at := <-as.prepared:
			t.Fatalf("a forbid schedule's fire was prepared ahead for %v", at)
		default:
		}
	})
}

// Fires due now go first, then one group per later instant: a batch never
// waits for a later fire than its own.
func TestByInstant(t *testing.T) {
	now := t0
	en := func(id int64, next time.Duration) *entry {
		e := &entry{next: now.Add(next), hidx: -1}
		e.sched.ID = id
		return e
	}
	due := []*entry{en(1, 100*time.Millisecond), en(2, -time.Second), en(3, 0), en(4, 50*time.Millisecond), en(5, 100*time.Millisecond)}
	var got [][]int64
	for _, g := range byInstant(due, now) {
		var ids []int64
		for _, e := range g {
			ids = append(ids, e.sched.ID)
		}
		got = append(got, ids)
	}
	require.Equal(t, [][]int64{{2, 3}, {4}, {1, 5}}, got)
}

func TestFireAheadBounds(t *testing.T) {
	for _, d := range []time.Duration{-time.Millisecond, 5 * time.Second, 3 * time.Second} {
		_, err := New(&store.Store{}, &Config{NodeID: "n", Leadership: leading(), FireAhead: d})
		require.Error(t, err, "FireAhead %s", d)
	}
	_, err := New(&store.Store{}, &Config{NodeID: "n", Leadership: leading(), FireAhead: time.Second, MisfireThreshold: time.Second})
	require.ErrorContains(t, err, "below MisfireThreshold")
	_, err = New(&store.Store{}, &Config{NodeID: "n", Leadership: leading(), FireAhead: 200 * time.Millisecond})
	require.NoError(t, err)
}

// Batches waiting for their instant do not hold up a fire due now: they
// give their writer's turn back while they wait.
func TestFireAheadDoesNotHoldUpFiresDueNow(t *testing.T) {
	t.Parallel()
	testdb.ForEachServer(t, func(t *testing.T, st *store.Store) {
		as := newAheadStore(st)
		b := setupWithClock(t, as, "n1", newClock(), withAhead(300*time.Millisecond))
		start := b.clock.Now()
		every := func(name string, at time.Duration, c models.Concurrency) models.Schedule {
			return b.schedule(t, models.Schedule{Name: name, ScheduleType: models.ScheduleInterval, IntervalSeconds: ptr(1),
				StartAt: ptr(start.Add(at)), Concurrency: c}, start)
		}
		a := b.schedule(t, models.Schedule{Name: "a", ScheduleType: models.ScheduleCron, CronExpr: ptr("* * * * * *")}, start)
		bb := every("b", 1100*time.Millisecond, models.ConcurrencyAllow)
		c := every("c", 900*time.Millisecond, models.ConcurrencyForbid) // no lead: due at +0.9
		b.e.testSignals.fired.Init(t)
		b.at(t, start)
		b.at(t, start.Add(600*time.Millisecond))

		// a (+1.0) and b (+1.1) are prepared, one batch each, and wait.
		b.clock.Advance(250 * time.Millisecond)
		got := []time.Time{as.awaitPrepared(t), as.awaitPrepared(t)}
		require.ElementsMatch(t, []time.Time{start.Add(time.Second), start.Add(1100 * time.Millisecond)}, got)

		b.clock.Advance(50 * time.Millisecond) // +0.9: c is due
		// The prepared batches wait for the clock, which stays at +0.9:
		// c's fire can only come before them.
		waitFired(t, b.e, func() bool { return len(jobsOf(t, st, c.ID)) == 1 },
			"c's fire waited behind batches prepared for later instants")
		require.Len(t, jobsOf(t, st, a.ID), 1, "a's second fire is not due yet")

		b.at(t, start.Add(1100*time.Millisecond))
		require.Len(t, jobsOf(t, st, a.ID), 2)
		require.Len(t, jobsOf(t, st, bb.ID), 1)
		require.Len(t, jobsOf(t, st, c.ID), 1)
	})
}
