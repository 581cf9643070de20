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

// This file holds the schedule engine's reads and bookkeeping writes. The
// plain types they take and return live in chimedb, with the interface
// (chimedb.ScheduleStore) the engine calls them through.

// scheduleInChunk bounds IN lists, well under both databases' placeholder limits.
const scheduleInChunk = 1000

// loadColumns are the schedules and time_triggers columns LoadSchedules
// reads, in scanRow's order. TestLoadColumnsCoverModels fails when a model
// gains a column this list lacks.
var (
	loadScheduleColumns = []string{"id", "name", "job_definition_id", "schedule_type", "cron_expr", "cron_syntax", "dst_policy",
		"calendar_id", "interval_seconds", "run_at", "timezone", "start_at", "end_at", "max_runs", "misfire_policy",
		"catchup_window_seconds", "concurrency", "params", "status", "status_reason", "created_at", "updated_at", "priority", "queue", "required_tags", "workflow_id"}
	loadTriggerColumns = []string{"id", "schedule_id", "next_fire_at", "last_fire_at", "fired_count", "remaining_count",
		"misfired_count", "created_at", "updated_at", "spec_hash", "spec_changed_at"}
)

// LoadSchedules reads schedules with their trigger rows in one query
// (schedules LEFT JOIN time_triggers, by primary key, in id order),
// scanned with database/sql instead of gorm's per-row reflection: a
// restore reads every active schedule, a million of them on a large
// node. The strings most rows share (types, policies, time zones, cron
// expressions) are interned, so a million schedules of a few expressions
// hold a few copies, not a million.
func (s *Store) LoadSchedules(ctx context.Context, p *chimedb.LoadSchedulesParams) (*chimedb.LoadSchedulesResult, error) {
	db := s.DB().WithContext(ctx)
	q, args := loadSchedulesQuery(p)
	res := &chimedb.LoadSchedulesResult{}
	if p.Limit > 0 {
		res.Rows = make([]chimedb.ScheduleRow, 0, p.Limit)
	}
	rows, err := s.sqlDB.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("load schedules: %w", err)
	}
	in := &interner{}
	var sc rowScan
	for rows.Next() {
		r, err := sc.scan(rows, in)
		if err != nil {
			_ = rows.Close()
			return nil, fmt.Errorf("load schedules: %w", err)
		}
		res.Rows = append(res.Rows, r)
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("load schedules: %w", err)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load schedules: %w", err)
	}
	defIDs := make([]int64, 0, 4)
	var calIDs, wfIDs []int64
	for i := range res.Rows {
		sc := &res.Rows[i].Schedule
		if sc.JobDefinitionID != 0 {
			defIDs = append(defIDs, sc.JobDefinitionID)
		}
		if sc.CalendarID != nil {
			calIDs = append(calIDs, *sc.CalendarID)
		}
		if sc.WorkflowID != nil {
			wfIDs = append(wfIDs, *sc.WorkflowID)
		}
		if sc.UpdatedAt.After(res.MaxUpdatedAt) {
			res.MaxUpdatedAt = sc.UpdatedAt
		}
	}
	slices.Sort(defIDs)
	defIDs = slices.Compact(defIDs)
	defs := make(map[int64]*models.JobDefinition, len(defIDs))
	rows2, err := definitionsByID(db, defIDs)
	if err != nil {
		return nil, fmt.Errorf("load job definitions: %w", err)
	}
	for i := range rows2 {
		defs[rows2[i].ID] = &rows2[i]
		if rows2[i].UpdatedAt.After(res.MaxUpdatedAt) {
			res.MaxUpdatedAt = rows2[i].UpdatedAt
		}
	}
	cals, err := calendarsByID(db, calIDs)
	if err != nil {
		return nil, err
	}
	for _, c := range cals {
		if c.UpdatedAt.After(res.MaxUpdatedAt) {
			res.MaxUpdatedAt = c.UpdatedAt
		}
	}
	wfs, err := workflowsByID(db, wfIDs)
	if err != nil {
		return nil, err
	}
	for i := range res.Rows {
		r := &res.Rows[i]
		r.Definition = defs[r.Schedule.JobDefinitionID]
		if id := r.Schedule.WorkflowID; id != nil {
			r.Workflow = wfs[*id]
		}
		if id := r.Schedule.CalendarID; id != nil {
			r.Calendar = cals[*id]
		}
	}
	return res, nil
}

// rowScan holds the scan targets of one LoadSchedules row, reused from
// row to row, with dest, the pointers to them that Scan takes: built
// once, not per row (37 interfaces: 600 bytes a row, 600 MB of garbage
// over a restore of a million schedules).
type rowScan struct {
	dest                                                                          []any
	name, typ, cron, syntax, dst, tz, misfire, conc, params, status, reason, spec sql.RawBytes
	queue, tags                                                                   sql.NullString
	id                                                                            int64
	def, wf, cal, interval, maxRuns, window, priority                             sql.NullInt64
	tid, tsid, tfired, trem, tmissed                                              sql.NullInt64
	runAt, startAt, endAt, tnext, tlast, tcreated, tupdated, tchanged             sql.NullTime
	created, updated                                                              time.Time
}

