-- See the MySQL migration of the same number: jobs.outcome (skip_retry,
-- snoozed, canceled or '') and jobs.snoozes, the count of snoozes.

-- +goose Up
ALTER TABLE jobs ADD COLUMN outcome TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN snoozes INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE jobs DROP COLUMN snoozes;
ALTER TABLE jobs DROP COLUMN outcome;
