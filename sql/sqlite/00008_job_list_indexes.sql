-- See the MySQL migration of the same number: the job list by definition
-- and by time without reading the whole table.

-- +goose Up
CREATE INDEX idx_jobs_definition ON jobs (job_definition_id, id);
CREATE INDEX idx_jobs_scheduled ON jobs (scheduled_at);

-- +goose Down
DROP INDEX idx_jobs_scheduled;
DROP INDEX idx_jobs_definition;
