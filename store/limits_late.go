package store

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"gorm.io/gorm"

	"github.com/chimesched/chime/models"
)

// The late check: a limit that does not bind, checked after the claim's
// marks instead of before its admission.
//
// Locks first (prepareLimits), every claim of a limited queue locks the
// queue's row before it counts and holds it through its marks to its
// COMMIT: the claims of the queue take turns for most of their
// transactions, and a limit of 1,000,000 that never binds cost the drain
// 16–25 % on MariaDB and PostgreSQL (scripts/bench-limits.sh). So a claim
// on MySQL or PostgreSQL whose limits the last count says it fits
// (activeHint: every job active anywhere, plus what it picked, within
// each max_running), and which meets no rate (a rate's state must be read
// under the lock before a start is allowed) and expands no broadcast
// seed, takes no limit's lock before it admits: it admits by that count,
// marks its rows as a claim without limits would, and only then, just
// before its COMMIT, locks the limits' rows in the order every claim
// locks them (definitions, then queues, each by key), reads them again
// and counts the active jobs, its own now among them (lateCheck). When a
// limit is passed, or changed in a way the admission did not allow for,
// the transaction is rolled back (errLateFallback) and the claim runs
// again with its locks first. Two claims of a queue then wait for each
// other only through a count and a COMMIT.
//
// Why it is exact. Every claim that makes a job of a limit active holds
// the limit's row from before its count to its COMMIT: locks first, lock
// → count → admit → mark → COMMIT; late, mark → lock → count → COMMIT.
// So the intervals from lock to COMMIT of two such claims never overlap,
// and the later one's count starts after the earlier one's COMMIT. Under
// READ COMMITTED (both servers as chime opens them) each statement reads
// what was committed when it began, so that count sees the earlier
// claim's jobs. A late claim's count also sees its own marks (its own
// transaction), and a locks-first claim adds what it admits (taken) to
// its count. Either way each claim commits only when the active jobs at
// its count, plus its own, fit the limit; nothing else makes a job active
// meanwhile (only claims do: the hand-off starts only jobs of an
// unlimited default queue), and jobs that leave the active states only
// lower the count. The marks a late claim made before its lock are not
// seen by a claim that counts while it waits (they are uncommitted), but
// that claim then commits first, and the late claim's count, after it,
// sees its jobs and its own: the one that commits last always counts all
// of them. The count is the index-only total of every active job, an
// upper bound of each limit's own; only a limit it does not fit is
// counted exactly (countActiveQueues, countActiveDefs) before the claim
// gives up.
//
// Why no deadlock. A late claim takes the same locks in the same order as
// a locks-first one: its job rows (FOR UPDATE SKIP LOCKED, which never
// waits), then the limits' rows, definitions first, each in key order. It
// holds no limit's row before its final locks, so it waits there only for
// rows later in that order than any it holds. A claim holding a limit's
// row waits for no job row (its later picks and locks skip what others
// hold, its counts are plain reads, its marks touch only its own rows).
// Completions (UPDATE … WHERE id, or FROM unnest on PostgreSQL), the job
// heartbeat and the reconciler's recovery write jobs rows only, and no
// trigger on jobs touches queues or job_definitions, so what waits for a
// late claim's job rows holds no limit's row. A broadcast seed is
// expanded by locks-first claims only: its copies' INSERT takes, on
// MySQL, a shared lock on the definition's row for the foreign key, which
// two late claims would then both try to raise to FOR UPDATE.
//
// SQLite: its claim holds the write lock from its BEGIN IMMEDIATE, so no
// claim waits on another inside it and there is nothing to gain; its
// limited claim is a single count already (see lockQueueLimits).

// lateMode is whether a claim checks its limits late.
type lateMode int8

const (
	lateUndecided lateMode = iota // no limit binds a row this claim picked yet
	lateOn                        // admitted by the last count; lateCheck before the COMMIT
	lateOff                       // locks first
)

// errLateFallback ends a claim's transaction whose late check found a
// limit passed: ClaimJobs rolls it back and claims again, locks first.
var errLateFallback = errors.New("a limit checked late was passed: claiming again with its locks first")

