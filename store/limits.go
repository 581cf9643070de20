package store

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// Limits (queues.max_running, job_definitions.max_running, queues.paused
// and the queues' rate limits) are checked and taken inside the claim's
// own transaction, so no two claims can together pass one:
//
//   - The claim reads the definitions of the rows it picked and every
//     queues row (a small table), without locks. A row whose limits are
//     all unset costs nothing more.
//   - The rows that bind a picked job (its definition when it has
//     max_running, its queue when it has max_running or a rate) are then
//     locked, definitions first, each in key order, and read again under
//     the lock: a second claim of the same queue waits here for the first
//     to commit. Under READ COMMITTED (MySQL and PostgreSQL as chime
//     opens them) the count that follows sees that commit. SQLite has one
//     writer at a time already, and its claim holds the write lock from
//     its BEGIN: the rows read first are current, and not read again.
//   - The active jobs (queued, running, paused) of those queues and
//     definitions with max_running are counted: an indexed count (the
//     status prefix of idx_jobs_claim_order) over the few active rows, not
//     a maintained counter, so a job leaving active by any path
//     (completion, a retry's wait, the reconciler recovering a dead node's
//     job, an admin's SQL) frees its slot with no bookkeeping to forget.
//     When every job active anywhere plus what the claim picked fits all
//     those limits, that total stands for each of their counts (see
//     countLimits): one index-only count instead of a join per active row.
//   - Picked rows are admitted in claim order while their limits have
//     room, so priorities and the starvation bound hold within a queue.
//     The others stay pending; when the pick was full, the claim picks
//     again without the definitions, schedules and queues that are full
//     (at most limitRounds picks), so a full queue's backlog does not
//     starve the queues behind it.
//
// A limit changed while a claim runs binds the claims that begin after
// the change commits. Jobs already running are never stopped by a limit.

// limitRounds bounds the picks of one claim.
const limitRounds = 3

// claimExclude is what a claim's scan leaves out.
type claimExclude struct {
	schedules []int64
	defs      []int64
	queues    []string // jobs.queue values
	ids       []int64  // jobs left to other nodes by their own required_tags
}

func (e *claimExclude) sql() (string, []any) {
	var sql string
	var args []any
	if len(e.schedules) > 0 {
		sql += " AND (schedule_id IS NULL OR schedule_id NOT IN ?)"
		args = append(args, e.schedules)
	}
	if len(e.defs) > 0 {
		sql += " AND job_definition_id NOT IN ?"
		args = append(args, e.defs)
	}
	if len(e.queues) > 0 {
		sql += " AND (queue IS NULL OR queue NOT IN ?)"
		args = append(args, e.queues)
	}
	if len(e.ids) > 0 {
		sql += " AND id NOT IN ?"
		args = append(args, e.ids)
	}
	return sql, args
}

func (e *claimExclude) withSchedules(ids []int64) *claimExclude {
	c := &claimExclude{schedules: append(slices.Clone(e.schedules), ids...), defs: e.defs, queues: e.queues, ids: e.ids}
	return c
}

// queueLimit is one queues row as a claim sees it.
type queueLimit struct {
	q       models.Queue
	invalid string // why the row cannot be used; "" when valid
	locked  bool   // locked (and read again) by this claim
	late    bool   // admitted by the last count, checked before the COMMIT (see lateCheck)
	active  int64  // its active jobs, counted under the lock (see countLimits)
	counted bool   // active is known
	bound   bool   // active is every active job's count, an upper bound of its own
	taken   int64  // admitted by this claim
	tat     int64  // the rate limiter's state after this claim's starts, µs
	tat0    int64  // as read under the lock
}

func (q *queueLimit) binds() bool {
	return q.invalid == "" && !q.q.Paused && (q.q.MaxRunning != nil || q.q.RateLimit != nil)
}

// defLimit is what the limits need of one definition.
type defLimit struct {
	queue   string
	tags    string // required_tags as stored
	bcast   bool   // broadcast: its pending jobs are seeds (see broadcast.go)
	rate    *int64 // rate_limit per period, both nil for none
	period  *int64
	tat     int64 // the rate limiter's state after this claim's starts, µs
	tat0    int64 // as read under the lock
	max     *int64
	invalid string
	locked  bool
	late    bool
	active  int64 // as queueLimit's
	counted bool
	bound   bool
	taken   int64 // admitted by this claim
}

