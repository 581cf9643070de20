-- See the MySQL migration of the same number for what the columns mean.

-- +goose Up
CREATE TABLE queues (
  name           TEXT     NOT NULL PRIMARY KEY,
  description    TEXT     NOT NULL DEFAULT '',
  max_running    INTEGER  NULL,
  rate_limit     INTEGER  NULL,
  rate_period_ms INTEGER  NULL,
  rate_tat_us    INTEGER  NULL,
  paused         BOOLEAN  NOT NULL DEFAULT 0
);
INSERT INTO queues (name, description) VALUES ('default', 'the queue of every definition that names none');
ALTER TABLE job_definitions ADD COLUMN queue TEXT NOT NULL DEFAULT 'default';
ALTER TABLE job_definitions ADD COLUMN max_running INTEGER NULL;
ALTER TABLE schedules ADD COLUMN queue TEXT NULL;
ALTER TABLE jobs ADD COLUMN queue TEXT NULL;

-- +goose Down
ALTER TABLE jobs DROP COLUMN queue;
ALTER TABLE schedules DROP COLUMN queue;
ALTER TABLE job_definitions DROP COLUMN max_running;
ALTER TABLE job_definitions DROP COLUMN queue;
DROP TABLE queues;
