package scheduleengine

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// dbStore implements Store on chime's database. Its SQL is the schedule
// engine's hot path; the dialect differences are the upsert clauses.
//
// It belongs in store/ by the layout rule and only lives here until store's
// owner adopts it: it uses nothing but store's exported API.
type dbStore struct {
	st *store.Store
}

// NewDBStore returns the Store that app hands to New.
func NewDBStore(st *store.Store) Store { return &dbStore{st: st} }

// inChunk bounds IN lists, well under both databases' placeholder limits.
const inChunk = 1000

func (d *dbStore) LoadSchedules(ctx context.Context, p *LoadSchedulesParams) (*LoadSchedulesResult, error) {
	db := d.st.DB().WithContext(ctx)
	var scheds []models.Schedule
	q := db.Model(&models.Schedule{}).Order("id")
	if p.ChangedSince != nil {
		since := store.DBTime(*p.ChangedSince)
		q = q.Where("updated_at >= ? OR job_definition_id IN (SELECT id FROM job_definitions WHERE updated_at >= ?)", since, since)
	} else {
		q = q.Where("status = ?", models.ScheduleActive)
	}
	if err := q.Find(&scheds).Error; err != nil {
		return nil, fmt.Errorf("load schedules: %w", err)
	}
	res := &LoadSchedulesResult{Rows: make([]ScheduleRow, len(scheds))}
	defIDs := make([]int64, 0, len(scheds))
	ids := make([]int64, 0, len(scheds))
	for i, s := range scheds {
		res.Rows[i].Schedule = s
		defIDs = append(defIDs, s.JobDefinitionID)
		ids = append(ids, s.ID)
		if s.UpdatedAt.After(res.MaxUpdatedAt) {
			res.MaxUpdatedAt = s.UpdatedAt
		}
	}
	slices.Sort(defIDs)
	defIDs = slices.Compact(defIDs)
	defs := make(map[int64]*models.JobDefinition, len(defIDs))
	for chunk := range slices.Chunk(defIDs, inChunk) {
		var rows []models.JobDefinition
		if err := db.Where("id IN ?", chunk).Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("load job definitions: %w", err)
		}
		for i := range rows {
			defs[rows[i].ID] = &rows[i]
			if rows[i].UpdatedAt.After(res.MaxUpdatedAt) {
				res.MaxUpdatedAt = rows[i].UpdatedAt
			}
		}
	}
	trigs := make(map[int64]*models.TimeTrigger, len(ids))
	for chunk := range slices.Chunk(ids, inChunk) {
		var rows []models.TimeTrigger
		if err := db.Where("schedule_id IN ?", chunk).Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("load time triggers: %w", err)
		}
		for i := range rows {
			trigs[rows[i].ScheduleID] = &rows[i]
		}
	}
	for i := range res.Rows {
		r := &res.Rows[i]
		r.Definition = defs[r.Schedule.JobDefinitionID]
		r.Trigger = trigs[r.Schedule.ID]
	}
	return res, nil
}

func (d *dbStore) EnsureTriggers(ctx context.Context, p *EnsureTriggersParams) error {
	for chunk := range slices.Chunk(p.Triggers, 500) {
		q, args := d.triggerUpsert(chunk, p.Now, false)
		if err := d.st.InTx(ctx, func(tx *gorm.DB) error {
			_, err := exec(tx, q, args...)
			return err
		}); err != nil {
			return fmt.Errorf("create time triggers: %w", err)
		}
	}
	return nil
}

func (d *dbStore) UnfinishedSchedules(ctx context.Context, scheduleIDs []int64) (map[int64]bool, error) {
	busy := map[int64]bool{}
	for chunk := range slices.Chunk(scheduleIDs, inChunk) {
		var ids []int64
		err := d.st.DB().WithContext(ctx).Model(&models.Job{}).Distinct("schedule_id").
			Where("schedule_id IN ? AND status IN ?", chunk, unfinished).Pluck("schedule_id", &ids).Error
		if err != nil {
			return nil, fmt.Errorf("find unfinished jobs of forbid-overlap schedules: %w", err)
		}
		for _, id := range ids {
			busy[id] = true
		}
	}
	return busy, nil
}

var unfinished = []models.JobStatus{models.JobPending, models.JobQueued, models.JobRunning, models.JobPaused}

