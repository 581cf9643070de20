-- See the MySQL migration of the same number: jobs by definition, newest
-- first, without reading the whole table.

-- +goose Up
CREATE INDEX idx_jobs_definition ON jobs (job_definition_id, id);

-- +goose Down
DROP INDEX idx_jobs_definition;
