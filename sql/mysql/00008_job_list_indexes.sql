-- Two filters of the job list (the API's and the web console's) read the
-- whole table with a long history: by definition
-- (WHERE job_definition_id = ? ORDER BY id DESC LIMIT n) when the
-- definition has few jobs, and by time (WHERE scheduled_at >= ?) when the
-- window holds few jobs. With 1,000,000 rows each took about a second
-- (docs/benchmarks.md, "Web console"). Deleting a definition also counts
-- its unfinished jobs by job_definition_id, under a lock.
-- Neither column changes after the row is inserted, so unlike the status
-- indexes 00002 weighed, these cost at insert and delete only, not at each
-- of a job's status changes.

-- +goose Up
ALTER TABLE jobs ADD INDEX idx_jobs_definition (job_definition_id, id), ADD INDEX idx_jobs_scheduled (scheduled_at);

-- +goose Down
ALTER TABLE jobs DROP INDEX idx_jobs_definition, DROP INDEX idx_jobs_scheduled;