func (d *dbStore) WriteFires(ctx context.Context, p *WriteFiresParams) (*WriteFiresResult, error) {
	var res *WriteFiresResult
	err := d.st.InTx(ctx, func(tx *gorm.DB) error {
		res = &WriteFiresResult{}
		active, err := d.activeAmong(tx, p)
		if err != nil {
			return err
		}
		var normal, catchUp []FireJob
		for _, j := range p.Jobs {
			switch {
			case !active[j.ScheduleID]:
			case j.CatchUp:
				catchUp = append(catchUp, j)
			default:
				normal = append(normal, j)
			}
		}
		// Two statements so the counts per kind are exact: a multi-row
		// insert reports only how many rows it added in total.
		if res.Inserted, err = d.insertJobs(tx, normal, p.Now); err != nil {
			return err
		}
		if res.InsertedCatchUp, err = d.insertJobs(tx, catchUp, p.Now); err != nil {
			return err
		}
		res.Duplicates = len(normal) + len(catchUp) - res.Inserted - res.InsertedCatchUp
		var trigs []TriggerRow
		for _, t := range p.Triggers {
			if active[t.ScheduleID] {
				trigs = append(trigs, t)
			} else {
				res.Inactive = append(res.Inactive, t.ScheduleID)
			}
		}
		if len(trigs) > 0 {
			q, args := d.triggerUpsert(trigs, p.Now, true)
			if _, err := exec(tx, q, args...); err != nil {
				return fmt.Errorf("advance time triggers: %w", err)
			}
		}
		var done []int64
		for _, id := range p.Complete {
			if active[id] {
				done = append(done, id)
			}
		}
		if len(done) > 0 {
			err := tx.Model(&models.Schedule{}).Where("id IN ? AND status = ?", done, models.ScheduleActive).
				Updates(map[string]any{"status": models.ScheduleCompleted, "status_reason": "no fires left", "updated_at": store.DBTime(p.Now)}).Error
			if err != nil {
				return fmt.Errorf("complete schedules: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("write %d fires: %w", len(p.Jobs), err)
	}
	return res, nil
}

// activeAmong re-reads the status of the batch's schedules inside the
// transaction, so a pause or delete that the last sync missed still stops
// the fire.
func (d *dbStore) activeAmong(tx *gorm.DB, p *WriteFiresParams) (map[int64]bool, error) {
	ids := make([]int64, 0, len(p.Triggers))
	for _, t := range p.Triggers {
		ids = append(ids, t.ScheduleID)
	}
	for _, j := range p.Jobs {
		ids = append(ids, j.ScheduleID)
	}
	ids = append(ids, p.Complete...)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	active := make(map[int64]bool, len(ids))
	for chunk := range slices.Chunk(ids, inChunk) {
		var got []int64
		if err := tx.Model(&models.Schedule{}).Where("id IN ? AND status = ?", chunk, models.ScheduleActive).Pluck("id", &got).Error; err != nil {
			return nil, fmt.Errorf("check schedules are still active: %w", err)
		}
		for _, id := range got {
			active[id] = true
		}
	}
	return active, nil
}

func (d *dbStore) insertJobs(tx *gorm.DB, jobs []FireJob, now time.Time) (int, error) {
	if len(jobs) == 0 {
		return 0, nil
	}
	const cols = 12
	var b strings.Builder
	b.WriteString("INSERT INTO jobs (schedule_id, job_definition_id, scheduled_at, run_at, status, attempt, max_attempts, params, catch_up, missed_fires, created_at, updated_at) VALUES ")
	args := make([]any, 0, len(jobs)*cols)
	ts := store.DBTime(now)
	for i, j := range jobs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?,?,?,?,?,?,?,?,?,?,?)")
		at := store.DBTime(j.ScheduledAt)
		var params any
		if len(j.Params) > 0 {
			params = string(j.Params)
		}
		args = append(args, j.ScheduleID, j.JobDefinitionID, at, at, string(models.JobPending), 0, j.MaxAttempts, params, j.CatchUp, j.MissedFires, ts, ts)
	}
	if d.st.Dialect() == store.MySQL {
		b.WriteString(" ON DUPLICATE KEY UPDATE id = id")
	} else {
		b.WriteString(" ON CONFLICT (schedule_id, scheduled_at) DO NOTHING")
	}
	r, err := exec(tx, b.String(), args...)
	if err != nil {
		return 0, fmt.Errorf("insert jobs: %w", err)
	}
	n, err := r.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("insert jobs: %w", err)
	}
	return int(n), nil
}

// triggerUpsert builds one multi-row upsert of time_triggers: overwrite
// replaces the state, otherwise existing rows are left as they are.
func (d *dbStore) triggerUpsert(rows []TriggerRow, now time.Time, overwrite bool) (string, []any) {
	var b strings.Builder
	b.WriteString("INSERT INTO time_triggers (schedule_id, next_fire_at, last_fire_at, fired_count, remaining_count, misfired_count, created_at, updated_at) VALUES ")
	args := make([]any, 0, len(rows)*8)
	ts := store.DBTime(now)
	for i, r := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?,?,?,?,?,?,?)")
		args = append(args, r.ScheduleID, dbTimePtr(r.NextFireAt), dbTimePtr(r.LastFireAt), r.FiredCount, int64Ptr(r.RemainingCount), r.MisfiredCount, ts, ts)
	}
	set := []string{"next_fire_at", "last_fire_at", "fired_count", "remaining_count", "misfired_count", "updated_at"}
	mysql := d.st.Dialect() == store.MySQL
	switch {
	case !overwrite && mysql:
		b.WriteString(" ON DUPLICATE KEY UPDATE schedule_id = schedule_id")
	case !overwrite:
		b.WriteString(" ON CONFLICT (schedule_id) DO NOTHING")
	case mysql:
		b.WriteString(" ON DUPLICATE KEY UPDATE ")
		for i, c := range set {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%s = VALUES(%s)", c, c)
		}
	default:
		b.WriteString(" ON CONFLICT (schedule_id) DO UPDATE SET ")
		for i, c := range set {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%s = excluded.%s", c, c)
		}
	}
	return b.String(), args
}

