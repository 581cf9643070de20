package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// activeStatuses are the states in which a job holds a worker (or is about to).
var activeStatuses = []models.JobStatus{models.JobQueued, models.JobRunning, models.JobPaused}

// ClaimJobs moves up to p.Limit due pending jobs to queued on p.NodeID in
// one transaction. On MySQL the rows are picked with FOR UPDATE SKIP LOCKED,
// so nodes claiming at the same time take disjoint rows without waiting for
// each other; SQLite has a single writer (BEGIN IMMEDIATE) and needs no lock
// clause. The pick takes higher priorities first, without starvation (see
// selectDue); it is served by idx_jobs_claim_order (status, claim_key, id),
// so its cost does not grow with finished history. With p.After it starts
// after that floor, and takes rows up to it only when those after it run
// short (see selectDue).
//
// A schedule with concurrency = 'forbid' gets at most one job active: rows
// of a schedule that already has a queued, running or paused job are not
// picked, and of several due rows of one such schedule only the first in
// claim order is claimed.
//
// With p.StartKinds, jobs of those task types go straight to running
// instead (see startClaimed): their definitions are then read inside the
// transaction, and a failed read fails the claim.
//
// A picked row that cannot be run as it is (a value its field cannot
// hold, or out of its models.Bound: see readJobs) is failed in the claim,
// with the reason, and logged; the claim goes on with the others.
//
// An error means nothing was claimed. Once the transaction has committed,
// the rows are the caller's and ClaimJobs returns them with a nil error,
// whatever happens after (ctx ending, the definitions' read failing): a row
// whose definition could not be read carries the reason in LoadErr.
func (s *Store) ClaimJobs(ctx context.Context, p *chimedb.ClaimParams) (*chimedb.ClaimResult, error) {
	if p.Limit <= 0 {
		return &chimedb.ClaimResult{}, nil
	}
	res := &chimedb.ClaimResult{}
	schedNames := map[int64]string{}
	var bad badJobs
	committing := false
	mayLate := s.rowLocks()
	var path lateMode
	claim := func(tx *gorm.DB) error {
		*res, bad = chimedb.ClaimResult{}, badJobs{}
		clear(schedNames)
		committing = false
		var err error
		if path, err = s.claimTx(tx, p, res, schedNames, &bad, mayLate); err != nil {
			return err
		}
		committing = true // an error from here on is the COMMIT's
		return nil
	}
	err := s.InTx(claimContext(ctx), claim)
	if errors.Is(err, errLateFallback) {
		// A limit checked late was passed (see limits_late.go): rolled
		// back, and claimed again with the limits' locks first.
		s.limitPaths.fellBack.Add(1)
		mayLate = false
		err = s.InTx(claimContext(ctx), claim)
	}
	if err == nil {
		switch path {
		case lateOn:
			s.limitPaths.late.Add(1)
		case lateOff:
			s.limitPaths.first.Add(1)
		}
	}
	if err != nil && committing && len(res.Jobs) > 0 && s.claimCommitted(ctx, p, res, err) {
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("claim jobs for node %s: %w", p.NodeID, err)
	}
	s.logBadJobs(bad, "the claim of node "+p.NodeID)
	if len(res.Jobs) > 0 && len(p.StartKinds) == 0 {
		// Committed: from here on nothing may lose the rows. The read goes
		// on after ctx ends (Stop cancels claims in flight), bounded by
		// its own timeout instead.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimLoadTimeout)
		defer cancel()
		s.loadClaimed(rctx, res, schedNames)
	}
	return res, nil
}

// claimDoubtTimeout bounds how long a claim whose COMMIT got no answer
// waits for the database to say whether it committed: a failover of the
// primary takes seconds to tens of seconds.
const claimDoubtTimeout = time.Minute