// claimLimits is the limits' state through one claim.
type claimLimits struct {
	queues    map[string]*queueLimit // nil until read
	defs      map[int64]*defLimit
	schedQ    map[int64]string // schedules' queue overrides
	place     placement
	elsewhere int   // rows left to other nodes by their tags
	nowUs     int64 // the database's clock, read once when a rate binds
	haveNow   bool
	held      []chimedb.LimitedJob
	retryIn   time.Duration
	excluded  claimExclude
	decided   map[int64]bool // rows admitted or held by a round
	late      lateMode       // whether this claim checks its limits late
	mayLate   bool           // it may (MySQL, PostgreSQL; not when claiming again after a failed late check)
}

// rowQueue is the queue of job r and where it came from.
func (l *claimLimits) rowQueue(r *models.Job) (string, string) {
	if r.Queue != nil && *r.Queue != "" {
		return *r.Queue, "job"
	}
	if r.ScheduleID != nil {
		if q := l.schedQ[*r.ScheduleID]; q != "" {
			return q, "schedule"
		}
	}
	if d := l.defs[r.JobDefinitionID]; d != nil && d.queue != "" {
		return d.queue, "definition"
	}
	return models.DefaultQueue, "definition"
}

// prepare reads what the limits of rows need and locks the rows that bind
// them, counting their active jobs.
func (s *Store) prepareLimits(tx *gorm.DB, l *claimLimits, rows []models.Job) error {
	if len(rows) == 0 {
		return nil
	}
	// Within one round the locks are taken in a fixed order (definitions,
	// then queues, each by key), but a later round may need rows that sort
	// before those an earlier one holds: waiting for them would close a
	// cycle with a claim that took them first (PostgreSQL's deadlock
	// check then ends one claim after deadlock_timeout, 1 s: the
	// clustertest race test saw claims stall so, 296 times in a minute).
	// So once this claim holds a limit's row it waits for no other: it
	// skips the rows another claim holds, and leaves their jobs pending.
	lock := s.limitLock()
	skipping := lock != "" && l.holdsLocks()
	if skipping {
		lock += " SKIP LOCKED"
	}
	if l.queues == nil {
		qs, err := readQueues(tx, "", nil)
		if err != nil {
			return err
		}
		l.queues = qs
	}
	var newDefs []int64
	for _, r := range rows {
		if _, ok := l.defs[r.JobDefinitionID]; !ok && !slices.Contains(newDefs, r.JobDefinitionID) {
			newDefs = append(newDefs, r.JobDefinitionID)
		}
	}
	if len(newDefs) > 0 {
		if err := readDefLimits(tx, newDefs, l.defs); err != nil {
			return err
		}
	}
	if err := s.preparePlacement(tx, l, rows); err != nil {
		return err
	}
	// A claim that may check its limits late (see limits_late.go) admits
	// without locks when they allow it, and so decides here.
	if late, err := s.goLate(l, rows); late || err != nil {
		return err
	}
	// What binds and is not locked yet.
	var lockDefs []int64
	var lockQueues []string
	for _, r := range rows {
		if d := l.defs[r.JobDefinitionID]; d != nil && d.binds() && !d.locked && !slices.Contains(lockDefs, r.JobDefinitionID) {
			lockDefs = append(lockDefs, r.JobDefinitionID)
		}
		name, _ := l.rowQueue(&r)
		if q := l.queues[name]; q != nil && q.binds() && !q.locked && !slices.Contains(lockQueues, name) {
			lockQueues = append(lockQueues, name)
		}
	}
	if len(lockDefs) > 0 {
		if err := s.lockDefLimits(tx, lock, lockDefs, l.defs); err != nil {
			return err
		}
		for _, id := range lockDefs {
			if d := l.defs[id]; d != nil && d.locked && d.rate != nil {
				if err := l.readNow(s, tx); err != nil {
					return err
				}
			}
		}
	}
	if len(lockQueues) > 0 {
		if err := s.lockQueueLimits(tx, l, lock, skipping, lockQueues); err != nil {
			return err
		}
	}
	return s.countLimits(tx, l, rows)
}

