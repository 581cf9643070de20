package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// WriteFires is the schedule engine's hot path: every statement is raw SQL
// on the transaction's connection (no GORM statement building), and the
// number of statements does not grow with the batch: the check (the
// schedules, a plain read of those another transaction held when there
// are any, the trigger rows; see lockFireRows), the jobs INSERT (two when
// the batch mixes on-time and catch-up fires), the trigger advance (see
// advanceTriggers: at most groupedTriggerMax UPDATEs and one upsert) and
// the completion UPDATE. A batch
// that hands jobs off to this node's task engine (p.HandoffSlots) adds
// three: the definitions' read, the INSERT of the handed-off jobs and
// their read back (two on PostgreSQL, whose INSERT returns the rows it
// wrote); the claim each of those jobs no longer needs costs more
// (four statements and a commit, after this commit). p.BeforeCommit, when
// set, runs last inside the transaction: the schedule engine's fire-ahead
// waits there for the batch's instant.
//
// The check is optimistic concurrency on the trigger row: a schedule's
// jobs, trigger and completion are written only if the row still holds the
// FromLastFireAt its fires were planned from. Two writers that planned from
// the same row (a leader whose commit stalled past its lease, and the node
// that took over meanwhile) may each count the same missed fires up to a
// different instant, so the unique key on (schedule_id, scheduled_at) would
// let both catch-up jobs in; with the check, whichever commits second
// writes nothing for that schedule and learns the row's state from Stale.
func (s *Store) WriteFires(ctx context.Context, p *chimedb.WriteFiresParams) (*chimedb.WriteFiresResult, error) {
	var res *chimedb.WriteFiresResult
	err := s.InTx(ctx, func(tx *gorm.DB) error {
		res = &chimedb.WriteFiresResult{}
		if p.Fence != nil {
			if err := s.fence(tx, p.Fence); err != nil {
				return err
			}
		}
		seen, err := s.lockFireRows(tx, p)
		if err != nil {
			return err
		}
		ok := classifyFires(p, seen, res)
		var normal, catchUp, runs []chimedb.FireJob
		for _, j := range p.Jobs {
			switch {
			case !ok[j.ScheduleID]:
			case j.WorkflowID != 0:
				runs = append(runs, j)
			case j.CatchUp:
				catchUp = append(catchUp, j)
			default:
				normal = append(normal, j)
			}
		}
		normal, handoff, running, defs, err := s.pickHandoff(tx, p, normal, seen)
		if err != nil {
			return err
		}
		// Two statements so the counts per kind are exact: a multi-row
		// insert reports only how many rows it added in total.
		if res.Inserted, err = s.insertJobs(tx, normal, seen, p.Now, "", 0); err != nil {
			return err
		}
		if len(handoff) > 0 {
			var got map[handedKey]int64
			n := 0
			if s.dialect == Postgres && running >= len(handoff) {
				// RETURNING says which rows this INSERT wrote: no read back.
				// (A backlog's queued rows take insertJobs's VALUES form.)
				got, err = insertJobsReturning(tx, handoff, seen, p.Now, p.HandoffNode)
				n = len(got)
			} else if n, err = s.insertJobs(tx, handoff, seen, p.Now, p.HandoffNode, running); err == nil {
				got, err = s.readHandedOff(tx, p, handoff)
			}
			if err != nil {
				return err
			}
			res.Inserted += n
			res.HandedOff = handedOffJobs(p, handoff, seen, defs, got, running)
		}
		normal = append(normal, handoff...)
		if res.InsertedCatchUp, err = s.insertJobs(tx, catchUp, seen, p.Now, "", 0); err != nil {
			return err
		}
		if err := s.insertRuns(tx, runs, seen, p.Now, res); err != nil {
			return err
		}
		res.Duplicates = len(normal) + len(catchUp) + len(runs) - res.Inserted - res.InsertedCatchUp
		var trigs []chimedb.TriggerRow
		for _, t := range p.Triggers {
			if ok[t.ScheduleID] {
				trigs = append(trigs, t)
			}
		}
		if err := s.advanceTriggers(tx, trigs, p.Now); err != nil {
			return fmt.Errorf("advance time triggers: %w", err)
		}
		if err := s.completeSchedules(tx, p, ok); err != nil {
			return err
		}
		if p.BeforeCommit != nil {
			return p.BeforeCommit(tx.Statement.Context)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("write %d fires: %w", len(p.Jobs), err)
	}
	return res, nil
}

// classifyFires sorts the batch's schedules by what their locked rows say
// into res (busy, inactive, stale) and returns the rest: active, and the
// trigger row is where the writer planned from.
func classifyFires(p *chimedb.WriteFiresParams, seen map[int64]fireRow, res *chimedb.WriteFiresResult) map[int64]bool {
	ok := make(map[int64]bool, len(seen))
	for _, t := range p.Triggers {
		r, active := seen[t.ScheduleID]
		switch {
		case r.busy:
			res.Busy = append(res.Busy, t.ScheduleID)
		case !active:
			res.Inactive = append(res.Inactive, t.ScheduleID)
		case r.exists && !sameTime(r.row.LastFireAt, t.FromLastFireAt):
			res.Stale = append(res.Stale, r.row)
		default:
			ok[t.ScheduleID] = true
		}
	}
	return ok
}

// completeSchedules marks the batch's schedules with no fires left
// completed, those of ok only, as chime's own change in the audit log.
func (s *Store) completeSchedules(tx *gorm.DB, p *chimedb.WriteFiresParams, ok map[int64]bool) error {
	var done []int64
	for _, id := range p.Complete {
		if ok[id] {
			done = append(done, id)
		}
	}
	if len(done) == 0 {
		return nil
	}
	if err := s.markAudit(tx, chimedb.EngineActor); err != nil {
		return err
	}
	for chunk := range slices.Chunk(done, scheduleInChunk) {
		q := "UPDATE schedules SET status = ?, status_reason = ?, updated_at = ? WHERE status = ? AND id IN (" + idList(chunk) + ")"
		if _, err := rawExec(tx, q, string(models.ScheduleCompleted), "no fires left", DBTime(p.Now), string(models.ScheduleActive)); err != nil {
			return fmt.Errorf("complete schedules: %w", err)
		}
	}
	return s.unmarkAudit(tx)
}

// fireRow is what lockFireRows read of one active schedule.
type fireRow struct {
	busy     bool               // another transaction holds the schedule's row: nothing else is set
	exists   bool               // it has a time_triggers row
	row      chimedb.TriggerRow // that row, when it exists
	priority int                // its jobs' priority: its own, else its definition's
	name     string             // the schedule's name, for jobs handed off
	forbid   bool               // concurrency = 'forbid': its jobs are never handed off
	queue    bool               // it overrides its definition's queue: its jobs are never handed off
	tags     bool               // it requires node tags: its jobs are never handed off
}

// lockFireRows reads, inside the transaction, which of the batch's
// schedules are still active (so a pause or delete that the last sync
// missed still stops the fire) and their trigger rows, for the check
// against FromLastFireAt. On MySQL and PostgreSQL the read locks both rows
// until commit, so no other writer can move the trigger between the check
// and the write; SQLite's transactions are already exclusive (BEGIN
// IMMEDIATE). Every schedule of the batch has a trigger row in p.Triggers
// (the engine sends one per schedule it handles), so jobs and completions
// are checked through it. The same read gives each schedule's effective
// priority for its jobs, so writing it costs no statement; the definition
// is read by a subquery, which neither MySQL's FOR UPDATE nor PostgreSQL's
// FOR UPDATE OF s locks.
//
// The schedules are locked with SKIP LOCKED: a row another transaction
// holds (an admin's edit not committed yet, a client left in a
// transaction) is passed over rather than waited for, so one held schedule
// does not hold up a herd's fires for the server's lock wait timeout, time
// after time. A plain read then tells the active ones among those passed
// over (busy) from the others. The trigger rows are locked in a
// statement of their own and waited for: on MySQL SKIP LOCKED in an outer
// join would pass over a held trigger row and return its schedule as if
// it had none.
func (s *Store) lockFireRows(tx *gorm.DB, p *chimedb.WriteFiresParams) (map[int64]fireRow, error) {
	ids := make([]int64, 0, len(p.Triggers))
	for _, t := range p.Triggers {
		ids = append(ids, t.ScheduleID)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	out := make(map[int64]fireRow, len(ids))
	for chunk := range slices.Chunk(ids, scheduleInChunk) {
		if err := s.lockFireChunk(tx, chunk, out); err != nil {
			return nil, fmt.Errorf("check schedules and triggers: %w", err)
		}
	}
	return out, nil
}

func (s *Store) lockFireChunk(tx *gorm.DB, chunk []int64, out map[int64]fireRow) error {
	ctx, conn := tx.Statement.Context, tx.Statement.ConnPool
	active := string(models.ScheduleActive)
	// On MySQL a locking read locks every row it reads, matching or not,
	// and waits for those another transaction holds: a read of the batch's
	// rows planned as a scan (MariaDB plans an IN list of 500 ids on
	// time_triggers so) waits for the batch beside it, which fire-ahead
	// holds open until its instant. Both reads are pinned to the index of
	// their ids.
	sched, trig := "schedules s", "time_triggers"
	lock, tlock := "", ""
	switch s.dialect {
	case MySQL:
		sched, trig = "schedules s FORCE INDEX (PRIMARY)", "time_triggers FORCE INDEX (uq_time_triggers_schedule)"
		lock, tlock = " FOR UPDATE SKIP LOCKED", " FOR UPDATE"
	case Postgres:
		lock, tlock = " FOR UPDATE OF s SKIP LOCKED", " FOR UPDATE"
	}
	in, inArgs := s.idIn("s.id", chunk)
	rows, err := conn.QueryContext(ctx,
		"SELECT s.id, s.name, s.concurrency, COALESCE(s.priority, (SELECT d.priority FROM job_definitions d WHERE d.id = s.job_definition_id)), s.queue, s.required_tags"+
			" FROM "+sched+" WHERE s.status = ? AND "+in+" ORDER BY s.id"+lock, append([]any{active}, inArgs...)...)
	if err != nil {
		return err
	}
	var locked []int64
	for rows.Next() {
		var (
			id                      int64
			name, conc, queue, tags sql.NullString
			prio                    sql.NullInt64
		)
		if err := rows.Scan(&id, &name, &conc, &prio, &queue, &tags); err != nil {
			_ = rows.Close()
			return err
		}
		r := fireRow{priority: models.PriorityDefault, name: name.String, forbid: conc.String == string(models.ConcurrencyForbid),
			queue: queue.String != "", tags: tags.String != ""}
		if prio.Valid {
			r.priority = int(prio.Int64)
		}
		out[id] = r
		locked = append(locked, id)
	}
	if err := closeRows(rows); err != nil {
		return err
	}
	if len(locked) < len(chunk) && s.dialect != SQLite {
		if err := s.markBusy(tx, chunk, out); err != nil {
			return err
		}
	}
	if len(locked) == 0 {
		return nil
	}
	return s.readFireTriggers(tx, trig, tlock, locked, out)
}

// readFireTriggers reads (and, but on SQLite, locks: tlock) the trigger
// rows of the schedules lockFireChunk locked into out.
func (s *Store) readFireTriggers(tx *gorm.DB, trig, tlock string, locked []int64, out map[int64]fireRow) error {
	in, args := s.idIn("schedule_id", locked)
	rows, err := tx.Statement.ConnPool.QueryContext(tx.Statement.Context,
		"SELECT schedule_id, next_fire_at, last_fire_at, fired_count, remaining_count, misfired_count FROM "+trig+
			" WHERE "+in+" ORDER BY schedule_id"+tlock, args...)
	if err != nil {
		return err
	}
	for rows.Next() {
		var (
			id                 int64
			fired, missed, rem sql.NullInt64
			next, last         sql.NullTime
		)
		if err := rows.Scan(&id, &next, &last, &fired, &rem, &missed); err != nil {
			_ = rows.Close()
			return err
		}
		r := out[id]
		r.exists = true
		r.row = chimedb.TriggerRow{ScheduleID: id, NextFireAt: nullTime(next), LastFireAt: nullTime(last), FiredCount: fired.Int64, MisfiredCount: missed.Int64}
		if rem.Valid {
			v := rem.Int64
			r.row.RemainingCount = &v
		}
		out[id] = r
	}
	return closeRows(rows)
}

// markBusy tells, by a plain read, which of the chunk's schedules the
// locking read passed over are active: their rows were held.
func (s *Store) markBusy(tx *gorm.DB, chunk []int64, out map[int64]fireRow) error {
	var rest []int64
	for _, id := range chunk {
		if _, ok := out[id]; !ok {
			rest = append(rest, id)
		}
	}
	in, args := s.idIn("id", rest)
	rows, err := tx.Statement.ConnPool.QueryContext(tx.Statement.Context,
		"SELECT id FROM schedules WHERE status = ? AND "+in, append([]any{string(models.ScheduleActive)}, args...)...)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			_ = rows.Close()
			return err
		}
		out[id] = fireRow{busy: true}
	}
	return closeRows(rows)
}

func closeRows(rows *sql.Rows) error {
	if err := rows.Close(); err != nil {
		return err
	}
	return rows.Err()
}

func nullTime(t sql.NullTime) *time.Time {
	if !t.Valid {
		return nil
	}
	v := t.Time.UTC()
	return &v
}

// sameTime compares two instants as the database stores them (UTC,
// microseconds); nil is NULL.
func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return DBTime(*a).Equal(DBTime(*b))
}