// claimCommitted finds out whether a claim whose COMMIT failed committed
// all the same: the COMMIT reached the server, and the answer was lost (the
// primary failed over, the connection was cut, right then). Its rows are
// then this node's: returned as an error, they would stay queued or
// running on a live node that never runs them, and that node's job
// heartbeats keep anyone from recovering them. It asks until the database
// answers, for up to claimDoubtTimeout and while ctx lasts, and keeps in
// res the jobs that are p.NodeID's with this claim's queued_at (exact to
// the microsecond: no other claim wrote it); true when there are any. The
// read locks the rows, so that it waits for the claim's transaction if
// the server is still ending it.
func (s *Store) claimCommitted(ctx context.Context, p *chimedb.ClaimParams, res *chimedb.ClaimResult, cause error) bool {
	ids := make([]int64, len(res.Jobs))
	for i, j := range res.Jobs {
		ids[i] = j.ID
	}
	c, cancel := context.WithTimeout(ctx, claimDoubtTimeout)
	defer cancel()
	var ours []int64
	for {
		err := s.InTx(c, func(tx *gorm.DB) error {
			ours = nil
			return s.forUpdate(tx.Model(&models.Job{}).Where("id IN ? AND node_id = ? AND queued_at = ?", ids, p.NodeID, DBTime(p.Now))).
				Pluck("id", &ours).Error
		})
		if err == nil {
			break
		}
		select {
		case <-c.Done():
			s.log.WithError(cause).WithField("jobs", ids).Error("a claim's COMMIT got no answer and the database did not say in time " +
				"whether it committed: if it did, these jobs stay on this node, unrun, until the node restarts")
			return false
		case <-time.After(250 * time.Millisecond):
		}
	}
	if len(ours) == 0 {
		return false
	}
	kept := res.Jobs[:0]
	for _, j := range res.Jobs {
		if slices.Contains(ours, j.ID) {
			kept = append(kept, j)
		}
	}
	res.Jobs = kept
	s.log.WithError(cause).WithField("jobs", len(kept)).
		Warn("a claim's COMMIT got no answer, and the database says it committed: running its jobs")
	return true
}

// claimPlanSettings hold a claim's transaction on PostgreSQL to ordered
// index scans of idx_jobs_claim_order, whatever the statistics of jobs.
// On a table never analyzed (a backlog written right after the migration,
// before autovacuum's first ANALYZE, as chime bench does) the planner
// takes its default selectivities, estimates the claim's rows at a
// handful, and prices a Bitmap Heap Scan of every pending row after the
// floor, a Sort and the LIMIT just under the index scan that stops at the
// LIMIT: mid-drain it read and sorted 17,399 rows to claim 50 (10–96 ms
// against 0.08 ms). No shape of the query moves that crossover for good:
// it is decided by an estimate that has nothing to go on. Without bitmap
// scans the choice left is the ordered index scan or a sequential scan,
// which on such a table costs far more. The other statements of a claim
// read by primary key or by a few active rows, which a plain index scan
// serves as well. The settings ride on the BEGIN's round trip (see
// withBeginSQL) and end with the transaction.
const claimPlanSettings = "SET LOCAL enable_bitmapscan = off"

// claimContext marks ctx so that the claim's transaction begins with
// claimPlanSettings.
func claimContext(ctx context.Context) context.Context {
	return withBeginSQL(ctx, claimPlanSettings)
}

// claimLoadTimeout bounds the read of claimed jobs' definitions, which
// outlives the claim's context.
const claimLoadTimeout = 10 * time.Second

// claimTx picks and marks the rows of one claim inside tx (see ClaimJobs),
// filling res and the names of the schedules it read, and fails the
// picked rows that cannot be run, noting them in bad.
//
// With mayLate the limits that allow it are checked after the marks (see
// limits_late.go). It returns how the claim's limits were checked.
func (s *Store) claimTx(tx *gorm.DB, p *chimedb.ClaimParams, res *chimedb.ClaimResult, schedNames map[int64]string, bad *badJobs,
	mayLate bool) (lateMode, error) {
	began := time.Now()
	lim := &claimLimits{defs: map[int64]*defLimit{}, schedQ: map[int64]string{}, decided: map[int64]bool{},
		place: newPlacement(p.NodeID, p.NodeTags), mayLate: mayLate}
	if err := s.claimRounds(tx, p, res, schedNames, bad, began, lim); err != nil {
		return lim.late, err
	}
	return lim.late, s.lateCheck(tx, lim)
}

