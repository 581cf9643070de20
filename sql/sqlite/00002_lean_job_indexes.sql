-- See the MySQL migration of the same number: idx_jobs_claim serves the
-- per-node and retention queries, and fewer indexes make fires cheaper.

-- +goose Up
DROP INDEX idx_jobs_node;
DROP INDEX idx_jobs_finished;

-- +goose Down
CREATE INDEX idx_jobs_node ON jobs (node_id, status);
CREATE INDEX idx_jobs_finished ON jobs (finished_at);