// countLimits counts, under the locks, the active jobs of the locked
// queues and definitions with max_running that rows may take a slot of.
//
// The exact counts read every active row (a queue's with its definition
// and schedule, to resolve its queue). Most claims need less: when the
// jobs active anywhere, plus every row of the pick, fit a limit, no split
// of them can pass it. So when the last count seen (activeHint) says that
// total is likely to fit, the claim counts it alone, an index-only count
// on the status prefix of idx_jobs_claim_order, and takes it as each
// limit's count; only the limits it does not fit are counted exactly,
// and a limit it fitted in an earlier round of the claim is counted
// exactly once more rows would pass it. The total is counted after the
// locks, like the exact counts, so it sees every claim that took a slot
// of these limits before: it is never below any of their counts.
func (s *Store) countLimits(tx *gorm.DB, l *claimLimits, rows []models.Job) error {
	needQ, needD := map[string]int64{}, map[int64]int64{}
	for i := range rows {
		r := &rows[i]
		if l.decided[r.ID] {
			continue
		}
		if d := l.defs[r.JobDefinitionID]; d != nil && d.locked && d.invalid == "" && d.max != nil {
			needD[r.JobDefinitionID]++
		}
		name, _ := l.rowQueue(r)
		if q := l.queues[name]; q != nil && q.locked && q.invalid == "" && q.q.MaxRunning != nil {
			needQ[name]++
		}
	}
	fits := func(active, taken, need, limit int64) bool { return active+taken+need <= limit }
	var qs []string
	var ds []int64
	failedBound := false
	for name, n := range needQ {
		q := l.queues[name]
		if !q.counted || q.bound && !fits(q.active, q.taken, n, *q.q.MaxRunning) {
			qs = append(qs, name)
			failedBound = failedBound || q.counted
		}
	}
	for id, n := range needD {
		d := l.defs[id]
		if !d.counted || d.bound && !fits(d.active, d.taken, n, *d.max) {
			ds = append(ds, id)
			failedBound = failedBound || d.counted
		}
	}
	if len(qs) == 0 && len(ds) == 0 {
		return nil
	}
	sort.Strings(qs)
	slices.Sort(ds)
	tryBound := !failedBound
	hint := s.activeHint.Load()
	for _, name := range qs {
		q := l.queues[name]
		tryBound = tryBound && fits(hint, q.taken, needQ[name], *q.q.MaxRunning)
	}
	for _, id := range ds {
		d := l.defs[id]
		tryBound = tryBound && fits(hint, d.taken, needD[id], *d.max)
	}
	if tryBound {
		var total int64
		if err := tx.Raw(activeJobsSQL(s.activeJobsIndex()), activeStatuses).Row().Scan(&total); err != nil {
			return fmt.Errorf("count active jobs: %w", err)
		}
		s.activeHint.Store(total)
		qs = slices.DeleteFunc(qs, func(name string) bool {
			q := l.queues[name]
			if !fits(total, q.taken, needQ[name], *q.q.MaxRunning) {
				return false
			}
			q.active, q.counted, q.bound = total, true, true
			return true
		})
		ds = slices.DeleteFunc(ds, func(id int64) bool {
			d := l.defs[id]
			if !fits(total, d.taken, needD[id], *d.max) {
				return false
			}
			d.active, d.counted, d.bound = total, true, true
			return true
		})
	}
	if len(ds) > 0 {
		if err := s.countActiveDefs(tx, ds, l.defs); err != nil {
			return err
		}
	}
	if len(qs) > 0 {
		return s.countActiveQueues(tx, qs, l.queues)
	}
	return nil
}

// lockQueueLimits locks the queues names (skipping those another claim
// holds when skipping) and reads them again under the lock.
func (s *Store) lockQueueLimits(tx *gorm.DB, l *claimLimits, lock string, skipping bool, names []string) error {
	sort.Strings(names)
	if lock == "" {
		// SQLite: the claim's transaction holds the write lock since its
		// BEGIN (IMMEDIATE), so the rows read earlier in it are current.
		for _, name := range names {
			q := l.queues[name]
			q.locked, q.tat = true, q.tat0
		}
		return s.readNowForRates(tx, l, names)
	}
	fresh, err := readQueues(tx, lock, names)
	if err != nil {
		return err
	}
	for _, name := range names {
		q := fresh[name]
		if q == nil && skipping { // another claim holds it: its jobs wait
			continue
		}
		if q == nil { // deleted since the first read
			delete(l.queues, name)
			continue
		}
		q.locked = true
		q.tat = q.tat0
		l.queues[name] = q
	}
	return s.readNowForRates(tx, l, names)
}

// readNowForRates reads the database's clock when one of the locked
// queues names has a rate limit.
func (s *Store) readNowForRates(tx *gorm.DB, l *claimLimits, names []string) error {
	for _, name := range names {
		if q := l.queues[name]; q != nil && q.locked && q.q.RateLimit != nil {
			return l.readNow(s, tx)
		}
	}
	return nil
}

