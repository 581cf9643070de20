-- See the MySQL migration of the same number for what the columns mean.

-- +goose Up
ALTER TABLE nodes ADD COLUMN tags TEXT NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN drain TEXT NOT NULL DEFAULT '';
ALTER TABLE job_definitions ADD COLUMN required_tags TEXT NOT NULL DEFAULT '';
ALTER TABLE schedules ADD COLUMN required_tags TEXT NULL;
ALTER TABLE jobs ADD COLUMN required_tags TEXT NULL;

-- +goose Down
ALTER TABLE jobs DROP COLUMN required_tags;
ALTER TABLE schedules DROP COLUMN required_tags;
ALTER TABLE job_definitions DROP COLUMN required_tags;
ALTER TABLE nodes DROP COLUMN drain;
ALTER TABLE nodes DROP COLUMN tags;