// idIn is the condition "col is one of ids" of a fire's statements, and
// its arguments. On PostgreSQL it is col = ANY(?) with the ids as one array
// parameter: the statement's text is then the same for every batch, so
// pgx's statement cache prepares it once per connection and the server
// neither parses a list of up to 500 literals nor plans the statement
// afresh each time (a literal list made every batch's text new: a Parse
// round trip and a custom plan each). Elsewhere a literal IN list, which
// MySQL's range optimizer and SQLite take as they always did.
func (s *Store) idIn(col string, ids []int64) (string, []any) {
	if s.dialect == Postgres {
		return col + " = ANY(CAST(? AS BIGINT[]))", []any{ids}
	}
	return col + " IN (" + idList(ids) + ")", nil
}

// idList renders ids as a literal IN list. They are int64s, so the literal
// is safe, and the statement needs no placeholder per id.
func idList(ids []int64) string {
	b := make([]byte, 0, len(ids)*8)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(b)
}

// pickHandoff splits the batch's on-time jobs into those written pending
// and those handed off to p.HandoffNode (see chimedb.WriteFiresParams.HandoffNode):
// the first running of handoff are written running, the rest queued
// (p.HandoffQueued).
// It reads the definitions of the batch's jobs, one statement, only when
// there are slots: their task types decide which jobs may be handed off,
// and the handed-off jobs carry them to the task engine.
func (s *Store) pickHandoff(tx *gorm.DB, p *chimedb.WriteFiresParams, normal []chimedb.FireJob, seen map[int64]fireRow) (
	pending, handoff []chimedb.FireJob, running int, defs map[int64]*models.JobDefinition, err error) {
	slots, queued := max(p.HandoffSlots, 0), max(p.HandoffQueued, 0)
	if p.HandoffNode == "" || slots+queued <= 0 || len(p.HandoffKinds) == 0 || len(normal) == 0 {
		return normal, nil, 0, nil, nil
	}
	var ids []int64
	for _, j := range normal {
		if !seen[j.ScheduleID].forbid && !slices.Contains(ids, j.JobDefinitionID) {
			ids = append(ids, j.JobDefinitionID)
		}
	}
	if len(ids) == 0 {
		return normal, nil, 0, nil, nil
	}
	rows, err := definitionsByID(tx, ids)
	if err != nil {
		return nil, nil, 0, nil, fmt.Errorf("read definitions of jobs to hand off: %w", err)
	}
	defs = make(map[int64]*models.JobDefinition, len(rows))
	for i := range rows {
		defs[rows[i].ID] = &rows[i]
	}
	free, err := defaultQueueFree(tx)
	if err != nil {
		return nil, nil, 0, nil, err
	}
	pending = make([]chimedb.FireJob, 0, len(normal))
	for _, j := range normal {
		d := defs[j.JobDefinitionID]
		// An unreadable definition's job is written pending: the claim
		// fails it with the reason. A job a limit may hold, or that
		// requires node tags, is written pending too: only the claim
		// takes limits and placement (see limits.go, placement.go).
		limited := !free || d == nil || d.MaxRunning != nil || (d.Queue != "" && d.Queue != models.DefaultQueue) || seen[j.ScheduleID].queue ||
			d.RequiredTags != "" || seen[j.ScheduleID].tags || d.Broadcast || d.RateLimit != nil
		if len(handoff) < slots+queued && d != nil && d.Unreadable == "" && !seen[j.ScheduleID].forbid && !limited && slices.Contains(p.HandoffKinds, d.TaskType) {
			handoff = append(handoff, j)
			continue
		}
		pending = append(pending, j)
	}
	return pending, handoff, min(len(handoff), slots), defs, nil
}