// readNow reads the database's clock once per claim, for the rate limits.
func (l *claimLimits) readNow(s *Store, tx *gorm.DB) error {
	if l.haveNow {
		return nil
	}
	now, err := s.dbNowTx(tx)
	if err != nil {
		return err
	}
	l.nowUs, l.haveNow = now.UnixMicro(), true
	return nil
}

// limitLock is the lock a claim takes on the rows of its limits.
func (s *Store) limitLock() string {
	switch s.dialect {
	case MySQL:
		return " FOR UPDATE"
	case Postgres:
		// NO KEY: a fire inserting jobs of the definition takes KEY SHARE
		// for the foreign key, which this does not wait for.
		return " FOR NO KEY UPDATE"
	}
	return ""
}

// admit takes, of rows (in claim order), those the limits let start now,
// up to room, and returns them. Rows an earlier round decided are passed
// over, and what it took still counts. The held rows are noted with the
// reason, and their keys excluded from the next round's pick.
func (l *claimLimits) admit(rows []models.Job, room int, skip func(*models.Job) bool) []models.Job {
	var out []models.Job
	for i := range rows {
		r := &rows[i]
		if l.decided[r.ID] || len(out) >= room || l.unlocked(r) || skip(r) {
			continue
		}
		// Placement first: a job this node does not take uses no slot.
		reason, kind, by := l.placeCheck(r)
		if kind == "" {
			reason, kind, by = l.check(r)
		}
		l.decided[r.ID] = true
		if kind == placeElsewhere {
			l.elsewhere++
			l.exclude(r, by)
			continue
		}
		if reason == "" {
			out = append(out, *r)
			continue
		}
		l.held = append(l.held, chimedb.LimitedJob{ID: r.ID, Kind: kind, Reason: reason})
		l.exclude(r, by)
	}
	return out
}

// holdsLocks says whether this claim has locked a limit's row.
func (l *claimLimits) holdsLocks() bool {
	for _, d := range l.defs {
		if d.locked {
			return true
		}
	}
	for _, q := range l.queues {
		if q.locked {
			return true
		}
	}
	return false
}

// unlocked says whether a limit binds r whose row this claim could not
// lock (another claim holds it: see prepareLimits). Its count is not
// known, so r is neither admitted nor held: it stays pending, undecided,
// for a later claim.
func (l *claimLimits) unlocked(r *models.Job) bool {
	if d := l.defs[r.JobDefinitionID]; d != nil && d.binds() && !d.locked && !d.late {
		return true
	}
	name, _ := l.rowQueue(r)
	q := l.queues[name]
	return q != nil && q.binds() && !q.locked && !q.late
}

// check admits r or says why not, what kind of limit held it, and whether
// its queue ("queue") or definition ("definition") did.
func (l *claimLimits) check(r *models.Job) (reason, kind, by string) {
	d := l.defs[r.JobDefinitionID]
	if d == nil {
		return "", "", "" // no such definition: the claim fails it with that reason
	}
	if d.invalid != "" {
		return fmt.Sprintf("waiting: definition %d is invalid: %s", r.JobDefinitionID, d.invalid), chimedb.LimitInvalid, "definition"
	}
	name, _ := l.rowQueue(r)
	q := l.queues[name]
	switch {
	case q == nil:
		return fmt.Sprintf("waiting: queue %q does not exist (create it, or move the job's definition or schedule to another queue)", name), chimedb.LimitInvalid, "queue"
	case q.invalid != "":
		return fmt.Sprintf("waiting: queue %q is invalid: %s", name, q.invalid), chimedb.LimitInvalid, "queue"
	case q.q.Paused:
		return fmt.Sprintf("waiting: queue %q is paused", name), chimedb.LimitPaused, "queue"
	case q.q.MaxRunning != nil && q.active+q.taken >= *q.q.MaxRunning:
		return fmt.Sprintf("waiting: queue %q has max_running = %d jobs active", name, *q.q.MaxRunning), chimedb.LimitQueue, "queue"
	case d.max != nil && d.active+d.taken >= *d.max:
		return fmt.Sprintf("waiting: definition %d has max_running = %d jobs active", r.JobDefinitionID, *d.max), chimedb.LimitDefinition, "definition"
	}
	// GCRA on the database's clock: a start is allowed once the
	// theoretical arrival time has come, and moves it one spacing on.
	// A claim always comes a little after it (the wake-up and the claim's
	// own statements before it reads the clock); strict GCRA drops that
	// lateness, so under load the rate fell short by the claim's latency
	// per start (-8 to -47 % at 600 a minute on a loaded machine,
	// TestRateLimitHeld). The lateness is credited back, up to
	// rateCredit, so the next start may come that much sooner: over time
	// exactly N per P, never a burst — starts stay at least the spacing
	// minus the credit apart, so a window of P holds at most one start
	// more than N. The claim says when the next start is due (RetryIn),
	// so the engine comes back then, not at its next poll. Both rates are
	// checked before either is taken: a start one of them refuses uses
	// neither.
	qsp, dsp := q.q.RateSpacing(), models.RateSpacingOf(d.rate, d.period)
	if qsp > 0 && l.early(q.tat) {
		return fmt.Sprintf("waiting: queue %q starts at most %d jobs per %d ms", name, *q.q.RateLimit, *q.q.RatePeriodMs), chimedb.LimitRate, "queue"
	}
	if dsp > 0 && l.early(d.tat) {
		return fmt.Sprintf("waiting: definition %d starts at most %d jobs per %d ms", r.JobDefinitionID, *d.rate, *d.period),
			chimedb.LimitDefinitionRate, "definition"
	}
	if qsp > 0 {
		q.tat = max(q.tat, l.nowUs-rateCredit(qsp).Microseconds()) + qsp.Microseconds()
	}
	if dsp > 0 {
		d.tat = max(d.tat, l.nowUs-rateCredit(dsp).Microseconds()) + dsp.Microseconds()
	}
	q.taken++
	d.taken++
	return "", "", ""
}

