-- See the MySQL migration of the same number for what the columns mean.

-- +goose Up
ALTER TABLE nodes ADD COLUMN tags TEXT NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN drain TEXT NOT NULL DEFAULT '';
ALTER TABLE job_definitions ADD COLUMN required_tags TEXT NOT NULL DEFAULT '';
ALTER TABLE schedules ADD COLUMN required_tags TEXT NULL;
ALTER TABLE jobs ADD COLUMN required_tags TEXT NULL;
ALTER TABLE job_definitions ADD COLUMN broadcast BOOLEAN NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN shard_index INTEGER NULL;
ALTER TABLE jobs ADD COLUMN shard_total INTEGER NULL;
ALTER TABLE jobs ADD COLUMN shard_group INTEGER NULL;
ALTER TABLE jobs ADD COLUMN target_node TEXT NULL;
ALTER TABLE job_definitions ADD COLUMN rate_limit INTEGER NULL;
ALTER TABLE job_definitions ADD COLUMN rate_period_ms INTEGER NULL;
ALTER TABLE job_definitions ADD COLUMN rate_tat_us INTEGER NULL;

-- +goose Down
ALTER TABLE job_definitions DROP COLUMN rate_tat_us;
ALTER TABLE job_definitions DROP COLUMN rate_period_ms;
ALTER TABLE job_definitions DROP COLUMN rate_limit;
ALTER TABLE jobs DROP COLUMN target_node;
ALTER TABLE jobs DROP COLUMN shard_group;
ALTER TABLE jobs DROP COLUMN shard_total;
ALTER TABLE jobs DROP COLUMN shard_index;
ALTER TABLE job_definitions DROP COLUMN broadcast;
ALTER TABLE jobs DROP COLUMN required_tags;
ALTER TABLE schedules DROP COLUMN required_tags;
ALTER TABLE job_definitions DROP COLUMN required_tags;
ALTER TABLE nodes DROP COLUMN drain;
ALTER TABLE nodes DROP COLUMN tags;