// handedKey names a fire by its schedule and instant, as the unique key
// uq_jobs_schedule_fire does.
type handedKey struct {
	schedule int64
	at       time.Time
}

// readHandedOff reads back the ids of the rows the handed-off jobs became,
// one statement: MySQL's INSERT returns no ids (SQLite's is read the same
// way), and a fire written before (the unique key made this one a no-op)
// is not this node's. Rows running or queued (a backlog's) on p.HandoffNode
// since p.Now are the ones this transaction wrote. Only the ids are read: every other column
// is what insertJobs wrote, so the jobs are built from handoff (see
// handedOffJobs), which saves the server sending, and gorm scanning, a few
// hundred whole rows inside the fire's transaction. PostgreSQL learns the
// same from the INSERT's RETURNING (insertJobsReturning).
func (s *Store) readHandedOff(tx *gorm.DB, p *chimedb.WriteFiresParams, handoff []chimedb.FireJob) (map[handedKey]int64, error) {
	var ids []int64
	var ats []time.Time
	for _, j := range handoff {
		ids = append(ids, j.ScheduleID)
		ats = append(ats, DBTime(j.ScheduledAt))
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	slices.SortFunc(ats, time.Time.Compare)
	ats = slices.CompactFunc(ats, time.Time.Equal)
	// scheduled_at too, so that the read finds the rows by both columns of
	// uq_jobs_schedule_fire (or by idx_jobs_scheduled): by schedule_id
	// alone it walked every earlier job of the batch's schedules, a cost
	// that grew with their history. A herd's fires share one or a few
	// instants. SQLite rounds scheduled_at to the millisecond, so there the
	// instants are not matched exactly.
	q := tx.Model(&models.Job{}).Select("id, schedule_id, scheduled_at").
		Where("schedule_id IN ? AND status IN ? AND node_id = ? AND queued_at = ?", ids,
			[]models.JobStatus{models.JobRunning, models.JobQueued}, p.HandoffNode, DBTime(p.Now))
	if s.dialect != SQLite && len(ats) <= handoffInstants {
		q = q.Where("scheduled_at IN ?", ats)
	}
	rows, err := q.Rows()
	if err != nil {
		return nil, fmt.Errorf("read jobs handed off: %w", err)
	}
	got, err := scanHanded(rows, len(handoff))
	if err != nil {
		return nil, fmt.Errorf("read jobs handed off: %w", err)
	}
	return got, nil
}

// scanHanded reads rows of (id, schedule_id, scheduled_at) and closes them.
func scanHanded(rows *sql.Rows, n int) (map[handedKey]int64, error) {
	defer rows.Close()
	got := make(map[handedKey]int64, n)
	for rows.Next() {
		var id, sched int64
		var at time.Time
		if err := rows.Scan(&id, &sched, &at); err != nil {
			return nil, err
		}
		got[handedKey{sched, at.UTC()}] = id
	}
	return got, rows.Err()
}

// handedOffJobs builds the jobs of handoff that got rows (got, by
// schedule and instant), as the fire wrote them: the first running of
// them running, the rest queued (see insertJobs).
func handedOffJobs(p *chimedb.WriteFiresParams, handoff []chimedb.FireJob, seen map[int64]fireRow,
	defs map[int64]*models.JobDefinition, got map[handedKey]int64, running int) []chimedb.ClaimedJob {
	idOf := func(j chimedb.FireJob) (int64, bool) {
		at := DBTime(j.ScheduledAt)
		if id, ok := got[handedKey{j.ScheduleID, at}]; ok {
			return id, true
		}
		// SQLite keeps scheduled_at to the millisecond: match within one.
		for k, id := range got {
			if k.schedule == j.ScheduleID && k.at.Sub(at).Abs() < time.Millisecond {
				return id, true
			}
		}
		return 0, false
	}
	now := DBTime(p.Now)
	out := make([]chimedb.ClaimedJob, 0, len(got))
	for i, j := range handoff {
		id, ok := idOf(j)
		if !ok {
			continue
		}
		sched, at := j.ScheduleID, DBTime(j.ScheduledAt)
		r := seen[sched]
		job := models.Job{ID: id, ScheduleID: &sched, JobDefinitionID: j.JobDefinitionID, ScheduledAt: at, RunAt: at,
			Status: models.JobRunning, Attempt: 1, MaxAttempts: j.MaxAttempts, Params: j.Params, MissedFires: j.MissedFires,
			NodeID: p.HandoffNode, QueuedAt: &now, StartedAt: &now, HeartbeatAt: &now, CreatedAt: now, UpdatedAt: now,
			Priority: r.priority}
		started := i < running
		if !started {
			job.Status, job.Attempt, job.StartedAt, job.HeartbeatAt = models.JobQueued, 0, nil, nil
		}
		out = append(out, chimedb.ClaimedJob{Job: job, Definition: defs[j.JobDefinitionID], ScheduleName: r.name, Started: started})
	}
	return out
}

// handoffInstants bounds the scheduled_at list of readHandedOff: past it,
// the lookups by pairs would outnumber the rows.
const handoffInstants = 64

// insertJobs writes the fires in jobs, each with its schedule's priority as
// lockFireRows read it in seen: pending, or, with node set, handed off to
// node (see chimedb.WriteFiresParams.HandoffNode): the first running of
// jobs running as their first attempt, the rest queued there.
func (s *Store) insertJobs(tx *gorm.DB, jobs []chimedb.FireJob, seen map[int64]fireRow, now time.Time, node string, running int) (int, error) {
	if len(jobs) == 0 {
		return 0, nil
	}
	if s.dialect == Postgres && (node == "" || running >= len(jobs)) {
		// pgInsertJobs binds one status for every row: a backlog's queued
		// rows take the VALUES form below.
		return insertJobsPostgres(tx, jobs, seen, now, node)
	}
	cols, row := 13, "(?,?,?,?,?,?,?,?,?,?,?,?,?)"
	var b strings.Builder
	b.Grow(300 + len(jobs)*40)
	b.WriteString("INSERT INTO jobs (schedule_id, job_definition_id, scheduled_at, run_at, status, attempt, max_attempts, params, catch_up, missed_fires, priority, created_at, updated_at")
	if node != "" {
		b.WriteString(", node_id, queued_at, started_at, heartbeat_at")
		cols, row = 17, "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
	}
	b.WriteString(") VALUES ")
	args := make([]any, 0, len(jobs)*cols)
	ts := DBTime(now)
	for i, j := range jobs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(row)
		at := DBTime(j.ScheduledAt)
		var params any
		if len(j.Params) > 0 {
			params = string(j.Params)
		}
		status, attempt, started := models.JobPending, 0, any(nil)
		switch {
		case node == "":
		case i < running:
			status, attempt, started = models.JobRunning, 1, ts
		default:
			// Queued on node: its task engine starts it (attempt 1,
			// started_at) when a worker takes it, as for a claimed job.
			status = models.JobQueued
		}
		args = append(args, j.ScheduleID, j.JobDefinitionID, at, at, string(status), attempt, j.MaxAttempts, params, j.CatchUp, j.MissedFires,
			seen[j.ScheduleID].priority, ts, ts)
		if node != "" {
			args = append(args, node, ts, started, started)
		}
	}
	if s.dialect == MySQL {
		b.WriteString(" ON DUPLICATE KEY UPDATE id = id")
	} else {
		b.WriteString(" ON CONFLICT (schedule_id, scheduled_at) DO NOTHING")
	}
	r, err := rawExec(tx, b.String(), args...)
	if err != nil {
		return 0, fmt.Errorf("insert jobs: %w", err)
	}
	n, err := r.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("insert jobs: %w", err)
	}
	return int(n), nil
}

