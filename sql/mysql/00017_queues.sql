-- Queues: cluster-wide limits on how many jobs run at once and how fast
-- they start (issue 26). A job's queue is jobs.queue when set (an ad hoc
-- job's override), else its schedule's schedules.queue when set, else its
-- definition's job_definitions.queue; NULL or '' means "not set", and a
-- definition's '' means 'default'. The claim reads them in its own
-- transaction, so a queue's limits hold however many nodes claim at once
-- (store/limits.go).
--
-- queues.max_running: NULL is no limit; 1 to 1,000,000 is the most jobs
-- of the queue queued, running or paused at once across the cluster.
-- rate_limit / rate_period_ms: NULL (both) is no rate limit; otherwise at
-- most rate_limit starts per rate_period_ms, spaced evenly (GCRA: one start
-- every rate_period_ms / rate_limit, on the database's clock). rate_tat_us
-- is the limiter's state (the earliest next start, microseconds since the
-- Unix epoch): chime writes it, an admin may reset it to NULL. paused
-- stops new starts of the queue's jobs; running ones go on. A value out of
-- these bounds makes the queue invalid: its jobs wait, and the claim says
-- why (docs/limits.md).
--
-- job_definitions.max_running: NULL is no limit; 1 to 1,000,000 is the
-- most jobs of the definition active at once, cluster-wide.

-- +goose Up
CREATE TABLE queues (
  name           VARCHAR(191)  NOT NULL,
  description    VARCHAR(2048) NOT NULL DEFAULT '',
  max_running    BIGINT        NULL,
  rate_limit     BIGINT        NULL,
  rate_period_ms BIGINT        NULL,
  rate_tat_us    BIGINT        NULL,
  paused         TINYINT(1)    NOT NULL DEFAULT 0,
  PRIMARY KEY (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
INSERT INTO queues (name, description) VALUES ('default', 'the queue of every definition that names none');
ALTER TABLE job_definitions ADD COLUMN queue VARCHAR(191) NOT NULL DEFAULT 'default', ADD COLUMN max_running BIGINT NULL;
ALTER TABLE schedules ADD COLUMN queue VARCHAR(191) NULL;
ALTER TABLE jobs ADD COLUMN queue VARCHAR(191) NULL;

-- +goose Down
ALTER TABLE jobs DROP COLUMN queue;
ALTER TABLE schedules DROP COLUMN queue;
ALTER TABLE job_definitions DROP COLUMN max_running, DROP COLUMN queue;
DROP TABLE queues;
