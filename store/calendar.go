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

// maxCalendars bounds ListCalendars: calendars are few, kept whole.
const maxCalendars = 10_000

// ListCalendars returns every calendar, by name.
func (a *Admin) ListCalendars(ctx context.Context) ([]models.Calendar, error) {
	var out []models.Calendar
	if err := a.s.db.WithContext(ctx).Order("name").Limit(maxCalendars).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list calendars: %w", err)
	}
	return out, nil
}

// GetCalendar returns one calendar or chimedb.ErrNotFound.
func (a *Admin) GetCalendar(ctx context.Context, id int64) (*models.Calendar, error) {
	var c models.Calendar
	if err := first(a.s.db.WithContext(ctx).Where("id = ?", id), &c); err != nil {
		return nil, fmt.Errorf("calendar %d: %w", id, err)
	}
	return &c, nil
}

// GetCalendarByName returns the calendar called name or chimedb.ErrNotFound.
func (a *Admin) GetCalendarByName(ctx context.Context, name string) (*models.Calendar, error) {
	var c models.Calendar
	if err := first(a.s.db.WithContext(ctx).Where("name = ?", name), &c); err != nil {
		return nil, fmt.Errorf("calendar %q: %w", name, err)
	}
	return &c, nil
}

// Calendars returns the calendars of the given ids by id; ids naming none
// are left out.
func (a *Admin) Calendars(ctx context.Context, ids []int64) (map[int64]*models.Calendar, error) {
	return calendarsByID(a.s.db.WithContext(ctx), ids)
}

func calendarsByID(db *gorm.DB, ids []int64) (map[int64]*models.Calendar, error) {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	out := make(map[int64]*models.Calendar, len(ids))
	for chunk := range slices.Chunk(ids, scheduleInChunk) {
		var rows []models.Calendar
		if err := db.Where("id IN ?", chunk).Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("load calendars: %w", err)
		}
		for i := range rows {
			out[rows[i].ID] = &rows[i]
		}
	}
	return out, nil
}

// CreateCalendar inserts c and fills its id and times. A duplicate name
// wraps gorm.ErrDuplicatedKey.
func (a *Admin) CreateCalendar(ctx context.Context, c *models.Calendar) error {
	now := DBTime(time.Now())
	c.ID, c.CreatedAt, c.UpdatedAt = 0, now, now
	err := a.s.audited(ctx, func(tx *gorm.DB) error {
		c.ID = 0
		return tx.Create(c).Error
	})
	if err != nil {
		return fmt.Errorf("create calendar %q: %w", c.Name, conflict(err))
	}
	return nil
}

var calendarColumns = []string{"name", "kind", "definition", "timezone", "description", "updated_at"}

// UpdateCalendar writes every column of c (row c.ID). The engine sees the
// change through the calendar's updated_at (LoadSchedules reads the
// schedules of calendars changed since its watermark).
func (a *Admin) UpdateCalendar(ctx context.Context, c *models.Calendar) error {
	c.UpdatedAt = DBTime(time.Now())
	var r *gorm.DB
	err := a.s.audited(ctx, func(tx *gorm.DB) error {
		r = tx.Model(&models.Calendar{}).Where("id = ?", c.ID).Select(calendarColumns).Updates(c)
		return r.Error
	})
	if err != nil {
		return fmt.Errorf("update calendar %d: %w", c.ID, conflict(err))
	}
	if r.RowsAffected == 0 {
		return fmt.Errorf("calendar %d: %w", c.ID, chimedb.ErrNotFound)
	}
	return nil
}

// DeleteCalendar deletes calendar id unless a schedule names it (chimedb.ErrInUse).
func (a *Admin) DeleteCalendar(ctx context.Context, id int64) error {
	return a.s.InTx(ctx, func(tx *gorm.DB) error {
		var c models.Calendar
		// Locked as CreateSchedule locks it, so no schedule starts naming
		// it while it goes.
		if err := first(a.s.forUpdate(tx.Where("id = ?", id)), &c); err != nil {
			return fmt.Errorf("calendar %d: %w", id, err)
		}
		var n int64
		if err := tx.Model(&models.Schedule{}).Where("calendar_id = ?", id).Count(&n).Error; err != nil {
			return fmt.Errorf("count schedules of calendar %d: %w", id, err)
		}
		if n > 0 {
			return fmt.Errorf("calendar %q is used by %d schedule(s); change or delete those first: %w", c.Name, n, chimedb.ErrInUse)
		}
		if err := tx.Delete(&models.Calendar{}, id).Error; err != nil {
			return fmt.Errorf("delete calendar %d: %w", id, err)
		}
		return nil
	})
}

func (a *Admin) lockCalendar(tx *gorm.DB, id *int64) error {
	if id == nil {
		return nil
	}
	var c models.Calendar
	err := first(a.s.forUpdate(tx.Select("id").Where("id = ?", *id)), &c)
	if errors.Is(err, chimedb.ErrNotFound) {
		return fmt.Errorf("calendar %d: %w", *id, chimedb.ErrNoCalendar)
	}
	if err != nil {
		return fmt.Errorf("lock calendar %d: %w", *id, err)
	}
	return nil
}
