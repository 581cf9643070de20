package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// The audit triggers (migration 00027) record, for a change made in a
// transaction chime marked, the mark's actor and door; for any other, the
// database user and door "sql". markAudit sets the mark at the start of
// the transaction, unmarkAudit takes it away before the commit.
//
// PostgreSQL: set_config(..., true) lasts until the transaction ends,
// however it ends. MySQL: session variables, which outlive the
// transaction, so unmarkAudit clears them; a transaction that fails
// between the two leaves them on its pooled connection, and the next
// marked transaction there overwrites them — every write of chime's to an
// admin table is marked (engine's own as EngineActor), so a stale mark is
// never read. SQLite: a row of audit_marker, inserted and deleted inside
// the transaction; SQLite has one writer at a time, so no other session
// ever sees it.
func (s *Store) markAudit(tx *gorm.DB, a chimedb.Actor) error {
	var err error
	switch s.dialect {
	case Postgres:
		err = tx.Exec("SELECT set_config('chime.actor', ?, true), set_config('chime.door', ?, true)", a.Name, a.Door).Error
	case MySQL:
		err = tx.Exec("SET @chime_actor = ?, @chime_door = ?", a.Name, a.Door).Error
	default:
		err = tx.Exec("INSERT INTO audit_marker (actor, door) VALUES (?, ?)", a.Name, a.Door).Error
	}
	if err != nil {
		return fmt.Errorf("mark the transaction for the audit log: %w", err)
	}
	return nil
}

func (s *Store) unmarkAudit(tx *gorm.DB) error {
	var err error
	switch s.dialect {
	case Postgres:
		return nil
	case MySQL:
		err = tx.Exec("SET @chime_actor = NULL, @chime_door = NULL").Error
	default:
		err = tx.Exec("DELETE FROM audit_marker").Error
	}
	if err != nil {
		return fmt.Errorf("unmark the transaction for the audit log: %w", err)
	}
	return nil
}

// audited runs fn, a write to admin tables, in a transaction marked with
// ctx's actor, or, when ctx carries none, on the pool as before (the
// triggers then record door "sql": only tests and tools write so).
func (s *Store) audited(ctx context.Context, fn func(tx *gorm.DB) error) error {
	if _, ok := chimedb.ActorOf(ctx); !ok {
		return fn(s.db.WithContext(ctx))
	}
	return s.InTx(ctx, fn)
}

// ListAudit returns one page of the audit log, newest first.
func (s *Store) ListAudit(ctx context.Context, p *chimedb.AuditListParams) ([]models.AuditEntry, error) {
	q := s.db.WithContext(ctx).Model(&models.AuditEntry{})
	if p.BeforeID > 0 {
		q = q.Where("id < ?", p.BeforeID)
	}
	if p.ObjectType != "" {
		q = q.Where("object_type = ?", p.ObjectType)
	}
	if p.ObjectID != "" {
		q = q.Where("object_id = ?", p.ObjectID)
	}
	if p.Actor != "" {
		q = q.Where("actor = ?", p.Actor)
	}
	if !p.Since.IsZero() {
		q = q.Where("at >= ?", DBTime(p.Since))
	}
	if !p.Until.IsZero() {
		q = q.Where("at < ?", DBTime(p.Until))
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	var out []models.AuditEntry
	if err := q.Order("id DESC").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list the audit log: %w", err)
	}
	return out, nil
}

// DeleteOldAudit deletes at most batch audit rows older than olderThan by
// the database's clock, oldest first, and returns how many went.
func (s *Store) DeleteOldAudit(ctx context.Context, olderThan time.Duration, batch int) (int, error) {
	if err := checkAge(olderThan); err != nil {
		return 0, fmt.Errorf("delete old audit rows: %w", err)
	}
	if batch <= 0 {
		batch = 500
	}
	now, err := s.DBNow(ctx)
	if err != nil {
		return 0, err
	}
	var ids []int64
	if err := s.db.WithContext(ctx).Raw("SELECT id FROM audit_log WHERE at < ? ORDER BY id LIMIT ?", now.Add(-olderThan), batch).
		Scan(&ids).Error; err != nil {
		return 0, fmt.Errorf("select old audit rows: %w", err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	res := s.db.WithContext(ctx).Exec("DELETE FROM audit_log WHERE id IN ?", ids)
	if res.Error != nil {
		return 0, fmt.Errorf("delete old audit rows: %w", res.Error)
	}
	return int(res.RowsAffected), nil
}

var _ chimedb.AuditStore = (*Store)(nil)
