package store_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// recordSQL records, in order, what classify makes of each statement the
// claims of st send ("" leaves the statement out). Each call of the
// function it returns gives those since the last call. name keeps the
// callbacks of two recorders on one store apart.
func recordSQL(t *testing.T, st *store.Store, name string, classify func(sql string) string) func() []string {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	note := func(db *gorm.DB) {
		kind := classify(db.Statement.SQL.String())
		if kind == "" {
			return
		}
		mu.Lock()
		seen = append(seen, kind)
		mu.Unlock()
	}
	cb := st.DB().Callback()
	require.NoError(t, cb.Row().After("gorm:row").Register("test:"+name+"_row", note))
	require.NoError(t, cb.Raw().After("gorm:raw").Register("test:"+name+"_raw", note))
	require.NoError(t, cb.Query().After("gorm:query").Register("test:"+name+"_query", note))
	t.Cleanup(func() {
		_ = cb.Row().Remove("test:" + name + "_row")
		_ = cb.Raw().Remove("test:" + name + "_raw")
		_ = cb.Query().Remove("test:" + name + "_query")
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := seen
		seen = nil
		return out
	}
}

// limitCounts records which counts of active jobs the claims of st run:
// "total" (every active job, no join), "queues" (by queue, the exact
// count) or "definitions" (by definition).
func limitCounts(t *testing.T, st *store.Store) func() []string {
	t.Helper()
	return recordSQL(t, st, "limit_counts", func(sql string) string {
		if !strings.Contains(sql, "COUNT(*)") || !strings.Contains(sql, "FROM jobs") {
			return ""
		}
		switch {
		case strings.Contains(sql, "JOIN job_definitions"):
			return "queues"
		case strings.Contains(sql, "GROUP BY job_definition_id"):
			return "definitions"
		}
		return "total"
	})
}

// A limited claim counts the jobs active anywhere (one index-only count)
// when that total plus its pick fits every limit it checks, and counts a
// queue exactly only when the total does not fit: a queue near its limit
// gets its last slots while other queues run jobs, and a queue far from
// its limit costs no join per active row.
func TestLimitCountsTheTotalWhenItFits(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		sqlExec(t, st, `INSERT INTO queues (name, max_running) VALUES ('big', 1000), ('small', 2)`)
		bigDef := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "big"})
		smallDef := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "small"})
		other := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "other"})
		sqlExec(t, st, `UPDATE job_definitions SET queue = 'big' WHERE id = ?`, bigDef.ID)
		sqlExec(t, st, `UPDATE job_definitions SET queue = 'small' WHERE id = ?`, smallDef.ID)
		for range 5 {
			testdb.Job(t, st, &testdb.JobOpts{DefinitionID: other.ID, Status: models.JobRunning, NodeID: "x"})
		}
		counts := limitCounts(t, st)

		big := limitJobs(t, st, bigDef.ID, 3)
		_, ids := claimIDs(t, st, "a", 3)
		require.Equal(t, big, ids)
		require.Equal(t, []string{"total"}, counts(), "5 active + 3 picked fit big's 1000: the total alone")

		// 8 jobs active, none of them small's: the total does not fit its
		// 2, the exact count gives it both slots.
		small := limitJobs(t, st, smallDef.ID, 3)
		res, ids := claimIDs(t, st, "a", 10)
		require.Equal(t, small[:2], ids)
		require.Len(t, res.Limited, 1)
		require.Equal(t, small[2], res.Limited[0].ID)
		require.Equal(t, []string{"queues"}, counts(), "the last count (5 active) said the total would not fit: exact at once")

		// A definition's max_running is bounded by the total as well.
		sqlExec(t, st, `UPDATE jobs SET status = 'failed' WHERE id = ?`, small[2])
		sqlExec(t, st, `UPDATE job_definitions SET max_running = 100 WHERE id = ?`, other.ID)
		mine := limitJobs(t, st, other.ID, 2)
		_, ids = claimIDs(t, st, "a", 10)
		require.Equal(t, mine, ids)
		require.Equal(t, []string{"total"}, counts())
	})
}

// A limit the total fitted in a claim's first pick is counted exactly
// when a later pick of the same claim would pass it by the total: its
// last slots still go to this claim, and no more.
func TestLimitCountsExactlyInALaterPick(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		sqlExec(t, st, `INSERT INTO queues (name, max_running) VALUES ('q', 4)`)
		a := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "a"})
		sqlExec(t, st, `UPDATE job_definitions SET queue = 'q' WHERE id = ?`, a.ID)
		// Jobs another node takes, by their tags, ahead in claim order:
		// the claim passes them over and picks again.
		require.NoError(t, st.RegisterNode(ctx, &chimedb.RegisterNodeParams{ID: "other", Roles: "worker", Tags: "ssd"}))
		ssd := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "ssd"})
		sqlExec(t, st, `UPDATE job_definitions SET required_tags = 'ssd' WHERE id = ?`, ssd.ID)
		busy := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "busy"})
		testdb.Job(t, st, &testdb.JobOpts{DefinitionID: busy.ID, Status: models.JobRunning, NodeID: "x"})
		early := time.Now().Add(-time.Hour)
		for i := range 2 {
			testdb.Job(t, st, &testdb.JobOpts{DefinitionID: ssd.ID, RunAt: early.Add(time.Duration(i) * time.Millisecond)})
		}
		q := limitJobs(t, st, a.ID, 6)
		counts := limitCounts(t, st)

		// First pick: 2 ssd jobs and q[0], q[1]: 1 active + 2 fit q's 4,
		// by the total. The second pick holds q[0..3]: by the total (1)
		// the queue would have room for one more only; counted exactly
		// (0 of its own active) it has two.
		res, ids := claimIDs(t, st, "me", 4)
		require.Equal(t, q[:4], ids)
		require.Empty(t, res.Limited)
		require.Equal(t, []string{"total", "queues"}, counts())

		_, ids = claimIDs(t, st, "me", 4)
		require.Empty(t, ids, "the queue is full")
	})
}

// TestLimitThatNeverBindsCost measures in statements what a queue limit
// that never binds adds to a claim: on MySQL and PostgreSQL the queue's
// row locked (and read again) and the count of every active job; on
// SQLite, whose claim holds the write lock from its BEGIN, the count only.
func TestLimitThatNeverBindsCost(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		n := countStatements(t, st)
		def := testdb.Definition(t, st, nil)
		claim := func() int64 {
			limitJobs(t, st, def.ID, 5)
			n.Store(0)
			res, err := st.ClaimJobs(ctx, &chimedb.ClaimParams{NodeID: "me", Now: time.Now(), Limit: 5})
			require.NoError(t, err)
			require.Len(t, res.Jobs, 5)
			return n.Load()
		}
		none := claim()
		sqlExec(t, st, `UPDATE queues SET max_running = 1000000 WHERE name = 'default'`)
		unbound := claim()
		more := int64(2)
		if st.Dialect() == store.SQLite {
			more = 1
		}
		require.Equal(t, none+more, unbound, "none: %d statements", none)
		t.Logf("%s: a claim of 5 costs %d statements, %d with a limit that never binds", st.Dialect(), none, unbound)
	})
}
