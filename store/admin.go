package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// Admin holds the queries behind the admin API: lists, plain CRUD and the
// control requests an admin sends to jobs. They live on their own type so
// their names cannot clash with the engines' hot-path queries on Store.
type Admin struct{ s *Store }

// Admin returns the admin queries of s.
func (s *Store) Admin() chimedb.AdminQueries { return &Admin{s: s} }

// pageQuery is the query of one page of a list.
func (a *Admin) pageQuery(ctx context.Context, p *chimedb.AdminListParams, timeCol string) *gorm.DB {
	q := a.s.db.WithContext(ctx).Order("id DESC").Limit(max(p.Limit, 1))
	if p.BeforeID > 0 {
		q = q.Where("id < ?", p.BeforeID)
	}
	if p.Name != "" {
		q = q.Where("name = ?", p.Name)
	}
	if p.NameContains != "" {
		q = q.Where(`name LIKE ? ESCAPE '!'`, "%"+likeEscape(p.NameContains)+"%")
	}
	if p.Status != "" {
		q = q.Where("status = ?", p.Status)
	}
	if p.ScheduleID != 0 {
		q = q.Where("schedule_id = ?", p.ScheduleID)
	}
	if p.JobDefinitionID != 0 {
		q = q.Where("job_definition_id = ?", p.JobDefinitionID)
	}
	// Times go through DBTime: SQLite compares them as text.
	if !p.Since.IsZero() {
		q = q.Where(timeCol+" >= ?", DBTime(p.Since))
	}
	if !p.Until.IsZero() {
		q = q.Where(timeCol+" < ?", DBTime(p.Until))
	}
	return q
}

// likeEscape escapes s for LIKE ... ESCAPE '!': a backslash means
// different things to MySQL and SQLite.
func likeEscape(s string) string {
	return strings.NewReplacer("!", "!!", "%", "!%", "_", "!_").Replace(s)
}

// inScope narrows q, a query of rows with a job_definition_id (column
// col), to the definitions whose name starts with prefix.
func inScope(q *gorm.DB, col, prefix string) *gorm.DB {
	if prefix == "" {
		return q
	}
	return q.Where(col+` IN (SELECT id FROM job_definitions WHERE name LIKE ? ESCAPE '!')`, likeEscape(prefix)+"%")
}

// ListDefinitions returns a page of job_definitions.
func (a *Admin) ListDefinitions(ctx context.Context, p *chimedb.AdminListParams) ([]models.JobDefinition, error) {
	var out []models.JobDefinition
	q := a.pageQuery(ctx, p, "created_at")
	if p.DefinitionPrefix != "" {
		q = q.Where(`name LIKE ? ESCAPE '!'`, likeEscape(p.DefinitionPrefix)+"%")
	}
	if err := q.Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list job definitions: %w", err)
	}
	return out, nil
}

// ListSchedules returns a page of schedules.
func (a *Admin) ListSchedules(ctx context.Context, p *chimedb.AdminListParams) ([]models.Schedule, error) {
	var out []models.Schedule
	if err := inScope(a.pageQuery(ctx, p, "created_at"), "job_definition_id", p.DefinitionPrefix).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	return out, nil
}

// ListJobs returns a page of jobs; Since and Until bound scheduled_at. A
// row written without the API that chime cannot run as it is comes back
// with Unreadable set (see shownJobs).
func (a *Admin) ListJobs(ctx context.Context, p *chimedb.AdminListParams) ([]models.Job, error) {
	out, err := shownJobs(inScope(a.pageQuery(ctx, p, "scheduled_at"), "job_definition_id", p.DefinitionPrefix).Model(&models.Job{}))
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return out, nil
}