func (r *rowScan) scan(rows *sql.Rows, in *interner) (chimedb.ScheduleRow, error) {
	if r.dest == nil {
		// Scan sets every target each row (a NULL as nil or !Valid), so
		// they need no clearing in between.
		r.dest = r.targets()
	}
	dest := r.dest
	bad, raw, err := scanChecked(rows, dest)
	if err != nil {
		return chimedb.ScheduleRow{}, err
	}
	if bad >= 0 {
		var col string
		if bad < len(loadScheduleColumns) {
			col = "schedules." + loadScheduleColumns[bad]
		} else {
			col = "time_triggers." + loadTriggerColumns[bad-len(loadScheduleColumns)]
		}
		return chimedb.ScheduleRow{Schedule: models.Schedule{ID: rawInt64(raw[0]), Name: rawString(raw[1]), JobDefinitionID: rawInt64(raw[2]),
			Status:     models.ScheduleStatus(rawString(raw[slices.Index(loadScheduleColumns, "status")])),
			Unreadable: unreadable(col, dest[bad], raw[bad])}}, nil
	}
	out := chimedb.ScheduleRow{Schedule: models.Schedule{
		ID: r.id, Name: string(r.name), JobDefinitionID: r.def.Int64, WorkflowID: nullInt64(r.wf), ScheduleType: models.ScheduleType(in.str(r.typ)),
		CronSyntax: models.CronSyntax(in.str(r.syntax)), DSTPolicy: models.DSTPolicy(in.str(r.dst)),
		CalendarID: nullInt64(r.cal), IntervalSeconds: nullInt(r.interval), RunAt: nullTime(r.runAt), Timezone: in.str(r.tz),
		StartAt: nullTime(r.startAt), EndAt: nullTime(r.endAt), MaxRuns: nullInt(r.maxRuns),
		MisfirePolicy: models.MisfirePolicy(in.str(r.misfire)), CatchupWindowSeconds: nullInt(r.window),
		Concurrency: models.Concurrency(in.str(r.conc)), Status: models.ScheduleStatus(in.str(r.status)),
		StatusReason: in.str(r.reason), CreatedAt: r.created, UpdatedAt: r.updated, Priority: nullInt(r.priority),
	}}
	if r.queue.Valid {
		q := in.str([]byte(r.queue.String))
		out.Schedule.Queue = &q
	}
	if r.tags.Valid {
		t := in.str([]byte(r.tags.String))
		out.Schedule.RequiredTags = &t
	}
	if r.cron != nil {
		c := in.str(r.cron)
		out.Schedule.CronExpr = in.ptr(c)
	}
	if len(r.params) > 0 {
		out.Schedule.Params = models.JSON(slices.Clone(r.params))
	}
	if r.tsid.Valid {
		out.Trigger = &models.TimeTrigger{ID: r.tid.Int64, ScheduleID: r.tsid.Int64, NextFireAt: nullTime(r.tnext),
			LastFireAt: nullTime(r.tlast), FiredCount: r.tfired.Int64, RemainingCount: nullInt64(r.trem), MisfiredCount: r.tmissed.Int64,
			CreatedAt: r.tcreated.Time, UpdatedAt: r.tupdated.Time, SpecHash: in.str(r.spec), SpecChangedAt: nullTime(r.tchanged)}
	}
	return out, nil
}

// targets are the pointers Scan fills, in loadColumns' order.
func (r *rowScan) targets() []any {
	return []any{&r.id, &r.name, &r.def, &r.typ, &r.cron, &r.syntax, &r.dst, &r.cal, &r.interval, &r.runAt, &r.tz,
		&r.startAt, &r.endAt, &r.maxRuns, &r.misfire, &r.window, &r.conc, &r.params, &r.status, &r.reason, &r.created, &r.updated, &r.priority, &r.queue, &r.tags, &r.wf,
		&r.tid, &r.tsid, &r.tnext, &r.tlast, &r.tfired, &r.trem, &r.tmissed, &r.tcreated, &r.tupdated, &r.spec, &r.tchanged}
}

// interner shares the strings of one read: a column of a million rows
// mostly holds a handful of values. It stops adding once it holds
// internMax values, so a column of distinct values (names) costs what it
// did before.
type interner struct {
	strs map[string]string
	ptrs map[string]*string
}

const internMax = 4096

func (in *interner) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if s, ok := in.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(in.strs) < internMax {
		if in.strs == nil {
			in.strs = map[string]string{}
		}
		in.strs[s] = s
	}
	return s
}

// ptr shares the *string of a nullable column (cron_expr): the engine
// never writes through it, and a million rows of one expression then hold
// one pointer's target.
func (in *interner) ptr(s string) *string {
	if p, ok := in.ptrs[s]; ok {
		return p
	}
	p := &s
	if len(in.ptrs) < internMax {
		if in.ptrs == nil {
			in.ptrs = map[string]*string{}
		}
		in.ptrs[s] = p
	}
	return p
}

