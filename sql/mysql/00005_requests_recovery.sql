-- requests_recovery (Quartz's "requests recovery"): whether a job cut off by
-- the loss of its node (the node died, or the reconciler found the job
-- without a heartbeat) runs again without using an attempt. TRUE, the
-- default, is the README's at-least-once execution; FALSE fails such a job
-- with the reason, unless it has attempts left, which it then uses.
-- jobs.recoveries counts those free reruns; past a cap (store.MaxRecoveries)
-- a job that takes its node down each time is treated as if recovery were
-- off, so it cannot loop forever.

-- +goose Up
ALTER TABLE job_definitions ADD COLUMN requests_recovery TINYINT(1) NOT NULL DEFAULT 1;
ALTER TABLE jobs ADD COLUMN recoveries INT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE jobs DROP COLUMN recoveries;
ALTER TABLE job_definitions DROP COLUMN requests_recovery;
