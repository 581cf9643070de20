-- The web console's and the API's job list filtered by definition
-- (WHERE job_definition_id = ? ORDER BY id DESC LIMIT n) scanned the
-- primary key until it found a page: a whole-table read, a second or more
-- with a million rows, for a definition with few jobs. Deleting a
-- definition counts its unfinished jobs the same way, under a lock.
-- job_definition_id never changes after insert, so unlike the status
-- indexes 00002 weighed, this one costs only at insert and delete, not at
-- each of a job's status changes.

-- +goose Up
ALTER TABLE jobs ADD INDEX idx_jobs_definition (job_definition_id, id);

-- +goose Down
ALTER TABLE jobs DROP INDEX idx_jobs_definition;
