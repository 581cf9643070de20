-- Typed task outcomes (tasks.SkipRetry, tasks.Snooze, tasks.Cancel), as in
-- the MySQL and SQLite 00009: jobs.outcome says how the last run ended when
-- the task chose it ('skip_retry', 'snoozed', 'canceled'; '' otherwise),
-- jobs.snoozes counts the snoozes.

-- +goose Up
ALTER TABLE jobs ADD COLUMN outcome VARCHAR(16) NOT NULL DEFAULT '', ADD COLUMN snoozes INT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE jobs DROP COLUMN snoozes, DROP COLUMN outcome;