// rateCredit is how much of a late start's lateness a rate limiter
// gives back: half a spacing, at most 250 ms, so a queue limited to a
// few starts an hour never starts two within minutes of each other; and
// at least 20 ms, so a fast rate (a spacing shorter than a claim takes)
// may start the few jobs a claim's own latency held back together: with
// one start per claim, 200 a second came out at 164 (scripts/bench-limits.sh).
func rateCredit(sp time.Duration) time.Duration {
	return min(max(sp/2, minRateCredit), 250*time.Millisecond)
}

// minRateCredit is rateCredit's floor (see there).
const minRateCredit = 20 * time.Millisecond

// early says whether a limiter whose next start is due at tat (µs) must
// wait, and notes when it may start (RetryIn).
func (l *claimLimits) early(tat int64) bool {
	if tat <= l.nowUs {
		return false
	}
	if w := time.Duration(tat-l.nowUs) * time.Microsecond; l.retryIn == 0 || w < l.retryIn {
		l.retryIn = w
	}
	return true
}

// exclude leaves r's full queue or definition out of the next pick.
func (l *claimLimits) exclude(r *models.Job, by string) {
	e := &l.excluded
	if by == "job" {
		if !slices.Contains(e.ids, r.ID) {
			e.ids = append(e.ids, r.ID)
		}
		return
	}
	if by == "schedule" {
		if !slices.Contains(e.schedules, *r.ScheduleID) {
			e.schedules = append(e.schedules, *r.ScheduleID)
		}
		return
	}
	if by == "definition" {
		if !slices.Contains(e.defs, r.JobDefinitionID) {
			e.defs = append(e.defs, r.JobDefinitionID)
		}
		return
	}
	switch _, from := l.rowQueue(r); from {
	case "job":
		if !slices.Contains(e.queues, *r.Queue) {
			e.queues = append(e.queues, *r.Queue)
		}
	case "schedule":
		if !slices.Contains(e.schedules, *r.ScheduleID) {
			e.schedules = append(e.schedules, *r.ScheduleID)
		}
	default:
		// Also leaves out the definition's jobs that a schedule or the job
		// moves to another queue, for this claim only.
		if !slices.Contains(e.defs, r.JobDefinitionID) {
			e.defs = append(e.defs, r.JobDefinitionID)
		}
	}
}