// claimRounds picks, admits and marks the rows of one claim (see claimTx).
func (s *Store) claimRounds(tx *gorm.DB, p *chimedb.ClaimParams, res *chimedb.ClaimResult, schedNames map[int64]string, bad *badJobs,
	began time.Time, lim *claimLimits) error {
	now := DBTime(p.Now)
	forbid := map[int64]bool{}
	failed := map[int64]bool{}
	taken := map[int64]bool{} // forbid schedules with a row admitted
	var (
		blocked, held []int64
		claimed       []models.Job
		last          *chimedb.ClaimCursor
	)
	// Each round picks again without what the rounds before found full
	// (see limits.go), keeping what they admitted; the forbid schedules'
	// checks run on each pick.
	for round := 1; ; round++ {
		ex := lim.excluded
		pick, err := s.selectDue(tx, p.Limit, now, p.After, &ex)
		if err != nil {
			return err
		}
		roundBad := pick.bad
		if err := readSchedules(tx, pick.rows, schedNames, forbid, lim.schedQ, lim.place.schedTags); err != nil {
			return err
		}
		// Schedules that forbid overlap and have a job holding a worker.
		// Looked up only when a picked row belongs to a forbid schedule: most
		// claims pick none, and this saves them a statement.
		if pickedForbid(pick.rows, forbid) {
			var b, h []int64
			if pick, b, h, err = s.dropBusyForbid(tx, p, now, pick, schedNames, forbid, &ex, lim); err != nil {
				return err
			}
			blocked, held = append(blocked, b...), append(held, h...)
			roundBad = append(roundBad, pick.bad...)
		}
		if pick.last != nil && (last == nil || cursorLess(*last, *pick.last)) {
			last = pick.last
		}
		if err := s.failFresh(tx, roundBad, failed, bad, now); err != nil {
			return err
		}
		if err := s.prepareLimits(tx, lim, pick.rows); err != nil {
			return err
		}
		if err := s.expandBroadcast(tx, lim, pick.rows, now); err != nil {
			return err
		}
		heldBefore := len(lim.held) + lim.elsewhere
		room := p.Limit - len(claimed) - len(failed)
		claimed = append(claimed, lim.admit(pick.rows, room, func(r *models.Job) bool {
			if r.ScheduleID == nil || !forbid[*r.ScheduleID] {
				return false
			}
			if slices.Contains(held, *r.ScheduleID) {
				return true // left pending: see chimedb.ClaimResult.Held
			}
			if taken[*r.ScheduleID] || slices.Contains(blocked, *r.ScheduleID) {
				blocked = append(blocked, *r.ScheduleID)
				return true
			}
			taken[*r.ScheduleID] = true
			return false
		})...)
		if len(lim.held)+lim.elsewhere == heldBefore || pick.n() < p.Limit || round == limitRounds || len(claimed)+len(failed) >= p.Limit {
			break
		}
	}
	// A row failed here took its place in the claim like any other: the
	// scan's count says whether rows are left beyond it. A row a limit
	// held back did not: counting it would make a queue's full backlog
	// look like work to claim at once.
	res.Selected, res.Last = len(claimed)+len(failed), last
	res.Limited, res.RetryIn = lim.held, lim.retryIn
	res.Blocked, res.Held = blocked, held
	return s.queueClaimed(tx, p, res, schedNames, began, claimed, lim)
}