func nullInt64(v sql.NullInt64) *int64 {
	if !v.Valid {
		return nil
	}
	x := v.Int64
	return &x
}

func nullInt(v sql.NullInt64) *int {
	if !v.Valid {
		return nil
	}
	x := int(v.Int64)
	return &x
}

func (s *Store) UnfinishedSchedules(ctx context.Context, scheduleIDs []int64) (map[int64]bool, error) {
	busy := map[int64]bool{}
	for chunk := range slices.Chunk(scheduleIDs, scheduleInChunk) {
		var ids []int64
		// A schedule of a workflow is busy while one of its runs is not
		// over: forbid holds for the run as a whole, whose steps' jobs
		// name no schedule.
		list := idList(chunk)
		err := s.DB().WithContext(ctx).Raw("SELECT schedule_id FROM jobs WHERE schedule_id IN ("+list+") AND status IN ?"+
			" UNION SELECT schedule_id FROM workflow_runs WHERE schedule_id IN ("+list+") AND status IN ?",
			unfinishedJobs, unfinishedRuns).Scan(&ids).Error
		if err != nil {
			return nil, fmt.Errorf("find unfinished jobs of forbid-overlap schedules: %w", err)
		}
		for _, id := range ids {
			busy[id] = true
		}
	}
	return busy, nil
}

// unfinishedRuns are the run statuses that make a forbid-overlap schedule busy.
var unfinishedRuns = []models.RunStatus{models.RunPending, models.RunRunning, models.RunPaused}

// unfinishedJobs are the statuses that make a forbid-overlap schedule busy.
var unfinishedJobs = []models.JobStatus{models.JobPending, models.JobQueued, models.JobRunning, models.JobPaused}

// maxInvalidReasonBytes bounds schedules.status_reason as MarkInvalid
// writes it, well within the column on every dialect.
const maxInvalidReasonBytes = 1000

// MarkInvalid sets an active schedule invalid with the reason. The reason
// may quote what an admin wrote (a cron expression, a time zone), so it is
// made storable first: a cut in the middle of a character, or a byte the
// column refuses, would fail the write, and the engine would retry it on
// every sync.
func (s *Store) MarkInvalid(ctx context.Context, p *chimedb.MarkInvalidParams) error {
	reason := s.storable(p.Reason, maxInvalidReasonBytes)
	// chime's own change, so marked as the engine's in the audit log.
	err := s.InTx(chimedb.WithActor(ctx, chimedb.EngineActor), func(tx *gorm.DB) error {
		return tx.Model(&models.Schedule{}).
			Where("id = ? AND status = ?", p.ScheduleID, models.ScheduleActive).
			Updates(map[string]any{"status": models.ScheduleInvalid, "status_reason": reason, "updated_at": DBTime(p.Now)}).Error
	})
	if err != nil {
		return fmt.Errorf("mark schedule %d invalid: %w", p.ScheduleID, err)
	}
	return nil
}

// loadSchedulesQuery is LoadSchedules' read of one page: the schedules
// with their trigger rows, all active ones or those changed since
// p.ChangedSince, by id after p.AfterID.
func loadSchedulesQuery(p *chimedb.LoadSchedulesParams) (string, []any) {
	var b strings.Builder
	b.WriteString("SELECT ")
	for i, c := range loadScheduleColumns {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("s." + c)
	}
	for _, c := range loadTriggerColumns {
		b.WriteString(",t." + c)
	}
	b.WriteString(" FROM schedules s LEFT JOIN time_triggers t ON t.schedule_id = s.id WHERE s.id > ?")
	args := []any{p.AfterID}
	if p.ChangedSince != nil {
		since := DBTime(*p.ChangedSince)
		b.WriteString(" AND (s.updated_at >= ? OR s.job_definition_id IN (SELECT id FROM job_definitions WHERE updated_at >= ?)" +
			" OR s.calendar_id IN (SELECT id FROM calendars WHERE updated_at >= ?))")
		args = append(args, since, since, since)
	} else {
		b.WriteString(" AND s.status = ?")
		args = append(args, string(models.ScheduleActive))
	}
	b.WriteString(" ORDER BY s.id")
	if p.Limit > 0 {
		b.WriteString(" LIMIT " + strconv.Itoa(p.Limit))
	}
	return b.String(), args
}

// workflowsByID reads the workflows ids name (their id and name: a
// schedule's engine needs only to know that its workflow exists), by id.
func workflowsByID(db *gorm.DB, ids []int64) (map[int64]*models.Workflow, error) {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	out := make(map[int64]*models.Workflow, len(ids))
	for chunk := range slices.Chunk(ids, scheduleInChunk) {
		var rows []models.Workflow
		if err := db.Select("id", "name").Where("id IN ?", chunk).Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("load workflows: %w", err)
		}
		for i := range rows {
			out[rows[i].ID] = &rows[i]
		}
	}
	return out, nil
}
