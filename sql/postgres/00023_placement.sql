-- See the MySQL migration of the same number for what the columns mean.

-- +goose Up
ALTER TABLE nodes ADD COLUMN tags VARCHAR(2100) NOT NULL DEFAULT '', ADD COLUMN drain VARCHAR(16) NOT NULL DEFAULT '';
ALTER TABLE job_definitions ADD COLUMN required_tags VARCHAR(2100) NOT NULL DEFAULT '';
ALTER TABLE schedules ADD COLUMN required_tags VARCHAR(2100) NULL;
ALTER TABLE jobs ADD COLUMN required_tags VARCHAR(2100) NULL;

-- +goose Down
ALTER TABLE jobs DROP COLUMN required_tags;
ALTER TABLE schedules DROP COLUMN required_tags;
ALTER TABLE job_definitions DROP COLUMN required_tags;
ALTER TABLE nodes DROP COLUMN drain, DROP COLUMN tags;
