-- chime schema v1 for SQLite. Timestamps are UTC text in the driver's
-- format ('2006-01-02 15:04:05.999999-07:00' with +00:00), so text order is time order.
-- Triggers give updated_at MySQL's ON UPDATE behaviour for plain SQL updates.

-- +goose Up
CREATE TABLE job_definitions (
  id                    INTEGER PRIMARY KEY AUTOINCREMENT,
  name                  TEXT     NOT NULL UNIQUE,
  task_type             TEXT     NOT NULL,
  description           TEXT     NOT NULL DEFAULT '',
  default_params        JSON     NULL,
  timeout_seconds       INTEGER  NOT NULL DEFAULT 0,
  max_attempts          INTEGER  NOT NULL DEFAULT 1,
  retry_backoff_seconds INTEGER  NOT NULL DEFAULT 10,
  notify_on             TEXT     NOT NULL DEFAULT 'never',
  notify_emails         TEXT     NOT NULL DEFAULT '',
  created_at            DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now')),
  updated_at            DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now'))
);

CREATE TABLE schedules (
  id                     INTEGER PRIMARY KEY AUTOINCREMENT,
  name                   TEXT     NOT NULL UNIQUE,
  job_definition_id      INTEGER  NOT NULL,
  schedule_type          TEXT     NOT NULL,
  cron_expr              TEXT     NULL,
  interval_seconds       INTEGER  NULL,
  run_at                 DATETIME NULL,
  timezone               TEXT     NOT NULL DEFAULT 'UTC',
  start_at               DATETIME NULL,
  end_at                 DATETIME NULL,
  max_runs               INTEGER  NULL,
  misfire_policy         TEXT     NOT NULL DEFAULT 'fire_once',
  catchup_window_seconds INTEGER  NULL,
  concurrency            TEXT     NOT NULL DEFAULT 'allow',
  params                 JSON     NULL,
  status                 TEXT     NOT NULL DEFAULT 'active',
  status_reason          TEXT     NOT NULL DEFAULT '',
  created_at             DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now')),
  updated_at             DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now'))
);

CREATE TABLE time_triggers (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  schedule_id     INTEGER  NOT NULL UNIQUE,
  next_fire_at    DATETIME NULL,
  last_fire_at    DATETIME NULL,
  fired_count     INTEGER  NOT NULL DEFAULT 0,
  remaining_count INTEGER  NULL,
  misfired_count  INTEGER  NOT NULL DEFAULT 0,
  created_at      DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now')),
  updated_at      DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now'))
);

CREATE TABLE jobs (
  id                INTEGER PRIMARY KEY AUTOINCREMENT,
  schedule_id       INTEGER  NULL,
  job_definition_id INTEGER  NOT NULL,
  scheduled_at      DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now')),
  run_at            DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now')),
  status            TEXT     NOT NULL DEFAULT 'pending',
  control           TEXT     NOT NULL DEFAULT '',
  attempt           INTEGER  NOT NULL DEFAULT 0,
  max_attempts      INTEGER  NOT NULL DEFAULT 0,
  params            JSON     NULL,
  catch_up          BOOLEAN  NOT NULL DEFAULT 0,
  missed_fires      INTEGER  NOT NULL DEFAULT 0,
  node_id           TEXT     NOT NULL DEFAULT '',
  queued_at         DATETIME NULL,
  started_at        DATETIME NULL,
  finished_at       DATETIME NULL,
  heartbeat_at      DATETIME NULL,
  result            TEXT     NULL,
  error             TEXT     NULL,
  created_at        DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now')),
  updated_at        DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now')),
  UNIQUE (schedule_id, scheduled_at)
);

CREATE TABLE job_logs (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id     INTEGER  NOT NULL,
  level      TEXT     NOT NULL DEFAULT 'info',
  message    TEXT     NOT NULL,
  created_at DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now'))
);

CREATE TABLE configurations (
  name        TEXT     NOT NULL PRIMARY KEY,
  value       TEXT     NOT NULL,
  description TEXT     NOT NULL DEFAULT '',
  updated_at  DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now'))
);

CREATE TABLE nodes (
  id           TEXT     NOT NULL PRIMARY KEY,
  hostname     TEXT     NOT NULL DEFAULT '',
  pid          INTEGER  NOT NULL DEFAULT 0,
  version      TEXT     NOT NULL DEFAULT '',
  roles        TEXT     NOT NULL DEFAULT '',
  started_at   DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now')),
  heartbeat_at DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now')),
  status       TEXT     NOT NULL DEFAULT 'alive'
);

CREATE TABLE leases (
  name       TEXT     NOT NULL PRIMARY KEY,
  holder     TEXT     NOT NULL DEFAULT '',
  expires_at DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now'))
);

CREATE INDEX idx_schedules_updated_at ON schedules (updated_at);
CREATE INDEX idx_schedules_definition ON schedules (job_definition_id);
CREATE INDEX idx_jobs_claim ON jobs (status, run_at);
CREATE INDEX idx_jobs_node ON jobs (node_id, status);
CREATE INDEX idx_jobs_finished ON jobs (finished_at);
CREATE INDEX idx_job_logs_job ON job_logs (job_id, id);

-- +goose StatementBegin
CREATE TRIGGER trg_job_definitions_updated_at AFTER UPDATE ON job_definitions
FOR EACH ROW WHEN NEW.updated_at = OLD.updated_at
BEGIN
  UPDATE job_definitions SET updated_at = (strftime('%Y-%m-%d %H:%M:%f+00:00','now')) WHERE id = NEW.id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER trg_schedules_updated_at AFTER UPDATE ON schedules
FOR EACH ROW WHEN NEW.updated_at = OLD.updated_at
BEGIN
  UPDATE schedules SET updated_at = (strftime('%Y-%m-%d %H:%M:%f+00:00','now')) WHERE id = NEW.id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER trg_time_triggers_updated_at AFTER UPDATE ON time_triggers
FOR EACH ROW WHEN NEW.updated_at = OLD.updated_at
BEGIN
  UPDATE time_triggers SET updated_at = (strftime('%Y-%m-%d %H:%M:%f+00:00','now')) WHERE id = NEW.id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER trg_jobs_updated_at AFTER UPDATE ON jobs
FOR EACH ROW WHEN NEW.updated_at = OLD.updated_at
BEGIN
  UPDATE jobs SET updated_at = (strftime('%Y-%m-%d %H:%M:%f+00:00','now')) WHERE id = NEW.id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER trg_configurations_updated_at AFTER UPDATE ON configurations
FOR EACH ROW WHEN NEW.updated_at = OLD.updated_at
BEGIN
  UPDATE configurations SET updated_at = (strftime('%Y-%m-%d %H:%M:%f+00:00','now')) WHERE name = NEW.name;
END;
-- +goose StatementEnd

-- +goose Down
DROP TABLE leases;
DROP TABLE nodes;
DROP TABLE configurations;
DROP TABLE job_logs;
DROP TABLE jobs;
DROP TABLE time_triggers;
DROP TABLE schedules;
DROP TABLE job_definitions;
