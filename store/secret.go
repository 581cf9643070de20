package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// PutSecret inserts s, or replaces the ciphertext of the row of its name.
// No transaction: an insert that loses a race to another one of the same
// name replaces that row instead (on PostgreSQL a failed INSERT would
// abort the transaction around it).
func (a *Admin) PutSecret(ctx context.Context, s *models.Secret) (created bool, err error) {
	now := DBTime(time.Now())
	db := a.s.db.WithContext(ctx)
	for range 3 {
		res := db.Model(&models.Secret{}).Where("name = ?", s.Name).
			Updates(map[string]any{"ciphertext": s.Ciphertext, "nonce": s.Nonce, "key_id": s.KeyID, "updated_at": now})
		if res.Error != nil {
			return false, fmt.Errorf("put secret %q: %w", s.Name, res.Error)
		}
		if res.RowsAffected > 0 {
			if err := first(db.Where("name = ?", s.Name), s); err != nil {
				return false, fmt.Errorf("put secret %q: %w", s.Name, err)
			}
			return false, nil
		}
		row := &models.Secret{Name: s.Name, Ciphertext: s.Ciphertext, Nonce: s.Nonce, KeyID: s.KeyID, CreatedAt: now, UpdatedAt: now}
		err := db.Create(row).Error
		if err == nil {
			*s = *row
			return true, nil
		}
		if !errors.Is(conflict(err), chimedb.ErrConflict) {
			return false, fmt.Errorf("put secret %q: %w", s.Name, err)
		}
	}
	return false, fmt.Errorf("put secret %q: %w: written and removed by others meanwhile", s.Name, chimedb.ErrConflict)
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
