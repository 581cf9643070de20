-- See the MySQL migration of the same number: logged-out console sessions.

-- +goose Up
CREATE TABLE console_revocations (
  session_id VARCHAR(64) NOT NULL PRIMARY KEY,
  expires_at BIGINT      NOT NULL
);
CREATE INDEX idx_console_revocations_expires ON console_revocations (expires_at);

-- +goose Down
DROP TABLE console_revocations;
