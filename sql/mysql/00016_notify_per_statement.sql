-- See the PostgreSQL migration of the same number: its NOTIFY trigger
-- runs once per INSERT instead of once per row. This database has no
-- NOTIFY (the task engines read the jobs table's primary key every
-- taskengine.wake_interval, see store.JobsWatch). Nothing to change; the
-- version keeps the three dialects' numbers in step.

-- +goose Up

-- +goose Down
