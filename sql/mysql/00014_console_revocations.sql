-- Console sessions that were logged out, until the cookie would have
-- expired: every node of the cluster refuses them, also after a restart.
-- A session is a signed cookie (see console/session.go); this table is
-- only the list of those logged out. session_id is the cookie's nonce in
-- hex; expires_at is the cookie's own expiry in Unix seconds, as the
-- cookie carries it, so no time zone applies. Rows past it are deleted at
-- the next logout.

-- +goose Up
CREATE TABLE console_revocations (
  session_id VARCHAR(64) NOT NULL,
  expires_at BIGINT      NOT NULL,
  PRIMARY KEY (session_id),
  KEY idx_console_revocations_expires (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE console_revocations;
