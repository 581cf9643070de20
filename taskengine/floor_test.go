package taskengine

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsignal"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// gatedClaims lets the engine's claims through one at a time, when the
// test steps it, and records what each one did, in the order they returned.
type gatedClaims struct {
	jobStore
	step, open chan struct{}
	done       testsignal.Signal[gatedClaim]
}

type gatedClaim struct {
	after *chimedb.ClaimCursor
	ids   []int64
}

func newGatedClaims(t *testing.T, st jobStore) *gatedClaims {
	g := &gatedClaims{jobStore: st, step: make(chan struct{}), open: make(chan struct{})}
	g.done.Init(t)
	t.Cleanup(g.release)
	return g
}

func (g *gatedClaims) ClaimJobs(ctx context.Context, p *chimedb.ClaimParams) (*chimedb.ClaimResult, error) {
	select {
	case <-g.step:
	case <-g.open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	res, err := g.jobStore.ClaimJobs(ctx, p)
	c := gatedClaim{after: p.After}
	if err == nil {
		for _, j := range res.Jobs {
			c.ids = append(c.ids, j.ID)
		}
	}
	g.done.Signal(c)
	return res, err
}

// next lets one claim through and waits until it has returned.
func (g *gatedClaims) next(t *testing.T) gatedClaim {
	t.Helper()
	select {
	case g.step <- struct{}{}:
	case <-time.After(testsignal.Timeout):
		t.Fatal("no claim came to the gate")
	}
	return g.done.WaitOrTimeout()
}

// release lets every claim through from now on.
func (g *gatedClaims) release() {
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

// floorJobs writes n due jobs of def at priority.
func floorJobs(t *testing.T, db *gorm.DB, clock clockwork.Clock, def int64, n, priority int) []int64 {
	at := store.DBTime(clock.Now())
	jobs := make([]models.Job, n)
	for i := range jobs {
		jobs[i] = models.Job{JobDefinitionID: def, ScheduledAt: at, RunAt: at, Status: models.JobPending,
			MaxAttempts: 1, Priority: priority}
	}
	require.NoError(t, db.CreateInBatches(&jobs, 200).Error)
	ids := make([]int64, n)
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return ids
}

// Under a backlog the engine's claims start after a floor, and a higher
// priority written below the floor mid-drain is claimed once the floor is
// floorMaxAge old (by the engine's clock), while the backlog lasts; every
// job runs once.
func TestClaimFloorDrain(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		clock := clockwork.NewFakeClockAt(time.Now().Add(time.Second))
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "noop", DefaultParams: `{"duration":"0s"}`}).ID
		backlog := floorJobs(t, db, clock, def, 400, models.PriorityDefault)

		cfg := testConfig(t, nodeName(t))
		cfg.Clock = clock
		gate := newGatedClaims(t, st)
		e := startEngine(t, gate, cfg)

		floored := 0
		for range 6 {
			if gate.next(t).after != nil {
				floored++
			}
		}
		require.NotZero(t, floored, "no claim started after a floor under a backlog")

		// claim_key is run_at five minutes early: below every floor.
		high := floorJobs(t, db, clock, def, 5, models.PriorityMax)
		wroteAt := clock.Now()
		// The floor is younger than floorMaxAge: claims go on after it.
		for range 2 {
			c := gate.next(t)
			require.NotNil(t, c.after)
			for _, id := range high {
				require.NotContains(t, c.ids, id, "a claim after a floor took a row below it")
			}
		}

		clock.Advance(floorMaxAge)
		requireHighClaimedSoon(t, gate, high)
		var pending int64
		require.NoError(t, db.Model(&models.Job{}).Where("status = ? AND id IN ?", models.JobPending, backlog).Count(&pending).Error)
		require.NotZero(t, pending, "the high-priority rows waited for the backlog's end")
		for _, id := range high {
			j := testdb.GetJob(t, st, id)
			require.NotNil(t, j.QueuedAt)
			require.False(t, j.QueuedAt.After(wroteAt.Add(floorMaxAge)), "job %d claimed at %v, written at %v", id, j.QueuedAt, wroteAt)
		}

		gate.release()
		all := append(backlog, high...)
		waitOutcomes(t, e, len(all))
		var rerun int64
		require.NoError(t, db.Model(&models.Job{}).Where("status <> ? OR attempt <> 1", models.JobSucceeded).Count(&rerun).Error)
		require.Zero(t, rerun, "a job did not succeed, or ran more than once")
		seen := map[int64]int{}
		for _, c := range gate.done.Values() {
			for _, id := range c.ids {
				seen[id]++
			}
		}
		require.Len(t, seen, len(all))
		for id, n := range seen {
			require.Equal(t, 1, n, "job %d claimed %d times", id, n)
		}
	})
}

// requireHighClaimedSoon says that once the floor is floorMaxAge old, a
// claim without a floor takes the high rows first, in one or two claims
// (each asks for the workers free when it starts); one claim may have
// started before the clock moved.
func requireHighClaimedSoon(t *testing.T, gate *gatedClaims, high []int64) {
	t.Helper()
	left := map[int64]bool{}
	for _, id := range high {
		left[id] = true
	}
	for i := 0; len(left) > 0; i++ {
		require.Less(t, i, 4, "high-priority rows still pending %d claims after the floor's age bound: %v", i, left)
		for _, id := range gate.next(t).ids {
			delete(left, id)
		}
	}
}