// ListJobLogs returns up to limit lines of job jobID after position
// afterID, oldest first: a log reads as a story, and a follower polls with
// the position of the last line it saw. Served by idx_job_logs_job
// (job_id, id). A succeeded job's last line is derived from its row
// (models.SucceededLine) and comes last, with id models.OutcomeLogID, once
// the walk has reached the end; the position after it is
// models.LogPositionPastOutcome of the last stored line before it, so
// lines stored later are still listed after it, and it is not listed
// twice (see models.SplitLogPosition).
//
// The row is read before the lines. The task engine writes a job's lines
// in or before the transaction that finishes it, so a row read as
// succeeded means every line up to the end is there for the read that
// follows; read the other way round, a job finishing between the reads
// would show its derived line without its lines, and the follower's
// position would pass them.
func (a *Admin) ListJobLogs(ctx context.Context, jobID, afterID int64, limit int) ([]models.JobLog, error) {
	limit = max(limit, 1)
	stored, outcomeSeen := models.SplitLogPosition(afterID)
	var (
		outcome    models.JobLog
		hasOutcome bool
		err        error
	)
	if !outcomeSeen {
		if outcome, hasOutcome, err = a.s.succeededLine(ctx, jobID); err != nil {
			return nil, fmt.Errorf("list logs of job %d: %w", jobID, err)
		}
	}
	var out []models.JobLog
	err = a.s.db.WithContext(ctx).Where("job_id = ? AND id > ?", jobID, stored).
		Order("id ASC").Limit(limit).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("list logs of job %d: %w", jobID, err)
	}
	if hasOutcome && len(out) < limit {
		stale, err := a.s.succeededRowStored(ctx, jobID)
		if err != nil {
			return nil, fmt.Errorf("list logs of job %d: %w", jobID, err)
		}
		if !stale {
			out = append(out, outcome)
		}
	}
	return out, nil
}

// ListNodes returns every node row, the most recently started first.
func (a *Admin) ListNodes(ctx context.Context) ([]models.Node, error) {
	var out []models.Node
	if err := a.s.db.WithContext(ctx).Order("started_at DESC, id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	return out, nil
}

// ListConfigurations returns every configuration row by name.
func (a *Admin) ListConfigurations(ctx context.Context) ([]models.Configuration, error) {
	var out []models.Configuration
	if err := a.s.db.WithContext(ctx).Order("name").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list configurations: %w", err)
	}
	return out, nil
}

// GetConfiguration returns one configuration row or chimedb.ErrNotFound.
func (a *Admin) GetConfiguration(ctx context.Context, name string) (*models.Configuration, error) {
	var c models.Configuration
	if err := first(a.s.db.WithContext(ctx).Where("name = ?", name), &c); err != nil {
		return nil, fmt.Errorf("configuration %q: %w", name, err)
	}
	return &c, nil
}

// SetConfiguration inserts or replaces the row named c.Name.
func (a *Admin) SetConfiguration(ctx context.Context, c *models.Configuration) error {
	c.UpdatedAt = DBTime(time.Now())
	err := a.s.audited(ctx, func(tx *gorm.DB) error {
		return tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "name"}},
			DoUpdates: clause.AssignmentColumns([]string{"value", "description", "updated_at"}),
		}).Create(c).Error
	})
	if err != nil {
		return fmt.Errorf("set configuration %q: %w", c.Name, err)
	}
	return nil
}

// conflict makes gorm's duplicate-key error match chimedb.ErrConflict too, so that
// callers need not know gorm; gorm's stays in the chain for the log.
func conflict(err error) error {
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return fmt.Errorf("%w (%w)", chimedb.ErrConflict, err)
	}
	return err
}

// first reads one row into out, turning gorm's not-found into chimedb.ErrNotFound.
func first(q *gorm.DB, out any) error {
	err := q.Limit(1).Find(out)
	if err.Error != nil {
		return err.Error
	}
	if err.RowsAffected == 0 {
		return chimedb.ErrNotFound
	}
	return nil
}

// GetDefinition returns one job definition or chimedb.ErrNotFound.
func (a *Admin) GetDefinition(ctx context.Context, id int64) (*models.JobDefinition, error) {
	var d models.JobDefinition
	if err := first(a.s.db.WithContext(ctx).Where("id = ?", id), &d); err != nil {
		return nil, fmt.Errorf("job definition %d: %w", id, err)
	}
	return &d, nil
}

