-- Every job changes status at least twice (claim, completion), and each
-- change moves the row in every index that holds status. Since 00012 two
-- did: idx_jobs_claim (status, run_at) and idx_jobs_claim_order
-- (status, claim_key, id), which the claim reads. The second serves every
-- query the first served: any status = / status IN prefix alone, and a
-- run_at bound as a claim_key range, because claim_key lies within five
-- minutes before and four after run_at (00012). The queries that bounded
-- run_at add that claim_key bound. Without the first index a claim and
-- completion cycle costs about a tenth less (docs/benchmarks.md).

-- +goose Up
ALTER TABLE jobs DROP INDEX idx_jobs_claim;

-- +goose Down
ALTER TABLE jobs ADD INDEX idx_jobs_claim (status, run_at);
