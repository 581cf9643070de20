package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// CreateToken inserts t, a named API token; ErrConflict when its name or
// hash is taken. created_at is now.
func (a *Admin) CreateToken(ctx context.Context, t *models.APIToken) error {
	t.ID, t.CreatedAt = 0, DBTime(time.Now())
	if t.ExpiresAt != nil {
		e := DBTime(*t.ExpiresAt)
		t.ExpiresAt = &e
	}
	err := a.s.audited(ctx, func(tx *gorm.DB) error {
		t.ID = 0
		return tx.Create(t).Error
	})
	if err != nil {
		return fmt.Errorf("create API token %q: %w", t.Name, conflict(err))
	}
	return nil
}

// ListTokens lists every API token by name.
func (a *Admin) ListTokens(ctx context.Context) ([]models.APIToken, error) {
	var out []models.APIToken
	if err := a.s.db.WithContext(ctx).Order("name").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list API tokens: %w", err)
	}
	return out, nil
}

// TokenByHash returns the API token whose token_sha256 is hash, or
// chimedb.ErrNotFound. The unique key on token_sha256 serves it.
func (a *Admin) TokenByHash(ctx context.Context, hash string) (*models.APIToken, error) {
	var t models.APIToken
	if err := first(a.s.db.WithContext(ctx).Where("token_sha256 = ?", hash), &t); err != nil {
		return nil, fmt.Errorf("API token: %w", err)
	}
	return &t, nil
}

// RevokeToken sets revoked_at of the token named name to at, unless it was
// revoked before, and returns the row.
func (a *Admin) RevokeToken(ctx context.Context, name string, at time.Time) (*models.APIToken, error) {
	db := a.s.db.WithContext(ctx)
	if err := a.s.audited(ctx, func(tx *gorm.DB) error {
		return tx.Model(&models.APIToken{}).Where("name = ? AND revoked_at IS NULL", name).
			Update("revoked_at", DBTime(at)).Error
	}); err != nil {
		return nil, fmt.Errorf("revoke API token %q: %w", name, err)
	}
	var t models.APIToken
	if err := first(db.Where("name = ?", name), &t); err != nil {
		return nil, fmt.Errorf("API token %q: %w", name, err)
	}
	return &t, nil
}

var _ chimedb.AdminQueries = (*Admin)(nil)
