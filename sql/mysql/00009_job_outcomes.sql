-- Typed task outcomes (tasks.SkipRetry, tasks.Snooze, tasks.Cancel).
-- jobs.outcome says how the last run ended when the task chose it:
-- 'skip_retry' (failed, not retried though attempts were left), 'snoozed'
-- (back to pending, due at run_at, no attempt used) or 'canceled' (status
-- canceled by the task); '' otherwise, and again once the job is claimed.
-- jobs.snoozes counts the snoozes; past tasks.MaxSnoozes a snooze uses an
-- attempt, so a task that always snoozes cannot loop forever.

-- +goose Up
ALTER TABLE jobs ADD COLUMN outcome VARCHAR(16) NOT NULL DEFAULT '', ADD COLUMN snoozes INT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE jobs DROP COLUMN snoozes, DROP COLUMN outcome;
