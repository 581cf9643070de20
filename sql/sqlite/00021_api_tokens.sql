-- See the MySQL migration of the same number: named API tokens.

-- +goose Up
CREATE TABLE api_tokens (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  name         TEXT     NOT NULL UNIQUE,
  token_sha256 TEXT     NOT NULL UNIQUE,
  role         TEXT     NOT NULL,
  scope        TEXT     NOT NULL DEFAULT '',
  expires_at   DATETIME NULL,
  revoked_at   DATETIME NULL,
  created_at   DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now'))
);

-- +goose Down
DROP TABLE api_tokens;
