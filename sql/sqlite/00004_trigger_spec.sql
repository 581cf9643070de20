-- See the MySQL migration of the same number: what an edit of a schedule's
-- timing starts afresh from.

-- +goose Up
ALTER TABLE time_triggers ADD COLUMN spec_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE time_triggers ADD COLUMN spec_changed_at DATETIME NULL;

-- +goose Down
ALTER TABLE time_triggers DROP COLUMN spec_changed_at;
ALTER TABLE time_triggers DROP COLUMN spec_hash;
