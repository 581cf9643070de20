package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

// execer is a session of its own (a transaction) or the pool.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// addJobs inserts n due jobs of definition def in one statement, as an
// admin's plain SQL would.
func addJobs(t *testing.T, ex execer, def int64, n int) {
	t.Helper()
	q := "INSERT INTO jobs (job_definition_id) VALUES " + strings.TrimSuffix(strings.Repeat(fmt.Sprintf("(%d),", def), n), ",")
	_, err := ex.ExecContext(context.Background(), q)
	require.NoError(t, err)
}

// watchChanged returns a func that reads w at the instant it is given.
func watchChanged(t *testing.T, w *store.JobsWatch) func(now time.Time) bool {
	return func(now time.Time) bool {
		t.Helper()
		c, err := w.Changed(context.Background(), now)
		require.NoError(t, err)
		return c
	}
}

// The watch reports rows other sessions add, once, and nothing else: not
// the rows that were there when it began, not the removal of old rows.
func TestJobsWatch(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		db := st.SQL()
		def := testdb.Definition(t, st, nil).ID
		addJobs(t, db, def, 3)
		w, err := st.WatchJobs(ctx)
		require.NoError(t, err)
		changed, now := watchChanged(t, w), time.Now()
		require.False(t, changed(now), "the rows there before WatchJobs")
		require.False(t, changed(now))

		addJobs(t, db, def, 1)
		require.True(t, changed(now), "a job added by plain SQL")
		require.False(t, changed(now), "the same job again")
		addJobs(t, db, def, 5)
		require.True(t, changed(now), "five jobs in one statement")
		require.False(t, changed(now))

		_, err = db.ExecContext(ctx, "DELETE FROM jobs WHERE id = (SELECT MIN(id) FROM jobs)")
		require.NoError(t, err)
		require.False(t, changed(now), "an old row deleted (retention)")
	})
}

// Ids become visible at commit, not in their order: a transaction that
// commits after one holding a higher id still wakes the engine, within
// HoleWait. Ids that never come (a rollback) are given up after it, and
// so is a late commit that comes later than that.
func TestJobsWatchLateCommit(t *testing.T) {
	t.Parallel()
	testdb.ForEachServer(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		db := st.SQL()
		def := testdb.Definition(t, st, nil).ID
		w, err := st.WatchJobs(ctx)
		require.NoError(t, err)
		changed, now := watchChanged(t, w), time.Now()

		late, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		defer func() { _ = late.Rollback() }()
		addJobs(t, late, def, 1)
		addJobs(t, db, def, 1) // a higher id, committed first
		require.True(t, changed(now))
		require.False(t, changed(now.Add(time.Second)))
		require.NoError(t, late.Commit())
		require.True(t, changed(now.Add(store.HoleWait-time.Millisecond)), "a job committed after a later one")
		require.False(t, changed(now.Add(store.HoleWait)))

		// A rolled-back insert burns its id for good: the watch waits
		// HoleWait for it, then moves on, and a transaction that commits
		// later than that is the poll's.
		burnt, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		addJobs(t, burnt, def, 1)
		require.NoError(t, burnt.Rollback())
		tooLate, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		defer func() { _ = tooLate.Rollback() }()
		addJobs(t, tooLate, def, 1)
		addJobs(t, db, def, 1)
		now = now.Add(time.Minute)
		require.True(t, changed(now))
		require.False(t, changed(now.Add(store.HoleWait/2)))
		require.False(t, changed(now.Add(store.HoleWait)), "given up")
		require.NoError(t, tooLate.Commit())
		require.False(t, changed(now.Add(store.HoleWait)), "too late: the poll finds it")
		addJobs(t, db, def, 1)
		require.True(t, changed(now.Add(store.HoleWait)), "the next job after the gap")

		// Under a stream of inserts the window closes after HoleRows rows:
		// the next insert wakes the engines anyway.
		open, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		defer func() { _ = open.Rollback() }()
		addJobs(t, open, def, 1)
		addJobs(t, db, def, store.HoleRows)
		now = now.Add(time.Minute)
		require.True(t, changed(now))
		require.False(t, changed(now), "window closed at HoleRows")
		require.NoError(t, open.Commit())
		require.False(t, changed(now), "given up")
	})
}

