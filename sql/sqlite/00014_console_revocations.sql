-- See the MySQL migration of the same number: logged-out console sessions.

-- +goose Up
CREATE TABLE console_revocations (
  session_id TEXT    NOT NULL PRIMARY KEY,
  expires_at INTEGER NOT NULL
);
CREATE INDEX idx_console_revocations_expires ON console_revocations (expires_at);

-- +goose Down
DROP TABLE console_revocations;