// queueClaimed hands the claimed rows to res in claim order, saves the
// limits' state, and marks the rows queued (or, for p.StartKinds,
// started).
func (s *Store) queueClaimed(tx *gorm.DB, p *chimedb.ClaimParams, res *chimedb.ClaimResult, schedNames map[int64]string,
	began time.Time, claimed []models.Job, lim *claimLimits) error {
	now := DBTime(p.Now)
	slices.SortFunc(claimed, func(a, b models.Job) int {
		if cursorLess(chimedb.ClaimCursor{ClaimKey: a.ClaimKey, ID: a.ID}, chimedb.ClaimCursor{ClaimKey: b.ClaimKey, ID: b.ID}) {
			return -1
		}
		return 1
	})
	if err := s.retargetClaimed(tx, lim, claimed, now); err != nil {
		return err
	}
	ids := make([]int64, 0, len(claimed))
	for _, r := range claimed {
		r.Status, r.NodeID, r.QueuedAt, r.Outcome = models.JobQueued, p.NodeID, &now, models.OutcomeNone
		res.Jobs = append(res.Jobs, chimedb.ClaimedJob{Job: r})
		ids = append(ids, r.ID)
	}
	if err := lim.save(tx); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	queued := ids
	if len(p.StartKinds) > 0 {
		var err error
		if queued, err = s.startClaimed(tx, p, res, schedNames, began); err != nil {
			return err
		}
	}
	if len(queued) == 0 {
		return nil
	}
	// outcome describes the last run: cleared as the next one begins.
	if err := tx.Exec(`UPDATE `+s.jobsByID()+` SET status = ?, node_id = ?, queued_at = ?, outcome = '' WHERE id IN ?`,
		models.JobQueued, p.NodeID, now, queued).Error; err != nil {
		return fmt.Errorf("mark jobs queued: %w", err)
	}
	return nil
}

// failFresh fails the bad rows of a round not failed by an earlier one,
// and queues their notices.
func (s *Store) failFresh(tx *gorm.DB, roundBad []badRow, failed map[int64]bool, bad *badJobs, now time.Time) error {
	var fresh []badRow
	for _, b := range roundBad {
		if !failed[b.id] {
			failed[b.id] = true
			fresh = append(fresh, b)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	bad.rows = append(bad.rows, fresh...)
	f, err := s.failBadJobs(tx, fresh, now, []models.JobStatus{models.JobPending})
	if err != nil {
		return err
	}
	bad.failed = append(bad.failed, f...)
	return s.enqueueNotices(tx, f)
}

// startClaimed reads the definitions of res's jobs inside the claim and
// moves the jobs whose task type is in p.StartKinds straight to running,
// as StartJobs would, with one UPDATE; it returns the ids left to queue.
// The rows are locked (or, on SQLite, the claim is the only writer), so
// nothing can have changed them since the pick: no guard is needed.
//
// started_at is the engine's clock at the claim plus the time the claim
// has taken so far: the time of this UPDATE, a commit's round trip before
// the job reaches a worker that is already reserved for it.
func (s *Store) startClaimed(tx *gorm.DB, p *chimedb.ClaimParams, res *chimedb.ClaimResult, schedNames map[int64]string, began time.Time) ([]int64, error) {
	defs, err := readDefinitions(tx, res.Jobs)
	if err != nil {
		return nil, err
	}
	attach(res, defs, nil, schedNames)
	startAt := DBTime(p.Now.Add(time.Since(began)))
	queued := make([]int64, 0, len(res.Jobs))
	started := make([]int64, 0, len(res.Jobs))
	for i := range res.Jobs {
		j := &res.Jobs[i]
		if j.Definition == nil || !slices.Contains(p.StartKinds, j.Definition.TaskType) {
			queued = append(queued, j.ID)
			continue
		}
		at := startAt
		j.Started, j.Status, j.Attempt, j.StartedAt, j.HeartbeatAt = true, models.JobRunning, j.Attempt+1, &at, &at
		started = append(started, j.ID)
	}
	if len(started) == 0 {
		return queued, nil
	}
	if err := tx.Exec(`UPDATE `+s.jobsByID()+` SET status = ?, node_id = ?, queued_at = ?, outcome = '',
		attempt = attempt + 1, started_at = ?, heartbeat_at = ? WHERE id IN ?`,
		models.JobRunning, p.NodeID, DBTime(p.Now), startAt, startAt, started).Error; err != nil {
		return nil, fmt.Errorf("mark jobs running: %w", err)
	}
	return queued, nil
}

// dropBusyForbid finds the forbid schedules that have a job holding a
// worker and, when pick holds one of theirs, picks again without them. It
// returns the pick to claim, the busy schedules, and the held ones (see
// lockForbid), whose rows the claim must leave. The range on
// idx_jobs_claim_order covers only active rows, which are few. The pick
// again starts from the same floor (p.After) as the first, so its last is
// its end; its bad rows are those of the first again, or more.
func (s *Store) dropBusyForbid(tx *gorm.DB, p *chimedb.ClaimParams, now time.Time, pick duePick,
	schedNames map[int64]string, forbid map[int64]bool, ex *claimExclude, lim *claimLimits) (duePick, []int64, []int64, error) {
	held, err := s.lockForbid(tx, pick.rows, forbid)
	if err != nil {
		return duePick{}, nil, nil, err
	}
	var blocked []int64
	if err := tx.Raw(`SELECT DISTINCT a.schedule_id FROM jobs a JOIN schedules s ON s.id = a.schedule_id
		WHERE a.status IN ? AND s.concurrency = ?`, activeStatuses, models.ConcurrencyForbid).
		Scan(&blocked).Error; err != nil {
		return duePick{}, nil, nil, fmt.Errorf("find busy forbid schedules: %w", err)
	}
	if !pickedAny(pick.rows, blocked) && !pickedAny(pick.rows, held) {
		return pick, blocked, held, nil
	}
	// Rows of busy or held schedules took places that eligible rows may
	// have: pick again without them.
	if pick, err = s.selectDue(tx, p.Limit, now, p.After, ex.withSchedules(append(slices.Clone(blocked), held...))); err != nil {
		return duePick{}, nil, nil, err
	}
	if err := readSchedules(tx, pick.rows, schedNames, forbid, lim.schedQ, lim.place.schedTags); err != nil {
		return duePick{}, nil, nil, err
	}
	more, err := s.lockForbid(tx, pick.rows, forbid)
	if err != nil {
		return duePick{}, nil, nil, err
	}
	return pick, blocked, append(held, more...), nil
}

// loadClaimed attaches definitions and schedule names to the claimed jobs
// of res. Definitions are read after the commit: the claim transaction
// holds row locks (and on SQLite the write lock), so it stays as short as
// it can. The read is tried a few times; when it still fails, every job
// gets the error as LoadErr.
func (s *Store) loadClaimed(ctx context.Context, res *chimedb.ClaimResult, schedNames map[int64]string) {
	var defs []models.JobDefinition
	var err error
	for try := 1; ; try++ {
		defs, err = readDefinitions(s.db.WithContext(ctx), res.Jobs)
		if err == nil || try == 3 || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(try) * 50 * time.Millisecond):
		}
	}
	attach(res, defs, err, schedNames)
}