// goLate decides whether the limits of rows (one pick of the claim) are
// checked late, and when so sets their counts to the last count seen,
// for admit. It returns true when the claim goes on without locks, and
// errLateFallback when a later pick of a late claim meets a limit that
// must be locked first.
func (s *Store) goLate(l *claimLimits, rows []models.Job) (bool, error) {
	if l.late == lateOff {
		return false, nil
	}
	needQ, needD := map[string]int64{}, map[int64]int64{}
	seed := false
	for i := range rows {
		r := &rows[i]
		if l.decided[r.ID] {
			continue
		}
		d := l.defs[r.JobDefinitionID]
		if d == nil {
			continue // no such definition: failed by the claim
		}
		seed = seed || d.bcast && r.ShardTotal == nil
		if d.binds() {
			needD[r.JobDefinitionID]++
		}
		name, _ := l.rowQueue(r)
		if q := l.queues[name]; q != nil && q.binds() {
			needQ[name]++
		}
	}
	if len(needQ) == 0 && len(needD) == 0 {
		// Nothing of this pick binds; what an earlier pick made late
		// stays so.
		return l.late == lateOn, nil
	}
	hint := s.activeHint.Load()
	fits := func(taken, need, limit int64) bool { return hint+taken+need <= limit }
	ok := l.mayLate && !seed
	for name, n := range needQ {
		q := l.queues[name]
		ok = ok && q.q.RateLimit == nil && q.q.MaxRunning != nil && fits(q.taken, n, *q.q.MaxRunning)
	}
	for id, n := range needD {
		d := l.defs[id]
		ok = ok && d.rate == nil && d.max != nil && fits(d.taken, n, *d.max)
	}
	if !ok {
		if l.late == lateOn {
			return false, errLateFallback
		}
		l.late = lateOff
		return false, nil
	}
	// Admitted by the total: no split of hint active jobs passes a limit
	// that the whole of them fits.
	for name := range needQ {
		q := l.queues[name]
		q.late, q.active, q.counted, q.bound = true, hint, true, true
	}
	for id := range needD {
		d := l.defs[id]
		d.late, d.active, d.counted, d.bound = true, hint, true, true
	}
	l.late = lateOn
	return true, nil
}

// lateCheck runs last in a late claim's transaction, after its marks:
// it locks the rows of the limits it took slots of, in the order every
// claim locks them, reads them again, and counts the active jobs, its own
// included (see the top of this file). errLateFallback when a limit is
// passed or its row changed so that the claim must decide under the lock:
// deleted, invalid, paused, given a rate, or a definition moved to
// another queue.
func (s *Store) lateCheck(tx *gorm.DB, l *claimLimits) error {
	if l.late != lateOn {
		return nil
	}
	var ids []int64
	var names []string
	for id, d := range l.defs {
		if d.late && d.taken > 0 {
			ids = append(ids, id)
		}
	}
	for name, q := range l.queues {
		if q.late && q.taken > 0 {
			names = append(names, name)
		}
	}
	if len(ids) == 0 && len(names) == 0 {
		return nil
	}
	slices.Sort(ids)
	sort.Strings(names)
	lock := s.limitLock()
	if len(ids) > 0 {
		fresh, err := lockedDefLimits(tx, lock, ids)
		if err != nil {
			return err
		}
		for _, id := range ids {
			f, d := fresh[id], l.defs[id]
			if f == nil || f.invalid != "" || f.rate != nil || f.queue != d.queue {
				return errLateFallback
			}
			d.max = f.max // lowered or raised meanwhile: the limit as it is now
		}
	}
	if len(names) > 0 {
		fresh, err := readQueues(tx, lock, names)
		if err != nil {
			return err
		}
		for _, name := range names {
			f, q := fresh[name], l.queues[name]
			if f == nil || f.invalid != "" || f.q.Paused || f.q.RateLimit != nil {
				return errLateFallback
			}
			q.q.MaxRunning = f.q.MaxRunning
		}
	}
	// After the locks: the count sees every claim that held them before.
	var total int64
	if err := tx.Raw(activeJobsSQL(s.activeJobsIndex()), activeStatuses).Row().Scan(&total); err != nil {
		return fmt.Errorf("count active jobs: %w", err)
	}
	s.activeHint.Store(total)
	var overD []int64
	var overQ []string
	for _, id := range ids {
		if d := l.defs[id]; d.max != nil && total > *d.max {
			overD = append(overD, id)
		}
	}
	for _, name := range names {
		if q := l.queues[name]; q.q.MaxRunning != nil && total > *q.q.MaxRunning {
			overQ = append(overQ, name)
		}
	}
	// The total does not fit: a limit's own count may.
	if len(overD) > 0 {
		if err := s.countActiveDefs(tx, overD, l.defs); err != nil {
			return err
		}
		for _, id := range overD {
			if d := l.defs[id]; d.active > *d.max {
				return errLateFallback
			}
		}
	}
	if len(overQ) > 0 {
		if err := s.countActiveQueues(tx, overQ, l.queues); err != nil {
			return err
		}
		for _, name := range overQ {
			if q := l.queues[name]; q.active > *q.q.MaxRunning {
				return errLateFallback
			}
		}
	}
	return nil
}

// LimitCheckPaths counts the claims of this store that a limit bound, by
// how they checked it: locks first (claims again after a failed late
// check included), late (committed), and late checks that found a limit
// passed and claimed again locks first.
func (s *Store) LimitCheckPaths() (locksFirst, late, fellBack int64) {
	return s.limitPaths.first.Load(), s.limitPaths.late.Load(), s.limitPaths.fellBack.Load()
}
