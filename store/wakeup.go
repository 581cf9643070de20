package store

import (
	"context"
	"fmt"
	"time"
)

// JobsWatch tells a task engine that rows were added to jobs, by anyone,
// on databases without NOTIFY: MySQL and SQLite (it works on PostgreSQL
// too, where LISTEN makes it unnecessary). Each Changed is one statement
// that reads the primary key above the highest id it has settled:
//
//	SELECT COUNT(*), MAX(id) FROM jobs WHERE id > ?
//
// When nothing was added that is one index dive that finds no row; after
// an insert it reads the new rows and no others. The writers pay nothing:
// no trigger, no counter row for all inserters to queue on.
//
// The count is there for ids that become visible out of order. Ids are
// handed out at INSERT and become visible at COMMIT, so a transaction that
// commits after one holding a higher id (a fire prepared ahead, which
// inserts early and commits at its instant; an admin's open transaction)
// adds a row below the maximum already seen. While ids are missing below
// the maximum, the watch keeps its lower bound under them and sees them
// arrive by the count, for up to HoleWait or HoleRows rows in the window;
// then it gives them up (they may be ids a rollback or a duplicate key
// burnt, which never come) and the poll remains their path.
//
// A JobsWatch is not safe for concurrent use: one per engine.
type JobsWatch struct {
	s *Store
	// settled: every id at or below lo has been seen or given up.
	lo int64
	// What the last read found above lo: its count and maximum (lo when
	// none).
	count, hi int64
	holeSince time.Time // when ids were first seen missing above lo; zero: none
}

// Bounds of the window a JobsWatch keeps open under missing ids. HoleWait
// is ten times the default fire-ahead and matches its largest setting.
const (
	HoleWait = 2 * time.Second
	HoleRows = 1000
)

// WatchJobs returns a JobsWatch of this database, which reports the rows
// added after this call: it reads where the table ends now, so that a row
// added before the engine's first claim has started is seen either by
// that claim or by the watch.
func (s *Store) WatchJobs(ctx context.Context) (*JobsWatch, error) {
	var top int64
	if err := s.sqlDB.QueryRowContext(ctx, "SELECT COALESCE(MAX(id), 0) FROM jobs").Scan(&top); err != nil {
		return nil, fmt.Errorf("watch jobs: %w", err)
	}
	return &JobsWatch{s: s, lo: top, hi: top}, nil
}

// watchJobsQuery is the statement of each Changed.
const watchJobsQuery = "SELECT COUNT(*), COALESCE(MAX(id), 0) FROM jobs WHERE id > ?"

// Changed reports whether rows were added to jobs (or removed from the
// recent ones) since its previous call, or since WatchJobs. now is the
// caller's clock, for HoleWait.
func (w *JobsWatch) Changed(ctx context.Context, now time.Time) (bool, error) {
	var n, top int64
	if err := w.s.sqlDB.QueryRowContext(ctx, watchJobsQuery, w.lo).Scan(&n, &top); err != nil {
		return false, fmt.Errorf("watch jobs: %w", err)
	}
	top = max(top, w.lo)
	changed := n != w.count || top != w.hi
	switch {
	case n == top-w.lo:
		// Nothing missing: settle up to the top.
		w.lo, w.count, w.hi, w.holeSince = top, 0, top, time.Time{}
	case w.holeSince.IsZero():
		w.count, w.hi, w.holeSince = n, top, now
	case now.Sub(w.holeSince) >= HoleWait || n >= HoleRows:
		w.lo, w.count, w.hi, w.holeSince = top, 0, top, time.Time{}
	default:
		w.count, w.hi = n, top
	}
	return changed, nil
}

// Explain returns the database's plan for the statement Changed runs
// next (see explain), for tests that it stays a range of the primary key.
func (w *JobsWatch) Explain(ctx context.Context) (string, error) {
	return w.s.explain(ctx, watchJobsQuery, w.lo)
}
