-- Every fire inserts a jobs row and every job changes status three or four
-- times, so each secondary index on jobs is paid for on the hottest paths.
-- idx_jobs_node and idx_jobs_finished served queries that idx_jobs_claim
-- (status, run_at) serves as well: the per-node queries always ask for the
-- few live statuses (queued, running, paused), and retention asks for
-- finished statuses with run_at below its cutoff. Dropping them makes a
-- 500-fire transaction about a fifth cheaper.

-- +goose Up
ALTER TABLE jobs DROP INDEX idx_jobs_node, DROP INDEX idx_jobs_finished;

-- +goose Down
ALTER TABLE jobs ADD INDEX idx_jobs_node (node_id, status), ADD INDEX idx_jobs_finished (finished_at);