// insertJobsPostgres is insertJobs on PostgreSQL (see pgInsertJobs).
func insertJobsPostgres(tx *gorm.DB, jobs []chimedb.FireJob, seen map[int64]fireRow, now time.Time, node string) (int, error) {
	q, args := pgInsertJobs(jobs, seen, now, node)
	r, err := rawExec(tx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("insert jobs: %w", err)
	}
	n, err := r.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("insert jobs: %w", err)
	}
	return int(n), nil
}

// insertJobsReturning is insertJobs of handed-off jobs on PostgreSQL: the
// INSERT returns the rows it wrote (RETURNING leaves out those the unique
// key turned away), which saves readHandedOff's read back, a round trip
// inside the fire's transaction.
func insertJobsReturning(tx *gorm.DB, jobs []chimedb.FireJob, seen map[int64]fireRow, now time.Time, node string) (map[handedKey]int64, error) {
	q, args := pgInsertJobs(jobs, seen, now, node)
	rows, err := tx.Statement.ConnPool.QueryContext(tx.Statement.Context, q+" RETURNING id, schedule_id, scheduled_at", args...)
	if err != nil {
		return nil, fmt.Errorf("insert jobs: %w", err)
	}
	got, err := scanHanded(rows, len(jobs))
	if err != nil {
		return nil, fmt.Errorf("insert jobs: %w", err)
	}
	return got, nil
}

