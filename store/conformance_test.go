package store_test

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb/chimedbtest"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// TestConformance runs chimedb's conformance suite on every dialect: what
// a fourth database must pass too.
func TestConformance(t *testing.T) {
	t.Parallel()
	for _, d := range testdb.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			chimedbtest.Run(t, newConformancePool(t, d).stores)
		})
	}
}

// conformancePool hands the suite's cases migrated databases, each emptied
// before it is handed out again: creating and migrating one takes about a
// second on MariaDB and PostgreSQL, emptying one a few milliseconds, and
// the suite asks for one per case. They are opened up front, in the
// dialect's test (testdb fails or skips the test that opens them), as many
// as cases can run at once; a case that finds none free waits.
type conformancePool struct {
	d    store.Dialect
	free chan *store.Store
}

func newConformancePool(t *testing.T, d store.Dialect) *conformancePool {
	n := min(max(runtime.GOMAXPROCS(0), 2), 4)
	p := &conformancePool{d: d, free: make(chan *store.Store, n)}
	for range n {
		p.free <- testdb.Open(t, d)
	}
	return p
}

func (p *conformancePool) stores(t *testing.T) *chimedbtest.Stores {
	st := <-p.free
	if st == nil {
		p.free <- nil
		t.Fatalf("%s: a database of the pool could not be emptied by an earlier case", p.d)
	}
	t.Cleanup(func() {
		if err := emptyDatabase(st); err != nil {
			t.Errorf("empty the %s database for the next case: %v", p.d, err)
			st = nil
		}
		p.free <- st
	})
	s := &chimedbtest.Stores{Schedule: st, Task: st, Cluster: st, Admin: st, Console: st, Alert: st, Workflow: st,
		Exec: func(ctx context.Context, q string, args ...any) error {
			return st.DB().WithContext(ctx).Exec(q, args...).Error
		}}
	if p.d != store.SQLite {
		s.LockRow = func(t *testing.T, table string, id int64) func() { return lockRow(t, st, table, id) }
	}
	return s
}

// emptyDatabase deletes the rows of every model's table (no migration
// seeds any, and no foreign key orders them).
func emptyDatabase(st *store.Store) error {
	for _, m := range models.All() {
		tbl := m.(interface{ TableName() string }).TableName()
		if err := st.DB().Exec("DELETE FROM " + tbl).Error; err != nil {
			return err
		}
	}
	// The migration's row: every definition's queue unless it names another.
	return st.DB().Exec("INSERT INTO queues (name) VALUES ('default')").Error
}

// lockRow holds the row of table with id id in a transaction of its own
// until the release it returns (or the test's end).
func lockRow(t *testing.T, st *store.Store, table string, id int64) func() {
	t.Helper()
	tx := st.DB().Begin()
	require.NoError(t, tx.Error)
	var got []int64
	require.NoError(t, tx.Raw("SELECT id FROM "+table+" WHERE id = ? FOR UPDATE", id).Scan(&got).Error)
	require.Len(t, got, 1, "no row %d in %s to lock", id, table)
	var once sync.Once
	release := func() { once.Do(func() { _ = tx.Rollback() }) }
	t.Cleanup(release)
	return release
}
