package store_test

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

func claimedIDs(res *chimedb.ClaimResult) []int64 {
	ids := make([]int64, len(res.Jobs))
	for i, j := range res.Jobs {
		ids[i] = j.ID
	}
	return ids
}

func cursorOf(t *testing.T, st *store.Store, id int64) *chimedb.ClaimCursor {
	t.Helper()
	j := jobByID(t, st, id)
	return &chimedb.ClaimCursor{ClaimKey: j.ClaimKey, ID: j.ID}
}

// A claim with a floor takes the rows after it first and, when they run
// short, the rest from the start up to the floor; its Last is where its
// scan ended. A claim without a floor takes a row written below one.
func TestClaimFloor(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		def := testdb.Definition(t, st, nil)
		base := store.DBTime(time.Now().Add(-time.Hour))
		ids := make([]int64, 8)
		for i := range ids {
			ids[i] = testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, RunAt: base.Add(time.Duration(i) * time.Second)}).ID
		}
		claim := func(limit int, after *chimedb.ClaimCursor) *chimedb.ClaimResult {
			t.Helper()
			res, err := st.ClaimJobs(ctx, &chimedb.ClaimParams{NodeID: "n", Now: time.Now(), Limit: limit, After: after})
			require.NoError(t, err)
			return res
		}

		// Floor at the third row: the next rows after it, in order.
		floor := cursorOf(t, st, ids[2])
		res := claim(2, floor)
		require.Equal(t, ids[3:5], claimedIDs(res))
		require.Equal(t, 2, res.Selected)
		require.Equal(t, cursorOf(t, st, ids[4]), res.Last)

		// Three left above the floor, six asked: the three missing come
		// from below it, the floor's own row included, and the scan ended
		// there.
		res = claim(6, floor)
		require.Equal(t, append(ids[0:3:3], ids[5:8]...), claimedIDs(res))
		require.Equal(t, 6, res.Selected)
		require.Equal(t, floor, res.Last)

		// A higher priority written now lands below the floor of the last
		// full claim (its claim_key is 5 min before its run_at). A claim
		// with that floor does not see it while rows above the floor are
		// left; a claim without one takes it first.
		late := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, RunAt: base.Add(time.Minute)}).ID
		high := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, RunAt: base.Add(time.Minute), Priority: 10}).ID
		last := cursorOf(t, st, ids[7])
		require.Less(t, jobByID(t, st, high).ClaimKey, last.ClaimKey)
		require.Greater(t, jobByID(t, st, late).ClaimKey, last.ClaimKey)
		res = claim(1, last)
		require.Equal(t, []int64{late}, claimedIDs(res))
		require.NoError(t, st.DB().Model(&models.Job{}).Where("id = ?", late).Update("status", models.JobPending).Error)
		res = claim(1, nil)
		require.Equal(t, []int64{high}, claimedIDs(res))
		require.Equal(t, cursorOf(t, st, high), res.Last)

		res = claim(5, last)
		require.Equal(t, []int64{late}, claimedIDs(res))
		require.Equal(t, 1, res.Selected)
		require.Equal(t, cursorOf(t, st, late), res.Last)
		res = claim(5, nil)
		require.Empty(t, res.Jobs)
		require.Nil(t, res.Last)
	})
}

// Both scans of a claim with a floor are ranges on idx_jobs_claim_order in
// its order, with no sort, on every database.
func TestClaimFloorUsesIndex(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		def := testdb.Definition(t, st, nil)
		backlog := claimBacklog(t, st, def.ID, 300)
		mid := jobByID(t, st, backlog[150].ID)
		above, below, err := st.ExplainClaimAfter(context.Background(), time.Now(), 10,
			chimedb.ClaimCursor{ClaimKey: mid.ClaimKey, ID: mid.ID})
		require.NoError(t, err)
		for _, plan := range []string{above, below} {
			t.Log(plan)
			requireClaimOrderPlan(t, plan)
		}
	})
}

// A drain's rows often share one claim_key (one run_at, one priority):
// above a floor MariaDB must then range on all three columns of
// idx_jobs_claim_order, starting at the floor's id. By ref on status it
// starts at the first pending entry and walks every dead entry the claims
// before it left, which the floor is there to skip (a drain measured
// 200 → 7,000 pages per claim that way).
func TestClaimFloorRangesOnIDWhenKeysTie(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.MySQL)
	def := testdb.Definition(t, st, nil)
	due := store.DBTime(time.Now().Add(-time.Second))
	backlog := make([]models.Job, 2000)
	for i := range backlog {
		backlog[i] = models.Job{JobDefinitionID: def.ID, ScheduledAt: due, RunAt: due, Status: models.JobPending}
	}
	require.NoError(t, st.DB().CreateInBatches(&backlog, 500).Error)
	require.NoError(t, st.DB().Exec("ANALYZE TABLE jobs").Error)
	mid := jobByID(t, st, backlog[1000].ID)
	above, _, err := st.ExplainClaimAfter(context.Background(), time.Now(), 50, chimedb.ClaimCursor{ClaimKey: mid.ClaimKey, ID: mid.ID})
	require.NoError(t, err)
	t.Log(above)
	require.Regexp(t, `"access_type":\s*"range"`, above)
	require.Regexp(t, `"used_key_parts":\s*\[\s*"status",\s*"claim_key",\s*"id"\s*\]`, above)
}
