-- See the MySQL migration of the same number: job_definitions.requests_recovery
-- (default on: a job cut off by node loss runs again without using an
-- attempt) and jobs.recoveries, the count of those reruns.

-- +goose Up
ALTER TABLE job_definitions ADD COLUMN requests_recovery BOOLEAN NOT NULL DEFAULT 1;
ALTER TABLE jobs ADD COLUMN recoveries INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE jobs DROP COLUMN recoveries;
ALTER TABLE job_definitions DROP COLUMN requests_recovery;
