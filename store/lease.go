package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"
)

func (s *Store) AcquireLeaseAt(ctx context.Context, p *LeaseParams) (bool, error) {
	now := DBTime(p.Now)
	var holder string
	err := s.InTx(ctx, func(tx *gorm.DB) error {
		ins := "INSERT INTO leases (name, holder, expires_at) VALUES (?, '', ?) "
		if s.dialect == MySQL {
			ins += "ON DUPLICATE KEY UPDATE name = name"
		} else {
			ins += "ON CONFLICT (name) DO NOTHING"
		}
		if _, err := rawExec(tx, ins, p.Name, now); err != nil {
			return err
		}
		if _, err := rawExec(tx, "UPDATE leases SET holder = ?, expires_at = ? WHERE name = ? AND (holder = ? OR holder = '' OR expires_at < ?)",
			p.Holder, DBTime(p.Now.Add(p.TTL)), p.Name, p.Holder, now); err != nil {
			return err
		}
		return tx.Statement.ConnPool.QueryRowContext(tx.Statement.Context, "SELECT holder FROM leases WHERE name = ?", p.Name).Scan(&holder)
	})
	if err != nil {
		return false, fmt.Errorf("acquire lease %q: %w", p.Name, err)
	}
	return holder == p.Holder, nil
}

func (s *Store) ReleaseLeaseAt(ctx context.Context, p *LeaseParams) error {
	_, err := s.sqlDB.ExecContext(ctx, "UPDATE leases SET holder = '', expires_at = ? WHERE name = ? AND holder = ?",
		DBTime(p.Now), p.Name, p.Holder)
	if err != nil {
		return fmt.Errorf("release lease %q: %w", p.Name, err)
	}
	return nil
}