// readDefinitions reads the definitions of jobs; one that cannot be read
// comes back Unreadable (see definitionsByID), and its job fails before
// starting.
func readDefinitions(db *gorm.DB, jobs []chimedb.ClaimedJob) ([]models.JobDefinition, error) {
	defIDs := make([]int64, 0, 4)
	for _, j := range jobs {
		if !slices.Contains(defIDs, j.JobDefinitionID) {
			defIDs = append(defIDs, j.JobDefinitionID)
		}
	}
	defs, err := definitionsByID(db, defIDs)
	if err != nil {
		return nil, fmt.Errorf("read definitions of claimed jobs: %w", err)
	}
	return defs, nil
}

// attach sets the definition (or the error of its read) and the schedule
// name of every job of res.
func attach(res *chimedb.ClaimResult, defs []models.JobDefinition, err error, schedNames map[int64]string) {
	byID := make(map[int64]*models.JobDefinition, len(defs))
	for i := range defs {
		byID[defs[i].ID] = &defs[i]
	}
	for i := range res.Jobs {
		j := &res.Jobs[i]
		j.Definition, j.LoadErr = byID[j.JobDefinitionID], err
		if j.ScheduleID != nil {
			j.ScheduleName = schedNames[*j.ScheduleID]
		}
	}
}

