package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/chimesched/chime/models"
)

func (s *Store) WriteFires(ctx context.Context, p *WriteFiresParams) (*WriteFiresResult, error) {
	var res *WriteFiresResult
	err := s.InTx(ctx, func(tx *gorm.DB) error {
		res = &WriteFiresResult{}
		active, err := s.activeAmong(tx, p)
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
		if res.Inserted, err = s.insertJobs(tx, normal, p.Now); err != nil {
			return err
		}
		if res.InsertedCatchUp, err = s.insertJobs(tx, catchUp, p.Now); err != nil {
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
			q, args := s.triggerUpsert(trigs, p.Now, true)
			if _, err := rawExec(tx, q, args...); err != nil {
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
				Updates(map[string]any{"status": models.ScheduleCompleted, "status_reason": "no fires left", "updated_at": DBTime(p.Now)}).Error
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
func (s *Store) activeAmong(tx *gorm.DB, p *WriteFiresParams) (map[int64]bool, error) {
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
	for chunk := range slices.Chunk(ids, scheduleInChunk) {
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

func (s *Store) insertJobs(tx *gorm.DB, jobs []FireJob, now time.Time) (int, error) {
	if len(jobs) == 0 {
		return 0, nil
	}
	const cols = 12
	var b strings.Builder
	b.WriteString("INSERT INTO jobs (schedule_id, job_definition_id, scheduled_at, run_at, status, attempt, max_attempts, params, catch_up, missed_fires, created_at, updated_at) VALUES ")
	args := make([]any, 0, len(jobs)*cols)
	ts := DBTime(now)
	for i, j := range jobs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?,?,?,?,?,?,?,?,?,?,?)")
		at := DBTime(j.ScheduledAt)
		var params any
		if len(j.Params) > 0 {
			params = string(j.Params)
		}
		args = append(args, j.ScheduleID, j.JobDefinitionID, at, at, string(models.JobPending), 0, j.MaxAttempts, params, j.CatchUp, j.MissedFires, ts, ts)
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

// rawExec runs raw SQL on the transaction's connection, bypassing GORM's
// expression parser, which would expand byte-slice arguments into lists.
func rawExec(tx *gorm.DB, q string, args ...any) (sql.Result, error) {
	return tx.Statement.ConnPool.ExecContext(tx.Statement.Context, q, args...)
}
