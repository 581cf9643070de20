-- See the MySQL migration of the same number: idx_jobs_claim_order
-- (status, claim_key, id) serves every query idx_jobs_claim (status, run_at)
-- served, and each index holding status is paid for at every status change.
-- On PostgreSQL it also made every status change a non-HOT update; with
-- idx_jobs_claim_order left that is still so, but one index fewer is moved.

-- +goose Up
DROP INDEX idx_jobs_claim;

-- +goose Down
CREATE INDEX idx_jobs_claim ON jobs (status, run_at);