// selectDue picks up to limit due pending rows, leaving out the schedules
// in exclude, and locks them (MySQL, PostgreSQL: skipping rows other claims
// hold). It returns them in claim order, and where its scan ended (nil when
// it picked none).
//
// Rows go in claim_key order: run_at moved models.PriorityStep earlier per
// priority above the default (later below), kept by the database (migration
// 00012). So higher priorities go first among due rows, and a due row is
// passed over only by rows that became due less than (their priority - its
// priority) × PriorityStep after it. A due row's key is at most now plus
// claimKeySlack, which bounds the range on idx_jobs_claim_order; run_at <=
// now then drops the few rows in that range that are not due yet.
//
// With a floor (after), the scan starts after it: the rows claims took
// before it leave delete-marked index entries at the front of the range
// until purge (vacuum) removes them, and under a backlog purge lags, so a
// scan from the start would walk all of them again on every claim. When
// the rows above the floor run short, the same transaction takes the rest
// from the start up to the floor, so a short scan never leaves due rows
// below the floor behind. A row that appears below a floor while the
// floor's claims come back full (a higher priority fired, a job released,
// recovered or written by an admin, a row that became due, a row another
// claim had locked and rolled back) waits for the first claim without a
// floor: the order above then holds plus at most the floor's age, which
// the caller bounds (taskengine drops its floor after floorMaxAge).
func (s *Store) selectDue(tx *gorm.DB, limit int, now time.Time, after *chimedb.ClaimCursor, exclude *claimExclude) (duePick, error) {
	if after == nil {
		return s.selectDueIn(tx, limit, now, "", nil, exclude)
	}
	where, args := s.aboveFloor(after)
	above, err := s.selectDueIn(tx, limit, now, where, args, exclude)
	if err != nil || above.n() >= limit {
		return above, err
	}
	where, args = s.atOrBelowFloor(after)
	below, err := s.selectDueIn(tx, limit-above.n(), now, where, args, exclude)
	if err != nil {
		return duePick{}, err
	}
	if below.last == nil {
		below.last = above.last
	}
	// Every row below is at or before the floor, every row above after it.
	below.rows, below.bad = append(below.rows, above.rows...), append(below.bad, above.bad...)
	return below, nil
}

// duePick is what scans of a claim read: the rows to claim, in claim
// order; the rows that cannot be run as they are (see readJobs); and
// where the scan ended (nil when it read none).
type duePick struct {
	rows []models.Job
	bad  []badRow
	last *chimedb.ClaimCursor
}

// n is how many rows the scans took.
func (p *duePick) n() int { return len(p.rows) + len(p.bad) }

// selectDueIn is one scan of selectDue, narrowed by the condition where.
func (s *Store) selectDueIn(tx *gorm.DB, limit int, now time.Time, where string, args []any, exclude *claimExclude) (duePick, error) {
	sql, sqlArgs := s.claimSQL(limit, now, where, args, exclude)
	if s.rowLocks() {
		sql += " FOR UPDATE SKIP LOCKED"
	}
	rows, bad, err := readJobs(tx.Raw(sql, sqlArgs...), true)
	if err != nil {
		return duePick{}, fmt.Errorf("select due jobs: %w", err)
	}
	p := duePick{rows: rows, bad: bad, last: lastOf(rows)}
	// The scan is in claim order: it ended at the greatest of its rows.
	for _, b := range bad {
		if c := (chimedb.ClaimCursor{ClaimKey: b.claimKey, ID: b.id}); p.last == nil || cursorLess(*p.last, c) {
			p.last = &c
		}
	}
	return p, nil
}

func cursorLess(a, b chimedb.ClaimCursor) bool {
	return a.ClaimKey < b.ClaimKey || a.ClaimKey == b.ClaimKey && a.ID < b.ID
}