// save writes the rate limiters' state the admitted rows moved.
func (l *claimLimits) save(tx *gorm.DB) error {
	names := make([]string, 0, len(l.queues))
	for name, q := range l.queues {
		if q.locked && q.tat != q.tat0 {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		if err := tx.Exec(`UPDATE queues SET rate_tat_us = ? WHERE name = ?`, l.queues[name].tat, name).Error; err != nil {
			return fmt.Errorf("save the rate limit of queue %q: %w", name, err)
		}
	}
	var ids []int64
	for id, d := range l.defs {
		if d.locked && d.tat != d.tat0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		if err := tx.Exec(`UPDATE job_definitions SET rate_tat_us = ? WHERE id = ?`, l.defs[id].tat, id).Error; err != nil {
			return fmt.Errorf("save the rate limit of definition %d: %w", id, err)
		}
	}
	return nil
}

// queueColumns are read from queues, in readQueues' order.
const queueColumns = "name, description, max_running, rate_limit, rate_period_ms, rate_tat_us, paused"

// readQueues reads the queues rows (those of names, when given, with
// lock), each checked: a value that is no integer, or out of its bounds,
// makes the row invalid with the reason instead of failing the read.
func readQueues(tx *gorm.DB, lock string, names []string) (map[string]*queueLimit, error) {
	q := tx.Raw(`SELECT ` + queueColumns + ` FROM queues ORDER BY name` + lock)
	if names != nil {
		q = tx.Raw(`SELECT `+queueColumns+` FROM queues WHERE name IN ? ORDER BY name`+lock, names)
	}
	rows, err := q.Rows()
	if err != nil {
		return nil, fmt.Errorf("read queues: %w", err)
	}
	defer rows.Close()
	out := map[string]*queueLimit{}
	for rows.Next() {
		raw := make([]any, 7)
		ptrs := make([]any, 7)
		for i := range raw {
			ptrs[i] = &raw[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("read queues: %w", err)
		}
		ql := queueFromRaw(raw)
		out[ql.q.Name] = ql
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read queues: %w", err)
	}
	return out, nil
}

// queueFromRaw builds a checked queue from the driver's values.
func queueFromRaw(raw []any) *queueLimit {
	ql := &queueLimit{q: models.Queue{Name: rawString(raw[0]), Description: rawString(raw[1])}}
	cols := []string{"max_running", "rate_limit", "rate_period_ms", "rate_tat_us"}
	dst := []**int64{&ql.q.MaxRunning, &ql.q.RateLimit, &ql.q.RatePeriodMs, &ql.q.RateTatUs}
	for i, c := range cols {
		v, ok := rawNullInt(raw[2+i])
		if !ok {
			ql.invalid = fmt.Sprintf("queues.%s holds %s, which is not an integer", c, rawText(raw[2+i]))
			continue
		}
		*dst[i] = v
	}
	p, ok := rawBool(raw[6])
	if !ok && ql.invalid == "" {
		ql.invalid = fmt.Sprintf("queues.paused holds %s, which is not true or false", rawText(raw[6]))
	}
	ql.q.Paused = p
	if ql.invalid == "" {
		ql.invalid = models.CheckQueue(&ql.q)
	}
	if ql.q.RateTatUs != nil {
		ql.tat0 = *ql.q.RateTatUs
	}
	return ql
}

// rawNullInt reads an integer column's driver value; nil is NULL.
func rawNullInt(v any) (*int64, bool) {
	switch v := v.(type) {
	case nil:
		return nil, true
	case int64:
		return &v, true
	case int32:
		n := int64(v)
		return &n, true
	case []byte:
		return parseIntText(string(v))
	case string:
		return parseIntText(v)
	}
	return nil, false
}

func parseIntText(s string) (*int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return nil, false
	}
	return &n, true
}

// rawBool reads a boolean column's driver value.
func rawBool(v any) (bool, bool) {
	switch v := v.(type) {
	case bool:
		return v, true
	case int64:
		return v != 0, v == 0 || v == 1
	case []byte:
		return rawBool(string(v))
	case string:
		switch v {
		case "0", "f", "false", "FALSE":
			return false, true
		case "1", "t", "true", "TRUE":
			return true, true
		}
	}
	return false, false
}

// readDefLimits reads queue and max_running of the definitions ids into defs.
func readDefLimits(tx *gorm.DB, ids []int64, defs map[int64]*defLimit) error {
	for chunk := range slices.Chunk(ids, scheduleInChunk) {
		rows, err := tx.Raw(`SELECT `+defLimitColumns+` FROM job_definitions WHERE id IN ?`, chunk).Rows()
		if err != nil {
			return fmt.Errorf("read limits of definitions: %w", err)
		}
		for rows.Next() {
			id, d, err := scanDefLimit(rows)
			if err != nil {
				_ = rows.Close()
				return fmt.Errorf("read limits of definitions: %w", err)
			}
			defs[id] = d
		}
		if err := closeRows(rows); err != nil {
			return fmt.Errorf("read limits of definitions: %w", err)
		}
	}
	return nil
}

// defLimitColumns are what the limits read of a definition, in
// scanDefLimit's order.
const defLimitColumns = "id, queue, max_running, required_tags, broadcast, rate_limit, rate_period_ms, rate_tat_us"

// scanDefLimit reads one row of defLimitColumns, checked: a value that is
// no integer, or out of its bounds, makes the definition invalid with the
// reason instead of failing the read.
func scanDefLimit(rows interface{ Scan(...any) error }) (int64, *defLimit, error) {
	var raw [8]any
	ptrs := make([]any, len(raw))
	for i := range raw {
		ptrs[i] = &raw[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return 0, nil, err
	}
	bcast, _ := rawBool(raw[4])
	d := &defLimit{queue: rawString(raw[1]), tags: rawString(raw[3]), bcast: bcast}
	var tat *int64
	for _, c := range []struct {
		name string
		at   int
		dst  **int64
	}{{"max_running", 2, &d.max}, {"rate_limit", 5, &d.rate}, {"rate_period_ms", 6, &d.period}, {"rate_tat_us", 7, &tat}} {
		v, ok := rawNullInt(raw[c.at])
		if !ok && d.invalid == "" {
			d.invalid = fmt.Sprintf("job_definitions.%s holds %s, which is not an integer", c.name, rawText(raw[c.at]))
		}
		*c.dst = v
	}
	if d.invalid == "" {
		d.invalid = models.CheckMaxRunning(d.max)
	}
	if d.invalid == "" {
		d.invalid = models.CheckRate(d.rate, d.period)
	}
	if tat != nil {
		d.tat0 = *tat
	}
	return rawInt64(raw[0]), d, nil
}

// binds says whether a limit of the definition binds its jobs.
func (d *defLimit) binds() bool { return d.invalid == "" && (d.max != nil || d.rate != nil) }

// lockDefLimits locks the definitions ids and reads their limits again
// under the lock.
func (s *Store) lockDefLimits(tx *gorm.DB, lock string, ids []int64, defs map[int64]*defLimit) error {
	slices.Sort(ids)
	if lock == "" { // SQLite: current already (see lockQueueLimits)
		for _, id := range ids {
			d := defs[id]
			d.locked, d.tat = true, d.tat0
		}
		return nil
	}
	fresh, err := lockedDefLimits(tx, lock, ids)
	if err != nil {
		return err
	}
	for id, d := range fresh {
		d.locked = true
		d.tat = d.tat0
		defs[id] = d
	}
	return nil
}

// lockedDefLimits locks the definitions ids (sorted) with lock and reads
// their limits.
func lockedDefLimits(tx *gorm.DB, lock string, ids []int64) (map[int64]*defLimit, error) {
	rows, err := tx.Raw(`SELECT `+defLimitColumns+` FROM job_definitions WHERE id IN ? ORDER BY id`+lock, ids).Rows()
	if err != nil {
		return nil, fmt.Errorf("lock definitions with max_running: %w", err)
	}
	out := make(map[int64]*defLimit, len(ids))
	for rows.Next() {
		id, d, err := scanDefLimit(rows)
		if err != nil {
			_ = rows.Close()
			return nil, fmt.Errorf("lock definitions with max_running: %w", err)
		}
		out[id] = d
	}
	if err := closeRows(rows); err != nil {
		return nil, fmt.Errorf("lock definitions with max_running: %w", err)
	}
	return out, nil
}

// countActiveDefs counts the active jobs of the definitions ids exactly.
func (s *Store) countActiveDefs(tx *gorm.DB, ids []int64, defs map[int64]*defLimit) error {
	var counts []struct {
		ID int64 `gorm:"column:job_definition_id"`
		N  int64 `gorm:"column:n"`
	}
	// No condition on job_definition_id: with one, a planner may read the
	// definition's whole history by its index instead of the few active
	// rows by status (seen on SQLite: the drain's claims went quadratic).
	if err := tx.Raw(`SELECT job_definition_id, COUNT(*) AS n FROM jobs WHERE status IN ? GROUP BY job_definition_id`,
		activeStatuses).Scan(&counts).Error; err != nil {
		return fmt.Errorf("count active jobs of definitions: %w", err)
	}
	var total int64
	for _, id := range ids {
		if d := defs[id]; d != nil {
			d.active, d.counted, d.bound = 0, true, false
		}
	}
	for _, c := range counts {
		total += c.N
		if d := defs[c.ID]; d != nil && slices.Contains(ids, c.ID) {
			d.active = c.N
		}
	}
	s.activeHint.Store(total)
	return nil
}

// activeQueueExpr is the queue of the jobs row j (with its schedule s and
// definition d), as rowQueue decides it.
const activeQueueExpr = `COALESCE(NULLIF(j.queue, ''), NULLIF(s.queue, ''), NULLIF(d.queue, ''), 'default')`

// activeJobsIndex is the index hint that makes MySQL count active jobs
// from the status prefix of idx_jobs_claim_order. Without it, on a jobs
// table whose statistics lag a fresh backlog (InnoDB recalculates them in
// the background), MariaDB drove the queue count's join from
// job_definitions into idx_jobs_definition and read every job of the
// definition, pending ones included, in each claim: with a queue limit
// that never binds, the drain of 20,000 jobs ran at 3,500-3,900 jobs/s
// against 11,800-15,300 without (scripts/bench-limits.sh).
func (s *Store) activeJobsIndex() string {
	if s.dialect == MySQL {
		return " FORCE INDEX (idx_jobs_claim_order)"
	}
	return ""
}

// activeQueuesSQL counts the active jobs of every queue.
func activeQueuesSQL(hint string) string {
	return `SELECT ` + activeQueueExpr + ` AS q, COUNT(*) AS n FROM jobs j` + hint + `
		JOIN job_definitions d ON d.id = j.job_definition_id LEFT JOIN schedules s ON s.id = j.schedule_id
		WHERE j.status IN ? GROUP BY 1`
}

// ExplainCountActiveQueues is the plan of a limited claim's count of its
// queues' active jobs, for tests.
func (s *Store) ExplainCountActiveQueues(ctx context.Context) (string, error) {
	return s.explain(ctx, activeQueuesSQL(s.activeJobsIndex()), activeStatuses)
}

// countActiveQueues counts the active jobs of the queues names exactly.
func (s *Store) countActiveQueues(tx *gorm.DB, names []string, queues map[string]*queueLimit) error {
	var counts []struct {
		Q string `gorm:"column:q"`
		N int64  `gorm:"column:n"`
	}
	if err := tx.Raw(activeQueuesSQL(s.activeJobsIndex()), activeStatuses).Scan(&counts).Error; err != nil {
		return fmt.Errorf("count active jobs of queues: %w", err)
	}
	for _, name := range names {
		if q := queues[name]; q != nil {
			q.active, q.counted, q.bound = 0, true, false
		}
	}
	var total int64
	for _, c := range counts {
		total += c.N
		if q := queues[c.Q]; q != nil && slices.Contains(names, c.Q) {
			q.active = c.N
		}
	}
	s.activeHint.Store(total)
	return nil
}

// activeJobsSQL counts every active job: a range on the status prefix of
// idx_jobs_claim_order, which holds all the count reads.
func activeJobsSQL(hint string) string {
	return `SELECT COUNT(*) FROM jobs` + hint + ` WHERE status IN ?`
}

// ExplainCountActiveJobs is the plan of a limited claim's count of every
// active job (see countLimits), for tests.
func (s *Store) ExplainCountActiveJobs(ctx context.Context) (string, error) {
	return s.explain(ctx, activeJobsSQL(s.activeJobsIndex()), activeStatuses)
}

// dbNowTx reads the database's clock inside tx.
func (s *Store) dbNowTx(tx *gorm.DB) (time.Time, error) {
	expr, arg := s.dbNowExpr(0)
	var v any
	if err := tx.Raw("SELECT "+expr, arg).Row().Scan(&v); err != nil {
		return time.Time{}, fmt.Errorf("read the database clock: %w", err)
	}
	switch t := v.(type) {
	case time.Time:
		return t.UTC(), nil
	case []byte:
		return parseDBNow(string(t))
	case string:
		return parseDBNow(t)
	}
	return time.Time{}, fmt.Errorf("read the database clock: unexpected %T", v)
}

func parseDBNow(v string) (time.Time, error) {
	for _, layout := range []string{sqliteTimeLayout, "2006-01-02 15:04:05.999999999", time.RFC3339Nano} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("read the database clock: %q is no time", v)
}

// defaultQueueFree says whether the queue 'default' has no limit and is
// not paused: a fire hands off (starts on its own node without a claim)
// only jobs of such a queue.
func defaultQueueFree(tx *gorm.DB) (bool, error) {
	qs, err := readQueues(tx, "", []string{models.DefaultQueue})
	if err != nil {
		return false, err
	}
	q := qs[models.DefaultQueue]
	return q != nil && q.invalid == "" && !q.binds() && !q.q.Paused, nil
}
