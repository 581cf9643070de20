-- See the MySQL migration of the same number for what the columns mean.

-- +goose Up
CREATE TABLE queues (
  name           VARCHAR(191)  NOT NULL PRIMARY KEY,
  description    VARCHAR(2048) NOT NULL DEFAULT '',
  max_running    BIGINT        NULL,
  rate_limit     BIGINT        NULL,
  rate_period_ms BIGINT        NULL,
  rate_tat_us    BIGINT        NULL,
  paused         BOOLEAN       NOT NULL DEFAULT FALSE
);
INSERT INTO queues (name, description) VALUES ('default', 'the queue of every definition that names none');
ALTER TABLE job_definitions ADD COLUMN queue VARCHAR(191) NOT NULL DEFAULT 'default', ADD COLUMN max_running BIGINT NULL;
ALTER TABLE schedules ADD COLUMN queue VARCHAR(191) NULL;
ALTER TABLE jobs ADD COLUMN queue VARCHAR(191) NULL;

-- +goose Down
ALTER TABLE jobs DROP COLUMN queue;
ALTER TABLE schedules DROP COLUMN queue;
ALTER TABLE job_definitions DROP COLUMN max_running, DROP COLUMN queue;
DROP TABLE queues;
