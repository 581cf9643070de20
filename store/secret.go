package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// PutSecret inserts s, or replaces the ciphertext of the row of its name.
// An insert that loses a race to another one of the same name replaces
// that row instead.
func (a *Admin) PutSecret(ctx context.Context, s *models.Secret) (created bool, err error) {
	now := DBTime(time.Now())
	err = a.s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for range 2 {
			res := tx.Model(&models.Secret{}).Where("name = ?", s.Name).
				Updates(map[string]any{"ciphertext": s.Ciphertext, "nonce": s.Nonce, "key_id": s.KeyID, "updated_at": now})
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected > 0 {
				created = false
				return first(tx.Where("name = ?", s.Name), s)
			}
			row := &models.Secret{Name: s.Name, Ciphertext: s.Ciphertext, Nonce: s.Nonce, KeyID: s.KeyID, CreatedAt: now, UpdatedAt: now}
			err := tx.Create(row).Error
			if err == nil {
				*s, created = *row, true
				return nil
			}
			if !errors.Is(conflict(err), chimedb.ErrConflict) {
				return err
			}
		}
		return fmt.Errorf("%w: written and removed by others meanwhile", chimedb.ErrConflict)
	})
	if err != nil {
		return false, fmt.Errorf("put secret %q: %w", s.Name, err)
	}
	return created, nil
}

// GetSecret returns the secret named name, or chimedb.ErrNotFound.
func (a *Admin) GetSecret(ctx context.Context, name string) (*models.Secret, error) {
	var s models.Secret
	if err := first(a.s.db.WithContext(ctx).Where("name = ?", name), &s); err != nil {
		return nil, fmt.Errorf("secret %q: %w", name, err)
	}
	return &s, nil
}

// ListSecrets lists every secret by name.
func (a *Admin) ListSecrets(ctx context.Context) ([]models.Secret, error) {
	var out []models.Secret
	if err := a.s.db.WithContext(ctx).Order("name").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	return out, nil
}

// DeleteSecret deletes the secret named name; chimedb.ErrNotFound.
func (a *Admin) DeleteSecret(ctx context.Context, name string) error {
	res := a.s.db.WithContext(ctx).Where("name = ?", name).Delete(&models.Secret{})
	if res.Error != nil {
		return fmt.Errorf("delete secret %q: %w", name, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("secret %q: %w", name, chimedb.ErrNotFound)
	}
	return nil
}

// RecryptSecret replaces the ciphertext of s.Name's row while its nonce
// is oldNonce.
func (a *Admin) RecryptSecret(ctx context.Context, s *models.Secret, oldNonce string) (bool, error) {
	res := a.s.db.WithContext(ctx).Model(&models.Secret{}).Where("name = ? AND nonce = ?", s.Name, oldNonce).
		Updates(map[string]any{"ciphertext": s.Ciphertext, "nonce": s.Nonce, "key_id": s.KeyID, "updated_at": DBTime(time.Now())})
	if res.Error != nil {
		return false, fmt.Errorf("re-encrypt secret %q: %w", s.Name, res.Error)
	}
	return res.RowsAffected > 0, nil
}
