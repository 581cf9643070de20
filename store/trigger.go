package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
)

func (s *Store) EnsureTriggers(ctx context.Context, p *chimedb.EnsureTriggersParams) error {
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

// groupedTriggerMin is the smallest set of schedules with the same new
// trigger state that advanceTriggers updates with one UPDATE … WHERE
// schedule_id IN (…); smaller sets go through the multi-row upsert.
// groupedTriggerMax bounds how many such UPDATEs one batch runs.
const (
	groupedTriggerMin = 8
	groupedTriggerMax = 8
)

// triggerState is a chimedb.TriggerRow without its schedule: the group key.
type triggerState struct {
	next, last int64 // UnixNano; -1 for NULL
	fired, rem int64 // rem -1 for NULL
	misfired   int64
}

// advanceTriggers writes the absolute new state of the batch's triggers.
// A herd mostly shares one new state (same intended time, same counts), and
// one UPDATE … WHERE schedule_id IN (…) per shared state costs a fraction of
// the equivalent upsert: InnoDB tries an ON DUPLICATE KEY row as an insert
// first (a new auto-increment id, a clustered-index insert rolled back on
// the duplicate) before it updates. A group whose UPDATE matched fewer rows
// than it names (a trigger row the engine has not created yet, or one that
// already held exactly these values) is written again by the upsert, which
// is idempotent; so are the rows in groups too small to be worth it.
func (s *Store) advanceTriggers(tx *gorm.DB, rows []chimedb.TriggerRow, now time.Time) error {
	if len(rows) == 0 {
		return nil
	}
	groups := map[triggerState][]int64{}
	var order []triggerState
	for _, r := range rows {
		k := triggerState{next: -1, last: -1, rem: -1, fired: r.FiredCount, misfired: r.MisfiredCount}
		if r.NextFireAt != nil {
			k.next = r.NextFireAt.UnixNano()
		}
		if r.LastFireAt != nil {
			k.last = r.LastFireAt.UnixNano()
		}
		if r.RemainingCount != nil {
			k.rem = *r.RemainingCount
		}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r.ScheduleID)
	}
	slices.SortStableFunc(order, func(a, b triggerState) int { return len(groups[b]) - len(groups[a]) })
	rowOf := make(map[int64]chimedb.TriggerRow, len(rows))
	for _, r := range rows {
		rowOf[r.ScheduleID] = r
	}
	var rest []chimedb.TriggerRow
	for i, k := range order {
		ids := groups[k]
		if i >= groupedTriggerMax || len(ids) < groupedTriggerMin {
			for _, id := range ids {
				rest = append(rest, rowOf[id])
			}
			continue
		}
		slices.Sort(ids) // id order: concurrent writers lock rows in the same order
		r := rowOf[ids[0]]
		for chunk := range slices.Chunk(ids, scheduleInChunk) {
			in, inArgs := s.idIn("schedule_id", chunk)
			res, err := rawExec(tx, "UPDATE time_triggers SET next_fire_at = ?, last_fire_at = ?, fired_count = ?, remaining_count = ?, misfired_count = ?, updated_at = ? WHERE "+in,
				append([]any{dbTimeOrNil(r.NextFireAt), dbTimeOrNil(r.LastFireAt), r.FiredCount, int64OrNil(r.RemainingCount), r.MisfiredCount, DBTime(now)}, inArgs...)...)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n != int64(len(chunk)) {
				for _, id := range chunk {
					rest = append(rest, rowOf[id])
				}
			}
		}
	}
	for chunk := range slices.Chunk(rest, 500) {
		q, args := s.triggerUpsert(chunk, now, true)
		if _, err := rawExec(tx, q, args...); err != nil {
			return err
		}
	}
	return nil
}

// triggerUpsert builds one multi-row upsert of time_triggers: overwrite
// replaces the firing state, otherwise existing rows are left as they are.
// The spec columns are written only with a new row: SetTriggerSpecs owns
// them afterwards.
func (s *Store) triggerUpsert(rows []chimedb.TriggerRow, now time.Time, overwrite bool) (string, []any) {
	var b strings.Builder
	b.WriteString("INSERT INTO time_triggers (schedule_id, next_fire_at, last_fire_at, fired_count, remaining_count, misfired_count, spec_hash, spec_changed_at, created_at, updated_at) VALUES ")
	args := make([]any, 0, len(rows)*10)
	ts := DBTime(now)
	for i, r := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?,?,?,?,?,?,?,?,?)")
		args = append(args, r.ScheduleID, dbTimeOrNil(r.NextFireAt), dbTimeOrNil(r.LastFireAt), r.FiredCount, int64OrNil(r.RemainingCount), r.MisfiredCount,
			r.SpecHash, dbTimeOrNil(r.SpecChangedAt), ts, ts)
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

func (s *Store) SetTriggerSpecs(ctx context.Context, p *chimedb.SetTriggerSpecsParams) error {
	if len(p.Specs) == 0 {
		return nil
	}
	// Edits are rare and each has its own instant; adopting the rows of an
	// older schema (no instant: the firing state stays as it is) comes in
	// bulk after an upgrade, and those are grouped by hash.
	type adopt struct{ hash string }
	groups := map[adopt][]int64{}
	var order []adopt
	var single []chimedb.TriggerSpec
	for _, sp := range p.Specs {
		if sp.ChangedAt == nil {
			k := adopt{sp.Hash}
			if _, ok := groups[k]; !ok {
				order = append(order, k)
			}
			groups[k] = append(groups[k], sp.ScheduleID)
			continue
		}
		single = append(single, sp)
	}
	ts := DBTime(p.Now)
	err := s.InTx(ctx, func(tx *gorm.DB) error {
		for _, k := range order {
			ids := groups[k]
			slices.Sort(ids)
			for chunk := range slices.Chunk(ids, scheduleInChunk) {
				if _, err := rawExec(tx, "UPDATE time_triggers SET spec_hash = ?, updated_at = ? WHERE spec_hash = '' AND schedule_id IN ("+idList(chunk)+")",
					k.hash, ts); err != nil {
					return err
				}
			}
		}
		slices.SortFunc(single, func(a, b chimedb.TriggerSpec) int { return cmp.Compare(a.ScheduleID, b.ScheduleID) })
		for _, sp := range single {
			if _, err := rawExec(tx, "UPDATE time_triggers SET spec_hash = ?, spec_changed_at = ?, next_fire_at = ?, updated_at = ? WHERE schedule_id = ? AND spec_hash = ?",
				sp.Hash, DBTime(*sp.ChangedAt), dbTimeOrNil(sp.NextFireAt), ts, sp.ScheduleID, sp.From); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record the timing of %d time triggers: %w", len(p.Specs), err)
	}
	return nil
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