// claimSQL is the pick of one scan of a claim, without its lock clause:
// the statement selectDueIn runs and explainClaim explains, so the plans
// the tests pin are those of the claim itself.
func (s *Store) claimSQL(limit int, now time.Time, where string, whereArgs []any, exclude *claimExclude) (string, []any) {
	sql := `SELECT * FROM ` + s.claimFrom() + ` WHERE status = ? AND claim_key <= ? AND run_at <= ? AND control <> ?`
	args := []any{models.JobPending, ClaimKeyUntil(now), DBTime(now), models.ControlStop}
	if where != "" {
		sql += " AND " + where
		args = append(args, whereArgs...)
	}
	if exclude != nil {
		ex, exArgs := exclude.sql()
		sql += ex
		args = append(args, exArgs...)
	}
	return sql + " ORDER BY claim_key, id LIMIT ?", append(args, limit)
}

// claimFrom names the jobs table for the claim's scans. On MySQL it forces
// idx_jobs_claim_order: left to itself MariaDB reads a floor's scan by ref
// on status alone (it prefers ref to a range of the same index), which
// starts at the first pending entry and walks every dead one the floor is
// there to skip; forced, it takes the range on all three columns.
func (s *Store) claimFrom() string {
	if s.dialect == MySQL {
		return "jobs FORCE INDEX (idx_jobs_claim_order)"
	}
	return "jobs"
}

// aboveFloor and atOrBelowFloor split the claim's order at a floor c.
// Each must stay a range on idx_jobs_claim_order, in the index's order
// and with no sort, on every database (TestClaimFloorUsesIndex), and the
// form that gives one differs: PostgreSQL and SQLite bound an index range
// by a row value, where they take an OR only as a filter; MariaDB builds
// its range on all three columns from the OR (with "claim_key <= ? AND
// (...)" it bounds only claim_key, and a drain's rows often share one).
// On a small table MariaDB may read the index from the start by ref on
// status instead, still in its order.
func (s *Store) aboveFloor(c *chimedb.ClaimCursor) (string, []any) {
	if s.dialect == MySQL {
		return "(claim_key > ? OR (claim_key = ? AND id > ?))", []any{c.ClaimKey, c.ClaimKey, c.ID}
	}
	return "(claim_key, id) > (?, ?)", []any{c.ClaimKey, c.ID}
}

func (s *Store) atOrBelowFloor(c *chimedb.ClaimCursor) (string, []any) {
	if s.dialect == MySQL {
		return "(claim_key < ? OR (claim_key = ? AND id <= ?))", []any{c.ClaimKey, c.ClaimKey, c.ID}
	}
	return "(claim_key, id) <= (?, ?)", []any{c.ClaimKey, c.ID}
}

func lastOf(rows []models.Job) *chimedb.ClaimCursor {
	if len(rows) == 0 {
		return nil
	}
	r := rows[len(rows)-1]
	return &chimedb.ClaimCursor{ClaimKey: r.ClaimKey, ID: r.ID}
}