func (d *dbStore) MarkInvalid(ctx context.Context, p *MarkInvalidParams) error {
	reason := p.Reason
	if len(reason) > 1000 {
		reason = reason[:1000]
	}
	err := d.st.DB().WithContext(ctx).Model(&models.Schedule{}).
		Where("id = ? AND status = ?", p.ScheduleID, models.ScheduleActive).
		Updates(map[string]any{"status": models.ScheduleInvalid, "status_reason": reason, "updated_at": store.DBTime(p.Now)}).Error
	if err != nil {
		return fmt.Errorf("mark schedule %d invalid: %w", p.ScheduleID, err)
	}
	return nil
}

func (d *dbStore) AcquireLease(ctx context.Context, p *LeaseParams) (bool, error) {
	now := store.DBTime(p.Now)
	var holder string
	err := d.st.InTx(ctx, func(tx *gorm.DB) error {
		ins := "INSERT INTO leases (name, holder, expires_at) VALUES (?, '', ?) "
		if d.st.Dialect() == store.MySQL {
			ins += "ON DUPLICATE KEY UPDATE name = name"
		} else {
			ins += "ON CONFLICT (name) DO NOTHING"
		}
		if _, err := exec(tx, ins, p.Name, now); err != nil {
			return err
		}
		if _, err := exec(tx, "UPDATE leases SET holder = ?, expires_at = ? WHERE name = ? AND (holder = ? OR holder = '' OR expires_at < ?)",
			p.Holder, store.DBTime(p.Now.Add(p.TTL)), p.Name, p.Holder, now); err != nil {
			return err
		}
		return tx.Statement.ConnPool.QueryRowContext(tx.Statement.Context, "SELECT holder FROM leases WHERE name = ?", p.Name).Scan(&holder)
	})
	if err != nil {
		return false, fmt.Errorf("acquire lease %q: %w", p.Name, err)
	}
	return holder == p.Holder, nil
}

func (d *dbStore) ReleaseLease(ctx context.Context, p *LeaseParams) error {
	_, err := d.st.SQL().ExecContext(ctx, "UPDATE leases SET holder = '', expires_at = ? WHERE name = ? AND holder = ?",
		store.DBTime(p.Now), p.Name, p.Holder)
	if err != nil {
		return fmt.Errorf("release lease %q: %w", p.Name, err)
	}
	return nil
}

// exec runs raw SQL on the transaction's connection, bypassing GORM's
// expression parser, which would expand byte-slice arguments into lists.
func exec(tx *gorm.DB, q string, args ...any) (sql.Result, error) {
	return tx.Statement.ConnPool.ExecContext(tx.Statement.Context, q, args...)
}

func dbTimePtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return store.DBTime(*t)
}

func int64Ptr(v *int64) any {
	if v == nil {
		return nil
	}
	return *v
}
