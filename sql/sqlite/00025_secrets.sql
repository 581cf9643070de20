-- See the MySQL migration of the same number: secrets, encrypted.

-- +goose Up
CREATE TABLE secrets (
  id         INTEGER  PRIMARY KEY AUTOINCREMENT,
  name       TEXT     NOT NULL UNIQUE,
  ciphertext TEXT     NOT NULL,
  nonce      TEXT     NOT NULL,
  key_id     TEXT     NOT NULL,
  created_at DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now')),
  updated_at DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now'))
);
CREATE INDEX idx_secrets_key_id ON secrets (key_id);

-- +goose Down
DROP TABLE secrets;