// The watch's read is one statement that, on an idle database, reads no
// row however long the table (MariaDB's own counters of the session), and
// after an insert only the new rows; every database plans it as a range
// of the primary key.
func TestJobsWatchCost(t *testing.T) {
	t.Parallel()
	for _, d := range testdb.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			cfg := testdb.MigratedConfig(t, d)
			// One connection: the counters below are the watch's session's.
			cfg.MaxOpenConns = 1
			st, err := store.Open(ctx, cfg)
			require.NoError(t, err)
			defer st.Close()
			_, err = st.Migrate(ctx)
			require.NoError(t, err)
			db := st.SQL()
			def := testdb.Definition(t, st, nil).ID
			for range 10 {
				addJobs(t, db, def, 1000)
			}
			if d == store.Postgres {
				_, err := db.ExecContext(ctx, "VACUUM ANALYZE jobs")
				require.NoError(t, err)
			}
			w, err := st.WatchJobs(ctx)
			require.NoError(t, err)
			explain := func() {
				t.Helper()
				// With rows to read: an empty range, MariaDB answers
				// from the index while planning ("No matching min/max row").
				addJobs(t, db, def, 5)
				plan, err := w.Explain(ctx)
				require.NoError(t, err)
				require.Regexp(t, primaryKeyRange(d), plan)
			}
			if d != store.MySQL {
				explain()
				return
			}
			reads := func(what func()) map[string]int64 {
				before, after := sessionStatus(t, db), map[string]int64{}
				what()
				for k, v := range sessionStatus(t, db) {
					after[k] = v - before[k]
				}
				return after
			}
			overhead := reads(func() {})
			changed := watchChanged(t, w)
			const n = 20
			got := reads(func() {
				for range n {
					require.False(t, changed(time.Now()))
				}
			})
			t.Logf("%d idle reads beside 10,000 jobs: %v (a SHOW alone: %v)", n, got, overhead)
			require.Equal(t, int64(n), got["Com_select"]-overhead["Com_select"], "statements")
			dives := func(m map[string]int64) int64 {
				return m["Handler_read_key"] + m["Handler_read_first"] + m["Handler_read_last"]
			}
			require.LessOrEqual(t, dives(got)-dives(overhead), int64(n), "index dives")
			require.Zero(t, got["Handler_read_next"]-overhead["Handler_read_next"], "rows read")
			require.Zero(t, got["Handler_read_rnd_next"]-overhead["Handler_read_rnd_next"], "rows scanned")

			explain()
			got = reads(func() { require.True(t, changed(time.Now())) })
			t.Logf("a read after 5 inserts: %v", got)
			require.Equal(t, int64(1), got["Com_select"]-overhead["Com_select"])
			require.LessOrEqual(t, got["Handler_read_next"]-overhead["Handler_read_next"], int64(5), "rows read: the new ones")
		})
	}
}

// primaryKeyRange is, per database, how a plan says it reads a range of
// the primary key of jobs.
func primaryKeyRange(d store.Dialect) *regexp.Regexp {
	switch d {
	case store.MySQL:
		return regexp.MustCompile(`"access_type": "range",\s*"possible_keys": \["PRIMARY"\],\s*"key": "PRIMARY"`)
	case store.SQLite:
		return regexp.MustCompile(`SEARCH jobs USING INTEGER PRIMARY KEY \(rowid>\?\)`)
	default:
		return regexp.MustCompile(`Index (Only )?Scan using jobs_pkey on jobs`)
	}
}

// sessionStatus reads MySQL's counters of the session it runs in.
func sessionStatus(t *testing.T, db *sql.DB) map[string]int64 {
	t.Helper()
	rows, err := db.Query(`SHOW SESSION STATUS WHERE Variable_name IN
		('Com_select', 'Handler_read_key', 'Handler_read_next', 'Handler_read_rnd_next', 'Handler_read_first', 'Handler_read_last')`)
	require.NoError(t, err)
	defer rows.Close()
	m := map[string]int64{}
	for rows.Next() {
		var k string
		var v int64
		require.NoError(t, rows.Scan(&k, &v))
		m[k] = v
	}
	require.NoError(t, rows.Err())
	return m
}
