package store

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// CountQueueJobs counts each queue's active and due pending jobs, by the
// queue the claim gives each job (activeQueueExpr). It reads every such
// row, with its definition and schedule: the active rows are few, the due
// pending ones as many as the backlog.
func (s *Store) CountQueueJobs(ctx context.Context) (map[string]chimedb.QueueCount, error) {
	now, err := s.DBNow(ctx)
	if err != nil {
		return nil, err
	}
	var rows []struct {
		Q       string `gorm:"column:q"`
		Pending bool   `gorm:"column:pending"`
		N       int64  `gorm:"column:n"`
	}
	pendingExpr := "CASE WHEN j.status = ? THEN 1 ELSE 0 END"
	err = s.db.WithContext(ctx).Raw(`SELECT `+activeQueueExpr+` AS q, `+pendingExpr+` AS pending, COUNT(*) AS n FROM jobs j
		JOIN job_definitions d ON d.id = j.job_definition_id LEFT JOIN schedules s ON s.id = j.schedule_id
		WHERE j.status IN ? OR (j.status = ? AND j.claim_key <= ? AND j.run_at <= ?)
		GROUP BY 1, 2`,
		models.JobPending, activeStatuses, models.JobPending, ClaimKeyUntil(now), now).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("count jobs of queues: %w", err)
	}
	out := map[string]chimedb.QueueCount{}
	for _, r := range rows {
		c := out[r.Q]
		if r.Pending {
			c.Waiting += r.N
		} else {
			c.Running += r.N
		}
		out[r.Q] = c
	}
	return out, nil
}

// ListQueues implements chimedb.AdminQueries.
func (a *Admin) ListQueues(ctx context.Context) ([]chimedb.QueueState, error) {
	db := a.s.db.WithContext(ctx)
	qs, err := readQueues(db, "", nil)
	if err != nil {
		return nil, err
	}
	counts, err := a.s.CountQueueJobs(ctx)
	if err != nil {
		return nil, err
	}
	// Queues named but with no row: their jobs wait, and the list says so.
	var named []string
	if err := db.Raw(`SELECT DISTINCT COALESCE(NULLIF(queue, ''), 'default') FROM job_definitions
		UNION SELECT DISTINCT queue FROM schedules WHERE queue IS NOT NULL AND queue <> ''`).Scan(&named).Error; err != nil {
		return nil, fmt.Errorf("list queues named by definitions and schedules: %w", err)
	}
	for q := range counts {
		named = append(named, q)
	}
	out := make([]chimedb.QueueState, 0, len(qs))
	for _, q := range qs {
		c := counts[q.q.Name]
		out = append(out, chimedb.QueueState{Queue: q.q, Invalid: q.invalid, Running: c.Running, Waiting: c.Waiting})
	}
	slices.Sort(named)
	for _, name := range slices.Compact(named) {
		if qs[name] == nil {
			c := counts[name]
			out = append(out, chimedb.QueueState{Queue: models.Queue{Name: name}, Missing: true,
				Invalid: "no queues row: its jobs wait until one is created", Running: c.Running, Waiting: c.Waiting})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// GetQueue implements chimedb.AdminQueries.
func (a *Admin) GetQueue(ctx context.Context, name string) (*chimedb.QueueState, error) {
	all, err := a.ListQueues(ctx)
	if err != nil {
		return nil, err
	}
	for i := range all {
		if all[i].Name == name && !all[i].Missing {
			return &all[i], nil
		}
	}
	return nil, fmt.Errorf("queue %q: %w", name, chimedb.ErrNotFound)
}

// PutQueue implements chimedb.AdminQueries. The caller validates q
// (models.CheckQueue); this writes it.
func (a *Admin) PutQueue(ctx context.Context, q *models.Queue) error {
	if r := models.CheckQueue(q); r != "" {
		return fmt.Errorf("queue %q: %s", q.Name, r)
	}
	return a.s.InTx(ctx, func(tx *gorm.DB) error {
		var cur []models.Queue
		if err := a.s.forUpdate(tx.Where("name = ?", q.Name)).Limit(1).Find(&cur).Error; err != nil {
			return fmt.Errorf("read queue %q: %w", q.Name, err)
		}
		if len(cur) == 0 {
			row := *q
			row.RateTatUs = nil
			if err := tx.Create(&row).Error; err != nil {
				return fmt.Errorf("create queue %q: %w", q.Name, conflict(err))
			}
			return nil
		}
		set := map[string]any{"description": q.Description, "max_running": q.MaxRunning, "rate_limit": q.RateLimit,
			"rate_period_ms": q.RatePeriodMs, "paused": q.Paused}
		if !sameInt(cur[0].RateLimit, q.RateLimit) || !sameInt(cur[0].RatePeriodMs, q.RatePeriodMs) {
			set["rate_tat_us"] = nil
		}
		if err := tx.Model(&models.Queue{}).Where("name = ?", q.Name).Updates(set).Error; err != nil {
			return fmt.Errorf("update queue %q: %w", q.Name, err)
		}
		return nil
	})
}

func sameInt(a, b *int64) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// SetQueuePaused implements chimedb.AdminQueries.
func (a *Admin) SetQueuePaused(ctx context.Context, name string, paused bool) (*models.Queue, error) {
	var out models.Queue
	err := a.s.InTx(ctx, func(tx *gorm.DB) error {
		r := tx.Model(&models.Queue{}).Where("name = ?", name).Update("paused", paused)
		if r.Error != nil {
			return fmt.Errorf("pause queue %q: %w", name, r.Error)
		}
		return first(tx.Where("name = ?", name), &out)
	})
	if err != nil {
		return nil, fmt.Errorf("queue %q: %w", name, err)
	}
	return &out, nil
}

// DeleteQueue implements chimedb.AdminQueries.
func (a *Admin) DeleteQueue(ctx context.Context, name string) error {
	if name == models.DefaultQueue {
		return fmt.Errorf("queue %q holds every job whose definition names no other; it is never deleted: %w", name, chimedb.ErrInUse)
	}
	return a.s.InTx(ctx, func(tx *gorm.DB) error {
		var q models.Queue
		if err := first(a.s.forUpdate(tx.Where("name = ?", name)), &q); err != nil {
			return fmt.Errorf("queue %q: %w", name, err)
		}
		var defs, scheds, jobs int64
		if err := tx.Model(&models.JobDefinition{}).Where("queue = ?", name).Count(&defs).Error; err != nil {
			return fmt.Errorf("count definitions of queue %q: %w", name, err)
		}
		if err := tx.Model(&models.Schedule{}).Where("queue = ?", name).Count(&scheds).Error; err != nil {
			return fmt.Errorf("count schedules of queue %q: %w", name, err)
		}
		if err := tx.Model(&models.Job{}).Where("queue = ? AND status IN ?", name,
			[]models.JobStatus{models.JobPending, models.JobQueued, models.JobRunning, models.JobPaused}).Count(&jobs).Error; err != nil {
			return fmt.Errorf("count jobs of queue %q: %w", name, err)
		}
		if defs+scheds+jobs > 0 {
			return fmt.Errorf("queue %q is named by %d definition(s), %d schedule(s) and %d unfinished job(s); move those first: %w",
				name, defs, scheds, jobs, chimedb.ErrInUse)
		}
		if err := tx.Where("name = ?", name).Delete(&models.Queue{}).Error; err != nil {
			return fmt.Errorf("delete queue %q: %w", name, err)
		}
		return nil
	})
}
