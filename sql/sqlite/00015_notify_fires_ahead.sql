-- See the PostgreSQL migration of the same number: it widens the NOTIFY
-- trigger to the jobs of fires prepared ahead. This database has no
-- NOTIFY: the task engines read the jobs table's primary key every
-- taskengine.wake_interval (store.JobsWatch), which sees a job when its
-- transaction commits, whenever it was inserted. Nothing to change; the
-- version keeps the three dialects' numbers in step.

-- +goose Up

-- +goose Down
