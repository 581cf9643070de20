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

	"github.com/chimesched/chime/models"
)

// WriteFires is the schedule engine's hot path: every statement is raw SQL
// on the transaction's connection (no GORM statement building), and the
// transaction is at most four statements whatever the batch size: the status
// check, the jobs INSERT (two when the batch mixes on-time and catch-up
// fires), the trigger advance and the completion UPDATE.
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
		if err := s.advanceTriggers(tx, trigs, p.Now); err != nil {
			return fmt.Errorf("advance time triggers: %w", err)
		}
		var done []int64
		for _, id := range p.Complete {
			if active[id] {
				done = append(done, id)
			}
		}
		for chunk := range slices.Chunk(done, scheduleInChunk) {
			q := "UPDATE schedules SET status = ?, status_reason = ?, updated_at = ? WHERE status = ? AND id IN (" + idList(chunk) + ")"
			if _, err := rawExec(tx, q, string(models.ScheduleCompleted), "no fires left", DBTime(p.Now), string(models.ScheduleActive)); err != nil {
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
	ids := make([]int64, 0, len(p.Triggers)+len(p.Complete))
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
		rows, err := tx.Statement.ConnPool.QueryContext(tx.Statement.Context,
			"SELECT id FROM schedules WHERE status = ? AND id IN ("+idList(chunk)+")", string(models.ScheduleActive))
		if err != nil {
			return nil, fmt.Errorf("check schedules are still active: %w", err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				_ = rows.Close()
				return nil, fmt.Errorf("check schedules are still active: %w", err)
			}
			active[id] = true
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("check schedules are still active: %w", err)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("check schedules are still active: %w", err)
		}
	}
	return active, nil
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

func (s *Store) insertJobs(tx *gorm.DB, jobs []FireJob, now time.Time) (int, error) {
	if len(jobs) == 0 {
		return 0, nil
	}
	const cols = 12
	var b strings.Builder
	b.Grow(200 + len(jobs)*26)
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
