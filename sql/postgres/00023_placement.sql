-- See the MySQL migration of the same number for what the columns mean.

-- +goose Up
ALTER TABLE nodes ADD COLUMN tags VARCHAR(2100) NOT NULL DEFAULT '', ADD COLUMN drain VARCHAR(16) NOT NULL DEFAULT '';
ALTER TABLE job_definitions ADD COLUMN required_tags VARCHAR(2100) NOT NULL DEFAULT '';
ALTER TABLE schedules ADD COLUMN required_tags VARCHAR(2100) NULL;
ALTER TABLE jobs ADD COLUMN required_tags VARCHAR(2100) NULL;
ALTER TABLE job_definitions ADD COLUMN broadcast BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE jobs ADD COLUMN shard_index INT NULL, ADD COLUMN shard_total INT NULL, ADD COLUMN shard_group BIGINT NULL,
  ADD COLUMN target_node VARCHAR(191) NULL;
ALTER TABLE job_definitions ADD COLUMN rate_limit BIGINT NULL, ADD COLUMN rate_period_ms BIGINT NULL, ADD COLUMN rate_tat_us BIGINT NULL;

-- +goose Down
ALTER TABLE job_definitions DROP COLUMN rate_tat_us, DROP COLUMN rate_period_ms, DROP COLUMN rate_limit;
ALTER TABLE jobs DROP COLUMN target_node, DROP COLUMN shard_group, DROP COLUMN shard_total, DROP COLUMN shard_index;
ALTER TABLE job_definitions DROP COLUMN broadcast;
ALTER TABLE jobs DROP COLUMN required_tags;
ALTER TABLE schedules DROP COLUMN required_tags;
ALTER TABLE job_definitions DROP COLUMN required_tags;
ALTER TABLE nodes DROP COLUMN drain, DROP COLUMN tags;
