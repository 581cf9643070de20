package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
)

func (s *Store) EnsureTriggers(ctx context.Context, p *EnsureTriggersParams) error {
	for chunk := range slices.Chunk(p.Triggers, 500) {
		q, args := s.triggerUpsert(chunk, p.Now, false)
		if err := s.InTx(ctx, func(tx *gorm.DB) error {
			_, err := rawExec(tx, q, args...)
			return err
		}); err != nil {
			return fmt.Errorf("create time triggers: %w", err)
		}
	}
	return nil
}

// triggerUpsert builds one multi-row upsert of time_triggers: overwrite
// replaces the state, otherwise existing rows are left as they are.
func (s *Store) triggerUpsert(rows []TriggerRow, now time.Time, overwrite bool) (string, []any) {
	var b strings.Builder
	b.WriteString("INSERT INTO time_triggers (schedule_id, next_fire_at, last_fire_at, fired_count, remaining_count, misfired_count, created_at, updated_at) VALUES ")
	args := make([]any, 0, len(rows)*8)
	ts := DBTime(now)
	for i, r := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?,?,?,?,?,?,?)")
		args = append(args, r.ScheduleID, dbTimeOrNil(r.NextFireAt), dbTimeOrNil(r.LastFireAt), r.FiredCount, int64OrNil(r.RemainingCount), r.MisfiredCount, ts, ts)
	}
	set := []string{"next_fire_at", "last_fire_at", "fired_count", "remaining_count", "misfired_count", "updated_at"}
	mysql := s.dialect == MySQL
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

func dbTimeOrNil(t *time.Time) any {
	if t == nil {
		return nil
	}
	return DBTime(*t)
}

func int64OrNil(v *int64) any {
	if v == nil {
		return nil
	}
	return *v
}