// pgInsertJobs is insertJobs's statement on PostgreSQL: one INSERT …
// SELECT over unnest of one array per column that varies, the rest bound
// once. Its text does not depend on the batch, so it is prepared once per
// connection; a VALUES list of 500 rows of 13 placeholders was parsed,
// bound and planned for every batch, and cost about twice the server's CPU
// of this form for the same 500 rows (the backend's CPU time over 10
// inserts of 500 rows, literal values: 0.37–0.44 s against 0.18–0.20 s).
// unnest returns the rows in the arrays' order, so they are inserted, and
// numbered, in the batch's order as before.
func pgInsertJobs(jobs []chimedb.FireJob, seen map[int64]fireRow, now time.Time, node string) (string, []any) {
	n := len(jobs)
	scheds, defs := make([]int64, n), make([]int64, n)
	ats := make([]time.Time, n)
	maxAttempts, missed, prios := make([]int32, n), make([]int32, n), make([]int32, n)
	params := make([]*string, n)
	catchUp := make([]bool, n)
	for i, j := range jobs {
		scheds[i], defs[i], ats[i] = j.ScheduleID, j.JobDefinitionID, DBTime(j.ScheduledAt)
		maxAttempts[i], missed[i], prios[i] = int32(j.MaxAttempts), int32(j.MissedFires), int32(seen[j.ScheduleID].priority)
		if len(j.Params) > 0 {
			p := string(j.Params)
			params[i] = &p
		}
		catchUp[i] = j.CatchUp
	}
	ts := DBTime(now)
	status, attempt := models.JobPending, 0
	cols, vals := "", ""
	var extra []any
	if node != "" {
		status, attempt = models.JobRunning, 1
		cols, vals = ", node_id, queued_at, started_at, heartbeat_at", ", ?, ?, ?, ?"
		extra = []any{node, ts, ts, ts}
	}
	q := "INSERT INTO jobs (schedule_id, job_definition_id, scheduled_at, run_at, status, attempt, max_attempts, params, catch_up, missed_fires, priority, created_at, updated_at" + cols + ")" +
		" SELECT f.s, f.d, f.a, f.a, ?, ?, f.m, CAST(f.p AS JSON), f.c, f.x, f.pr, ?, ?" + vals +
		" FROM unnest(CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS TIMESTAMPTZ[]), CAST(? AS INT[]), CAST(? AS TEXT[]), CAST(? AS BOOLEAN[]), CAST(? AS INT[]), CAST(? AS INT[]))" +
		" AS f(s, d, a, m, p, c, x, pr) ON CONFLICT (schedule_id, scheduled_at) DO NOTHING"
	args := append([]any{string(status), attempt, ts, ts}, extra...)
	return q, append(args, scheds, defs, ats, maxAttempts, params, catchUp, missed, prios)
}

