-- See the MySQL migration of the same number: idx_jobs_claim_order
-- (status, claim_key, id) serves every query idx_jobs_claim (status, run_at)
-- served, and each index holding status is paid for at every status change.
-- A status change stays a non-HOT update here (idx_jobs_claim_order holds
-- status), but writes one index entry fewer.

-- +goose Up
DROP INDEX idx_jobs_claim;

-- +goose Down
CREATE INDEX idx_jobs_claim ON jobs (status, run_at);
