package store

import (
	"context"
	"fmt"
	"time"
)

// RevokeSession records that the console session id (its cookie's nonce)
// was logged out, so that every node refuses its cookie, also after a
// restart, until expires, the cookie's own expiry. It deletes the rows
// whose cookies have expired by now on the way: the table holds at most
// the logouts of one session lifetime.
func (s *Store) RevokeSession(ctx context.Context, id string, expires, now time.Time) error {
	insert := `INSERT INTO console_revocations (session_id, expires_at) VALUES (?, ?) ON CONFLICT (session_id) DO NOTHING`
	if s.dialect == MySQL {
		insert = `INSERT INTO console_revocations (session_id, expires_at) VALUES (?, ?) ON DUPLICATE KEY UPDATE session_id = session_id`
	}
	if err := s.db.WithContext(ctx).Exec(insert, id, expires.Unix()).Error; err != nil {
		return fmt.Errorf("revoke console session: %w", err)
	}
	if err := s.db.WithContext(ctx).Exec(`DELETE FROM console_revocations WHERE expires_at < ?`, now.Unix()).Error; err != nil {
		return fmt.Errorf("delete expired console session revocations: %w", err)
	}
	return nil
}

// SessionRevoked reports whether the console session id was logged out.
func (s *Store) SessionRevoked(ctx context.Context, id string) (bool, error) {
	var n int64
	if err := s.db.WithContext(ctx).Raw(`SELECT COUNT(*) FROM console_revocations WHERE session_id = ?`, id).Scan(&n).Error; err != nil {
		return false, fmt.Errorf("read console session revocations: %w", err)
	}
	return n > 0, nil
}