// readSchedules reads name, concurrency, queue and required tags of the
// schedules of rows not read yet into names, forbid, queues and tags.
func readSchedules(tx *gorm.DB, rows []models.Job, names map[int64]string, forbid map[int64]bool, queues, tags map[int64]string) error {
	var ids []int64
	for _, r := range rows {
		if r.ScheduleID != nil {
			if _, ok := names[*r.ScheduleID]; !ok && !slices.Contains(ids, *r.ScheduleID) {
				ids = append(ids, *r.ScheduleID)
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	var scheds []models.Schedule
	if err := tx.Select("id, name, concurrency, queue, required_tags").Where("id IN ?", ids).Find(&scheds).Error; err != nil {
		return fmt.Errorf("read schedules of due jobs: %w", err)
	}
	for _, sc := range scheds {
		names[sc.ID] = sc.Name
		forbid[sc.ID] = sc.Concurrency == models.ConcurrencyForbid
		if sc.Queue != nil && *sc.Queue != "" {
			queues[sc.ID] = *sc.Queue
		}
		if sc.RequiredTags != nil && *sc.RequiredTags != "" {
			tags[sc.ID] = *sc.RequiredTags
		}
	}
	return nil
}

// lockForbid locks the schedules rows of the forbid schedules among rows,
// in id order. Without it two nodes claiming at the same instant could each
// see no active job of a forbid schedule and each start one of its two due
// jobs (SKIP LOCKED hands them different rows). It passes over a row
// another transaction holds and returns those schedules (held): the claim
// leaves their jobs for a later one. Waiting instead would hold the claim,
// and every row it picked, for as long as the holder: a fire's commit, or
// an admin's session left in a transaction, up to the server's lock wait
// timeout and again on each retry. Of two claims at one instant, the
// second so leaves the schedule's jobs to a claim after the first one's
// commit, which sees the job that one took. SQLite's single writer
// serializes claims already.
func (s *Store) lockForbid(tx *gorm.DB, rows []models.Job, forbid map[int64]bool) (held []int64, err error) {
	if !s.rowLocks() {
		return nil, nil
	}
	var ids []int64
	for _, r := range rows {
		if r.ScheduleID != nil && forbid[*r.ScheduleID] && !slices.Contains(ids, *r.ScheduleID) {
			ids = append(ids, *r.ScheduleID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	slices.Sort(ids)
	var locked []int64
	if err := tx.Raw(`SELECT id FROM schedules WHERE id IN ? ORDER BY id FOR UPDATE SKIP LOCKED`, ids).Scan(&locked).Error; err != nil {
		return nil, fmt.Errorf("lock forbid schedules: %w", err)
	}
	for _, id := range ids {
		if !slices.Contains(locked, id) {
			held = append(held, id)
		}
	}
	return held, nil
}

func pickedForbid(rows []models.Job, forbid map[int64]bool) bool {
	for _, r := range rows {
		if r.ScheduleID != nil && forbid[*r.ScheduleID] {
			return true
		}
	}
	return false
}

func pickedAny(rows []models.Job, schedules []int64) bool {
	for _, r := range rows {
		if r.ScheduleID != nil && slices.Contains(schedules, *r.ScheduleID) {
			return true
		}
	}
	return false
}

// WaitingJobs lists due pending jobs of p.ScheduleIDs: the jobs a forbid
// schedule holds back, so the engine can say once why they wait.
func (s *Store) WaitingJobs(ctx context.Context, p *chimedb.WaitingJobsParams) ([]chimedb.WaitingJob, error) {
	if len(p.ScheduleIDs) == 0 {
		return nil, nil
	}
	var out []chimedb.WaitingJob
	err := s.db.WithContext(ctx).Raw(`SELECT id, schedule_id FROM jobs
		WHERE status = ? AND claim_key <= ? AND run_at <= ? AND schedule_id IN ? ORDER BY claim_key, id LIMIT ?`,
		models.JobPending, ClaimKeyUntil(p.Now), DBTime(p.Now), p.ScheduleIDs, max(p.Limit, 1)).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("list jobs waiting on forbid schedules: %w", err)
	}
	return out, nil
}

// ExplainClaim returns the database's plan for the claim's SELECT, for
// benchmarks and tests that prove it uses idx_jobs_claim_order.
func (s *Store) ExplainClaim(ctx context.Context, now time.Time, limit int) (string, error) {
	return s.explainClaim(ctx, now, limit, "", nil)
}

// ExplainClaimAfter returns the plans of the two scans of a claim with a
// floor (chimedb.ClaimParams.After): the rows after it, and those up to it.
func (s *Store) ExplainClaimAfter(ctx context.Context, now time.Time, limit int, after chimedb.ClaimCursor) (above, below string, err error) {
	where, args := s.aboveFloor(&after)
	if above, err = s.explainClaim(ctx, now, limit, where, args); err != nil {
		return "", "", err
	}
	where, args = s.atOrBelowFloor(&after)
	below, err = s.explainClaim(ctx, now, limit, where, args)
	return above, below, err
}

func (s *Store) explainClaim(ctx context.Context, now time.Time, limit int, where string, whereArgs []any) (string, error) {
	sql, args := s.claimSQL(limit, now, where, whereArgs, nil)
	// In a transaction begun as the claim's, under its settings.
	var plan string
	err := s.InTx(claimContext(ctx), func(tx *gorm.DB) error {
		var err error
		plan, err = explainIn(tx, s.dialect, sql, args...)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("explain claim: %w", err)
	}
	return plan, nil
}