// insertRuns writes the fires of workflow schedules as pending runs, the
// on-time ones and the catch-ups in a statement each (so that res counts
// each kind exactly, as for jobs). The unique key on (schedule_id,
// scheduled_at) is the runs' fire ledger: a fire another writer wrote is
// a no-op here. The maintenance leader starts pending runs (see
// AdvanceRuns), so the fire's transaction does not grow with the graph.
func (s *Store) insertRuns(tx *gorm.DB, runs []chimedb.FireJob, seen map[int64]fireRow, now time.Time, res *chimedb.WriteFiresResult) error {
	var onTime, catchUp []chimedb.FireJob
	for _, j := range runs {
		if j.CatchUp {
			catchUp = append(catchUp, j)
		} else {
			onTime = append(onTime, j)
		}
	}
	for _, part := range []struct {
		jobs []chimedb.FireJob
		n    *int
	}{{onTime, &res.Inserted}, {catchUp, &res.InsertedCatchUp}} {
		if len(part.jobs) == 0 {
			continue
		}
		var b strings.Builder
		b.WriteString("INSERT INTO workflow_runs (workflow_id, status, generation, params, started_by, schedule_id, scheduled_at, created_at, updated_at) VALUES ")
		args := make([]any, 0, len(part.jobs)*9)
		ts := DBTime(now)
		for i, j := range part.jobs {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("(?,?,?,?,?,?,?,?,?)")
			var params any
			if len(j.Params) > 0 {
				params = string(j.Params)
			}
			by := "schedule " + seen[j.ScheduleID].name
			if j.CatchUp {
				by += fmt.Sprintf(" (catch-up of %d missed fires)", j.MissedFires)
			}
			args = append(args, j.WorkflowID, string(models.RunPending), 1, params, truncateUTF8(by, 191), j.ScheduleID, DBTime(j.ScheduledAt), ts, ts)
		}
		if s.dialect == MySQL {
			b.WriteString(" ON DUPLICATE KEY UPDATE id = id")
		} else {
			b.WriteString(" ON CONFLICT (schedule_id, scheduled_at) DO NOTHING")
		}
		r, err := rawExec(tx, b.String(), args...)
		if err != nil {
			return fmt.Errorf("insert workflow runs: %w", err)
		}
		n, err := r.RowsAffected()
		if err != nil {
			return fmt.Errorf("insert workflow runs: %w", err)
		}
		*part.n += int(n)
	}
	return nil
}

// rawExec runs raw SQL on the transaction's connection, bypassing GORM's
// expression parser, which would expand byte-slice arguments into lists.
func rawExec(tx *gorm.DB, q string, args ...any) (sql.Result, error) {
	return tx.Statement.ConnPool.ExecContext(tx.Statement.Context, q, args...)
}
