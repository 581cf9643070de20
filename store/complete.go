package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// completeChunk bounds the ids of one UPDATE: each costs 13 placeholders,
// and a few more when it has a typed outcome.
const completeChunk = 250

// CompleteJobs writes a batch of outcomes in one transaction with one
// UPDATE per few hundred jobs (CASE id WHEN … per column), the way river's
// completer batches. Every row is guarded: it changes only while it is
// still queued, running or paused on p.NodeID, so a late writer cannot
// overwrite a newer state (a recovery, a cancel). It returns the ids whose
// outcome was written.
//
// The guard sits in the UPDATE's WHERE, so the rule costs one statement
// and the commit: when every row matched, every outcome was written. When
// some did not (one was canceled or recovered meanwhile), that transaction
// is rolled back and the batch is written again behind a locking SELECT
// that says exactly which rows are still ours: the job_logs line of an
// outcome (JobOutcome.Log) is written only if the outcome was, and so is
// its notice.
//
// p.Logs, the node's buffered lines, are written in the same transaction
// whatever becomes of the outcomes, after the outcomes' UPDATEs and before
// their own lines: one more INSERT in a batch that has lines, none in one
// that has none (a success writes no line). A line the database refuses
// is handled as InsertJobLogs does.
//
// Results and errors are made storable first (see Storable). When the
// database still refuses the batch for anything but a transient reason
// (see transient), the exact path also splits it until the refused rows
// are alone: the others are written, and a refused one is written with its
// status, no result, and an error saying why it could not be stored. A
// row that refuses even that is left as it is and logged. So one poison
// outcome never holds back the others, nor is retried forever.
func (s *Store) CompleteJobs(ctx context.Context, p *chimedb.CompleteJobsParams) ([]int64, error) {
	if len(p.Outcomes) == 0 {
		return nil, nil
	}
	outs := s.uniqueOutcomes(p.Outcomes)
	// The chunks go in id order, as each UPDATE takes its rows on MySQL
	// (by primary key): a batch of several chunks then locks its rows in
	// the order the node's heartbeat does (see HeartbeatJobs).
	chunks := outcomeChunks(slices.SortedFunc(slices.Values(outs), func(a, b chimedb.JobOutcome) int { return cmp.Compare(a.ID, b.ID) }))
	if applied, ok := s.completeAlone(ctx, p, outs, chunks); ok {
		s.completions.alone.Add(1)
		return applied, nil
	}
	s.completions.inTx.Add(1)
	var applied []int64
	err := s.InTx(ctx, func(tx *gorm.DB) error {
		applied = applied[:0]
		for _, chunk := range chunks {
			n, err := s.writeOutcomes(tx, p.NodeID, chunk)
			if err != nil {
				return err
			}
			if n != len(chunk) {
				return errNotAllGuarded
			}
			if err := s.insertOutcomeNotices(tx, chunk, nil); err != nil {
				return err
			}
			for _, o := range chunk {
				applied = append(applied, o.ID)
			}
		}
		// A run's job that ended decides its run's next steps here, in
		// the transaction that records the end (a batch of no run's jobs
		// costs nothing more).
		if err := s.advanceRunsOf(tx, outs, nil, DBTime(time.Now())); err != nil {
			return err
		}
		// Every outcome was written: all the lines go in, the node's
		// first, last in the transaction (one INSERT where they fit).
		return s.insertJobLogs(tx, withOutcomeLogs(p.Logs, outs, nil))
	})
	var refused []refusedOutcome
	var refusedLogs []refusedLog
	if err != nil && (errors.Is(err, errNotAllGuarded) || !transient(err)) {
		err = s.InTx(ctx, func(tx *gorm.DB) error {
			applied, refused, refusedLogs = applied[:0], refused[:0], refusedLogs[:0]
			for _, chunk := range chunks {
				ids, err := s.completeLocked(tx, p.NodeID, chunk, &refused)
				if err != nil {
					return err
				}
				applied = append(applied, ids...)
			}
			written := make(map[int64]bool, len(applied))
			for _, id := range applied {
				written[id] = true
			}
			// A run that cannot be decided here must not hold back the
			// outcomes: AdvanceRuns decides it later, or fails it with
			// the reason. Nothing of a failed decision may stay, on any
			// dialect: a step's job kept without its ledger entry would
			// be written again.
			if err := savepointAlways(tx, func() error { return s.advanceRunsOf(tx, outs, written, DBTime(time.Now())) }); err != nil {
				if transient(err) {
					return err
				}
				s.log.WithError(err).Error("could not decide the workflow runs of these outcomes; the reconciler retries")
			}
			for _, c := range logChunks(s.storableLogs(withOutcomeLogs(p.Logs, outs, written))) {
				if err := s.insertContained(tx, c, &refusedLogs); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err != nil {
		return nil, fmt.Errorf("complete %d jobs on node %s: %w", len(p.Outcomes), p.NodeID, err)
	}
	s.reportRefusedLogs(refusedLogs)
	s.reportRefusedOutcomes(refused)
	return inBatchOrder(outs, applied), nil
}

// inBatchOrder returns the ids of applied in the order of outs.
func inBatchOrder(outs []chimedb.JobOutcome, applied []int64) []int64 {
	written := make(map[int64]bool, len(applied))
	for _, id := range applied {
		written[id] = true
	}
	applied = applied[:0]
	for _, o := range outs {
		if written[o.ID] {
			applied = append(applied, o.ID)
		}
	}
	return applied
}

// uniqueOutcomes keeps one outcome per row, cut to what the columns hold:
// of two for one id (a job claimed twice) the first is written, the other
// reported as not applied.
func (s *Store) uniqueOutcomes(in []chimedb.JobOutcome) []chimedb.JobOutcome {
	outs := make([]chimedb.JobOutcome, 0, len(in))
	seen := make(map[int64]bool, len(in))
	for _, o := range in {
		if !seen[o.ID] {
			seen[o.ID] = true
			o.Result = s.storablePtr(o.Result, chimedb.MaxResultBytes)
			o.Error = s.storablePtr(o.Error, chimedb.MaxErrorBytes)
			outs = append(outs, o)
		}
	}
	return outs
}

// reportRefusedOutcomes logs the outcomes the database refused.
func (s *Store) reportRefusedOutcomes(refused []refusedOutcome) {
	for _, r := range refused {
		l := s.log.WithField("job_id", r.id).WithError(r.err)
		if r.placeholder {
			l.Warn("the database refused this job's outcome; wrote its status with a placeholder error instead")
		} else {
			l.Error("the database refused this job's outcome and its placeholder; the job row is left as it was")
		}
	}
}

// withOutcomeLogs is logs followed by the lines of the outcomes in outs
// that were written (all of them when written is nil).
func withOutcomeLogs(logs []models.JobLog, outs []chimedb.JobOutcome, written map[int64]bool) []models.JobLog {
	all := logs
	for i := range outs {
		o := &outs[i]
		if o.Log == nil || (written != nil && !written[o.ID]) {
			continue
		}
		if len(all) == len(logs) {
			all = append(make([]models.JobLog, 0, len(logs)+len(outs)), logs...)
		}
		l := *o.Log
		l.JobID = o.ID
		all = append(all, l)
	}
	return all
}

// outcomeChunks splits outs into UPDATEs of at most completeChunk rows and
// about stmtTextBudget bytes of results and errors.
func outcomeChunks(outs []chimedb.JobOutcome) [][]chimedb.JobOutcome {
	var chunks [][]chimedb.JobOutcome
	start, size := 0, 0
	for i, o := range outs {
		n := textLen(o.Result) + textLen(o.Error)
		if i > start && (i-start == completeChunk || size+n > stmtTextBudget) {
			chunks = append(chunks, outs[start:i])
			start, size = i, 0
		}
		size += n
	}
	if len(outs) == 0 {
		return nil
	}
	return append(chunks, outs[start:])
}

func textLen(s *string) int {
	if s == nil {
		return 0
	}
	return len(*s)
}

// errNotAllGuarded rolls back a completion whose guard left some row out.
var errNotAllGuarded = errors.New("some jobs are no longer active on this node")

// refusedOutcome is a row whose outcome the database refused.
type refusedOutcome struct {
	id          int64
	err         error
	placeholder bool // written with a placeholder error instead
}

// completeLocked locks the rows of outs still active on nodeID, then
// writes their outcomes (see writeContained); it returns the ids written.
func (s *Store) completeLocked(tx *gorm.DB, nodeID string, outs []chimedb.JobOutcome, refused *[]refusedOutcome) ([]int64, error) {
	ids := make([]int64, len(outs))
	for i, o := range outs {
		ids[i] = o.ID
	}
	var live []int64
	if err := tx.Raw(`SELECT id FROM `+s.jobsByID()+` WHERE id IN ? AND node_id = ? AND status IN ?`+s.lockClause(),
		ids, nodeID, activeStatuses).Scan(&live).Error; err != nil {
		return nil, fmt.Errorf("select jobs to complete: %w", err)
	}
	if len(live) == 0 {
		return nil, nil
	}
	keep := make(map[int64]bool, len(live))
	for _, id := range live {
		keep[id] = true
	}
	mine := make([]chimedb.JobOutcome, 0, len(live))
	for _, o := range outs {
		if keep[o.ID] {
			mine = append(mine, o)
		}
	}
	n := len(*refused)
	if err := s.writeContained(tx, nodeID, mine, refused); err != nil {
		return nil, err
	}
	written := live
	if skipped := (*refused)[n:]; len(skipped) > 0 {
		written = make([]int64, 0, len(live))
		gone := make(map[int64]bool, len(skipped))
		for _, r := range skipped {
			gone[r.id] = !r.placeholder
		}
		for _, id := range live {
			if !gone[id] {
				written = append(written, id)
			}
		}
	}
	// Only written outcomes get a notice. On this slow path a notice the
	// database refuses (the statement alone is rolled back) costs that
	// notice, logged, never the outcomes: they must not be retried forever.
	sent := make(map[int64]bool, len(written))
	for _, id := range written {
		sent[id] = true
	}
	if err := s.savepoint(tx, func() error { return s.insertOutcomeNotices(tx, outs, sent) }); err != nil {
		if transient(err) {
			return nil, err
		}
		s.log.WithError(err).WithField("jobs", written).Error("could not record the completion notices of these jobs")
	}
	return written, nil
}

// writeContained writes outs, which are locked and active on nodeID. When
// the database refuses them for a reason that is not transient, a
// statement's failure having rolled back only that statement (on
// PostgreSQL, which aborts the whole transaction instead, each write runs
// under a savepoint: see savepoint), it writes
// each half on its own, down to single rows: a single refused row is
// written with a placeholder instead, or left out. A transient error ends
// the whole write, to be retried.
func (s *Store) writeContained(tx *gorm.DB, nodeID string, outs []chimedb.JobOutcome, refused *[]refusedOutcome) error {
	err := s.savepoint(tx, func() error {
		_, err := s.writeOutcomes(tx, nodeID, outs)
		return err
	})
	if err == nil || transient(err) {
		return err
	}
	if len(outs) > 1 {
		half := len(outs) / 2
		if err := s.writeContained(tx, nodeID, outs[:half], refused); err != nil {
			return err
		}
		return s.writeContained(tx, nodeID, outs[half:], refused)
	}
	o := outs[0]
	msg := s.storable("chime: outcome could not be stored: "+err.Error(), chimedb.MaxErrorBytes)
	o.Result, o.Error = nil, &msg
	perr := s.savepoint(tx, func() error {
		_, err := s.writeOutcomes(tx, nodeID, []chimedb.JobOutcome{o})
		return err
	})
	if perr != nil && transient(perr) {
		return perr
	}
	*refused = append(*refused, refusedOutcome{id: o.ID, err: err, placeholder: perr == nil})
	return nil
}

// writeOutcomes writes outs with one guarded UPDATE and returns how many
// rows it changed. Every outcome changes status, so a changed row is a
// written outcome.
//
// A column whose value is the same for every row of the batch is set once
// (col = ?) rather than through CASE id WHEN …: the server evaluates a CASE
// for each row it updates, one WHEN after another, so n rows cost n²/2
// comparisons per column. In the common batch (all succeeded, same result,
// no error) only finished_at still needs a CASE.
func (s *Store) writeOutcomes(tx *gorm.DB, nodeID string, outs []chimedb.JobOutcome) (int, error) {
	q, args := s.outcomesSQL(nodeID, outs)
	res := tx.Exec(q, args...)
	if res.Error != nil {
		return 0, fmt.Errorf("write job outcomes: %w", res.Error)
	}
	return int(res.RowsAffected), nil
}

// outcomesSQL is the guarded UPDATE of writeOutcomes.
func (s *Store) outcomesSQL(nodeID string, outs []chimedb.JobOutcome) (string, []any) {
	var b strings.Builder
	args := make([]any, 0, 3*len(outs)+16)
	ids := make([]int64, 0, len(outs))
	for _, o := range outs {
		ids = append(ids, o.ID)
	}
	sep := ""
	set := func(col string, val func(o *chimedb.JobOutcome) any) {
		b.WriteString(sep)
		sep = ", "
		if v, ok := uniform(outs, val); ok {
			if e, isExpr := v.(clause.Expr); isExpr {
				fmt.Fprintf(&b, "%s = %s", col, e.SQL)
				return
			}
			fmt.Fprintf(&b, "%s = ?", col)
			args = append(args, v)
			return
		}
		fmt.Fprintf(&b, "%s = CASE id", col)
		// PostgreSQL types a bare placeholder in THEN as text.
		then := " WHEN ? THEN ?"
		if s.dialect == Postgres && (col == "finished_at" || col == "run_at") {
			then = " WHEN ? THEN CAST(? AS TIMESTAMPTZ)"
		}
		for i := range outs {
			b.WriteString(then)
			args = append(args, outs[i].ID, val(&outs[i]))
		}
		b.WriteString(" END")
	}
	b.WriteString("UPDATE " + s.jobsByID() + " SET ")
	set("status", func(o *chimedb.JobOutcome) any { return string(o.Status) })
	set("finished_at", func(o *chimedb.JobOutcome) any {
		if o.Status == models.JobPending {
			return nil
		}
		return DBTime(o.FinishedAt)
	})
	// A retry is due at RunAt; a final state keeps its run_at. A batch
	// without a retry leaves run_at out of its SET: on PostgreSQL a column
	// named there fires chime_jobs_priority (BEFORE UPDATE OF run_at) for
	// every row, whatever the value, to recompute an unchanged claim_key.
	if slices.ContainsFunc(outs, func(o chimedb.JobOutcome) bool { return o.Status == models.JobPending }) {
		set("run_at", func(o *chimedb.JobOutcome) any {
			if o.Status == models.JobPending {
				return DBTime(o.RunAt)
			}
			return gorm.Expr("run_at")
		})
	}
	set("result", func(o *chimedb.JobOutcome) any { return o.Result })
	set("error", func(o *chimedb.JobOutcome) any { return o.Error })
	// A retried job leaves the node so that any node may claim it.
	set("node_id", func(o *chimedb.JobOutcome) any {
		if o.Status == models.JobPending {
			return ""
		}
		return nodeID
	})
	args = s.writeTypedOutcomes(&b, args, outs)
	b.WriteString(", control = '' WHERE id IN ? AND node_id = ? AND status IN ?")
	args = append(args, ids, nodeID, activeStatuses)
	return b.String(), args
}

// uniform returns the value val gives every outcome of outs, when it gives
// them all the same one. Values are what writeOutcomes binds: nil, a
// string, a *string (compared by what it points to), a time.Time or a
// gorm expression without arguments.
func uniform(outs []chimedb.JobOutcome, val func(o *chimedb.JobOutcome) any) (any, bool) {
	first := val(&outs[0])
	for i := 1; i < len(outs); i++ {
		if !sameValue(first, val(&outs[i])) {
			return nil, false
		}
	}
	return first, true
}

func sameValue(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case *string:
		y, ok := b.(*string)
		if !ok || (x == nil) != (y == nil) {
			return false
		}
		return x == nil || *x == *y
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	case clause.Expr:
		y, ok := b.(clause.Expr)
		return ok && x.SQL == y.SQL && len(x.Vars) == 0 && len(y.Vars) == 0
	}
	return false
}

// writeTypedOutcomes adds the SET clauses of jobs.outcome to an UPDATE of
// writeOutcomes, and for snoozes gives the attempt back (as a recovery
// does, see recoverCutOff) and counts the snooze. A batch without typed
// outcomes, the common case, costs one constant clause and no placeholder.
func (s *Store) writeTypedOutcomes(b *strings.Builder, args []any, outs []chimedb.JobOutcome) []any {
	var typed, snoozed, handedBack []int64
	for i := range outs {
		o := &outs[i]
		if o.HandBack && o.Status == models.JobPending {
			handedBack = append(handedBack, o.ID)
		}
		switch {
		case o.Outcome == models.OutcomeSnoozed && o.Status == models.JobPending:
			snoozed = append(snoozed, o.ID)
			typed = append(typed, o.ID)
		case o.Outcome != models.OutcomeNone && o.Outcome != models.OutcomeSnoozed:
			typed = append(typed, o.ID)
		}
	}
	if len(handedBack) > 0 {
		b.WriteString(", attempt = CASE WHEN id IN ? AND attempt > 0 THEN attempt - 1 ELSE attempt END")
		args = append(args, handedBack)
	}
	if len(typed) == 0 {
		b.WriteString(", outcome = ''")
		return args
	}
	b.WriteString(", outcome = CASE id")
	for i := range outs {
		if slices.Contains(typed, outs[i].ID) {
			b.WriteString(" WHEN ? THEN ?")
			args = append(args, outs[i].ID, string(outs[i].Outcome))
		}
	}
	b.WriteString(" ELSE '' END")
	if len(snoozed) > 0 {
		b.WriteString(", attempt = CASE WHEN id IN ? AND attempt > 0 THEN attempt - 1 ELSE attempt END" +
			", snoozes = CASE WHEN id IN ? THEN snoozes + 1 ELSE snoozes END")
		args = append(args, snoozed, snoozed)
	}
	return args
}

// queryIDs runs q on the pool and returns the ids of its rows.
func (s *Store) queryIDs(ctx context.Context, q string, args ...any) ([]int64, error) {
	rows, err := s.sqlDB.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// pgFinalOutcomesSQL is outcomesSQL on PostgreSQL for a batch of final
// outcomes only (no retry, snooze or hand-back), written from arrays: one
// array per column that varies, joined to the rows by id. outcomesSQL's
// CASE id WHEN … has a branch per outcome that every row walks (about a
// quarter of the statement's CPU at 1,000 rows: the backend's CPU time
// over 10 completions of 1,000 rows, 0.67–0.79 s against 0.49–0.59 s), and
// its text, with a placeholder per id, changes with the batch's size, so
// each size was prepared and planned anew. The ids are given twice: as
// id = ANY(…) they keep the primary key's index scan whatever the
// planner thinks of the unnest. The outs are unique by id (see
// uniqueOutcomes), so each row joins one element. "" when the batch is
// not all final: outcomesSQL writes it.
func pgFinalOutcomesSQL(nodeID string, outs []chimedb.JobOutcome) (string, []any) {
	n := len(outs)
	ids := make([]int64, n)
	statuses, outcomes := make([]string, n), make([]string, n)
	finished := make([]time.Time, n)
	results, errs := make([]*string, n), make([]*string, n)
	for i := range outs {
		o := &outs[i]
		if !o.Status.Finished() || o.HandBack {
			return "", nil
		}
		ids[i], statuses[i], finished[i], results[i], errs[i] = o.ID, string(o.Status), DBTime(o.FinishedAt), o.Result, o.Error
		// As writeTypedOutcomes: a snooze is only a snooze with a retry.
		if o.Outcome != models.OutcomeNone && o.Outcome != models.OutcomeSnoozed {
			outcomes[i] = string(o.Outcome)
		}
	}
	q := "UPDATE jobs SET status = v.st, finished_at = v.fin, result = v.res, error = v.err, node_id = ?, outcome = v.oc, control = ''" +
		" FROM unnest(CAST(? AS BIGINT[]), CAST(? AS TEXT[]), CAST(? AS TIMESTAMPTZ[]), CAST(? AS TEXT[]), CAST(? AS TEXT[]), CAST(? AS TEXT[]))" +
		" AS v(id, st, fin, res, err, oc)" +
		" WHERE jobs.id = ANY(CAST(? AS BIGINT[])) AND jobs.id = v.id AND jobs.node_id = ? AND jobs.status IN (?, ?, ?)"
	return q, []any{nodeID, ids, statuses, finished, results, errs, outcomes, ids, nodeID,
		string(models.JobQueued), string(models.JobRunning), string(models.JobPaused)}
}

// CompletionPaths counts the completion batches of this store written as
// one statement (completeAlone) and those written in a transaction.
func (s *Store) CompletionPaths() (oneStatement, transaction int64) {
	return s.completions.alone.Load(), s.completions.inTx.Load()
}

// completeAlone writes, on PostgreSQL, a batch that is its UPDATE and
// nothing else (one chunk; no log line, notice or workflow run to write
// with it) as that one statement, without BEGIN and COMMIT: its implicit
// transaction is the whole of what CompleteJobs's would hold, and RETURNING
// says which rows the guard let through, which are the outcomes written.
// false when the batch needs the transaction, or the statement failed
// (and wrote nothing): CompleteJobs then writes it as before.
func (s *Store) completeAlone(ctx context.Context, p *chimedb.CompleteJobsParams, outs []chimedb.JobOutcome, chunks [][]chimedb.JobOutcome) ([]int64, bool) {
	if s.dialect != Postgres || len(chunks) != 1 || len(p.Logs) > 0 {
		return nil, false
	}
	for _, o := range chunks[0] {
		if o.Log != nil || (o.Notice != nil && o.Status != models.JobPending) || (o.RunID != 0 && o.Status.Finished()) {
			return nil, false
		}
	}
	var applied []int64
	var err error
	if q, args := pgFinalOutcomesSQL(p.NodeID, chunks[0]); q != "" {
		// Straight to the driver: GORM would expand the arrays into lists.
		applied, err = s.queryIDs(ctx, q+" RETURNING jobs.id", args...)
	} else {
		q, args = s.outcomesSQL(p.NodeID, chunks[0])
		err = s.db.WithContext(ctx).Raw(q+" RETURNING id", args...).Scan(&applied).Error
	}
	if err != nil {
		s.log.WithError(err).Debug("one-statement completion failed; completing in a transaction")
		return nil, false
	}
	// In the batch's order, as the transaction returns them.
	return inBatchOrder(outs, applied), true
}