// CreateDefinition inserts d and fills its id and times. A duplicate name
// returns an error wrapping chimedb.ErrConflict.
func (a *Admin) CreateDefinition(ctx context.Context, d *models.JobDefinition) error {
	now := DBTime(time.Now())
	d.ID, d.CreatedAt, d.UpdatedAt = 0, now, now
	err := a.s.audited(ctx, func(tx *gorm.DB) error {
		d.ID = 0
		return tx.Create(d).Error
	})
	if err != nil {
		return fmt.Errorf("create job definition %q: %w", d.Name, conflict(err))
	}
	return nil
}

var definitionColumns = []string{"name", "task_type", "description", "default_params", "timeout_seconds",
	"max_attempts", "retry_backoff_seconds", "notify_on", "notify_emails", "requests_recovery", "priority", "queue", "max_running", "required_tags", "broadcast", "rate_limit", "rate_period_ms", "rate_tat_us", "updated_at"}

// UpdateDefinition writes every admin-owned column of d (row d.ID); a
// duplicate name wraps chimedb.ErrConflict.
func (a *Admin) UpdateDefinition(ctx context.Context, d *models.JobDefinition) error {
	d.UpdatedAt = DBTime(time.Now())
	var r *gorm.DB
	err := a.s.audited(ctx, func(tx *gorm.DB) error {
		r = tx.Model(&models.JobDefinition{}).Where("id = ?", d.ID).Select(definitionColumns).Updates(d)
		return r.Error
	})
	if err != nil {
		return fmt.Errorf("update job definition %d: %w", d.ID, conflict(err))
	}
	if r.RowsAffected == 0 {
		return fmt.Errorf("job definition %d: %w", d.ID, chimedb.ErrNotFound)
	}
	return nil
}

// DeleteDefinition deletes definition id unless a schedule or an
// unfinished job still refers to it (chimedb.ErrInUse): deleting it would leave
// them unable to run.
func (a *Admin) DeleteDefinition(ctx context.Context, id int64) error {
	return a.s.InTx(ctx, func(tx *gorm.DB) error {
		var d models.JobDefinition
		// Locking the row orders this delete with a concurrent schedule
		// create, which locks it too (see CreateSchedule).
		if err := first(a.s.forUpdate(tx.Where("id = ?", id)), &d); err != nil {
			return fmt.Errorf("job definition %d: %w", id, err)
		}
		var schedules, jobs int64
		if err := tx.Model(&models.Schedule{}).Where("job_definition_id = ?", id).Count(&schedules).Error; err != nil {
			return fmt.Errorf("count schedules of job definition %d: %w", id, err)
		}
		if err := tx.Model(&models.Job{}).Where("job_definition_id = ? AND status IN ?", id, unfinishedStatuses).
			Count(&jobs).Error; err != nil {
			return fmt.Errorf("count jobs of job definition %d: %w", id, err)
		}
		if schedules > 0 || jobs > 0 {
			return fmt.Errorf("job definition %d is used by %d schedule(s) and %d unfinished job(s); delete or move those first: %w",
				id, schedules, jobs, chimedb.ErrInUse)
		}
		if err := tx.Delete(&models.JobDefinition{}, id).Error; err != nil {
			return fmt.Errorf("delete job definition %d: %w", id, err)
		}
		return nil
	})
}

var unfinishedStatuses = []models.JobStatus{models.JobPending, models.JobQueued, models.JobRunning, models.JobPaused}

// SetNodeDrain asks node id to drain or to claim again (see
// chimedb.AdminQueries); a node draining or drained already stays so.
func (a *Admin) SetNodeDrain(ctx context.Context, id string, drain bool) (*models.Node, error) {
	db := a.s.db.WithContext(ctx)
	var res *gorm.DB
	if drain {
		res = db.Exec("UPDATE nodes SET drain = ? WHERE id = ? AND drain NOT IN ?", models.NodeDraining, id,
			[]string{models.NodeDraining, models.NodeDrained})
	} else {
		res = db.Exec("UPDATE nodes SET drain = '' WHERE id = ?", id)
	}
	if res.Error != nil {
		return nil, fmt.Errorf("set the drain of node %s: %w", id, res.Error)
	}
	var n models.Node
	err := db.Where("id = ?", id).Take(&n).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, fmt.Errorf("node %q: %w", id, chimedb.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read node %s: %w", id, err)
	}
	return &n, nil
}
