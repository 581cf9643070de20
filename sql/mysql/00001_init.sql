-- chime schema v1 for MySQL 8 / MariaDB 10.6+. Timestamps are UTC (the
-- connection sets time_zone = '+00:00'), DATETIME(6) for microseconds.

-- +goose Up
CREATE TABLE job_definitions (
  id                    BIGINT        NOT NULL AUTO_INCREMENT,
  name                  VARCHAR(191)  NOT NULL,
  task_type             VARCHAR(191)  NOT NULL,
  description           VARCHAR(2048) NOT NULL DEFAULT '',
  default_params        JSON          NULL,
  timeout_seconds       INT           NOT NULL DEFAULT 0,
  max_attempts          INT           NOT NULL DEFAULT 1,
  retry_backoff_seconds INT           NOT NULL DEFAULT 10,
  notify_on             VARCHAR(16)   NOT NULL DEFAULT 'never',
  notify_emails         VARCHAR(2048) NOT NULL DEFAULT '',
  created_at            DATETIME(6)   NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  updated_at            DATETIME(6)   NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  PRIMARY KEY (id),
  UNIQUE KEY uq_job_definitions_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE schedules (
  id                     BIGINT        NOT NULL AUTO_INCREMENT,
  name                   VARCHAR(191)  NOT NULL,
  job_definition_id      BIGINT        NOT NULL,
  schedule_type          VARCHAR(16)   NOT NULL,
  cron_expr              VARCHAR(255)  NULL,
  interval_seconds       INT           NULL,
  run_at                 DATETIME(6)   NULL,
  timezone               VARCHAR(64)   NOT NULL DEFAULT 'UTC',
  start_at               DATETIME(6)   NULL,
  end_at                 DATETIME(6)   NULL,
  max_runs               INT           NULL,
  misfire_policy         VARCHAR(16)   NOT NULL DEFAULT 'fire_once',
  catchup_window_seconds INT           NULL,
  concurrency            VARCHAR(16)   NOT NULL DEFAULT 'allow',
  params                 JSON          NULL,
  status                 VARCHAR(16)   NOT NULL DEFAULT 'active',
  status_reason          VARCHAR(2048) NOT NULL DEFAULT '',
  created_at             DATETIME(6)   NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  updated_at             DATETIME(6)   NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  PRIMARY KEY (id),
  UNIQUE KEY uq_schedules_name (name),
  KEY idx_schedules_updated_at (updated_at),
  KEY idx_schedules_definition (job_definition_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE time_triggers (
  id              BIGINT      NOT NULL AUTO_INCREMENT,
  schedule_id     BIGINT      NOT NULL,
  next_fire_at    DATETIME(6) NULL,
  last_fire_at    DATETIME(6) NULL,
  fired_count     BIGINT      NOT NULL DEFAULT 0,
  remaining_count BIGINT      NULL,
  misfired_count  BIGINT      NOT NULL DEFAULT 0,
  created_at      DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  updated_at      DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  PRIMARY KEY (id),
  UNIQUE KEY uq_time_triggers_schedule (schedule_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE jobs (
  id                BIGINT       NOT NULL AUTO_INCREMENT,
  schedule_id       BIGINT       NULL,
  job_definition_id BIGINT       NOT NULL,
  scheduled_at      DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  run_at            DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  status            VARCHAR(16)  NOT NULL DEFAULT 'pending',
  control           VARCHAR(16)  NOT NULL DEFAULT '',
  attempt           INT          NOT NULL DEFAULT 0,
  max_attempts      INT          NOT NULL DEFAULT 0,
  params            JSON         NULL,
  catch_up          TINYINT(1)   NOT NULL DEFAULT 0,
  missed_fires      INT          NOT NULL DEFAULT 0,
  node_id           VARCHAR(191) NOT NULL DEFAULT '',
  queued_at         DATETIME(6)  NULL,
  started_at        DATETIME(6)  NULL,
  finished_at       DATETIME(6)  NULL,
  heartbeat_at      DATETIME(6)  NULL,
  result            MEDIUMTEXT   NULL,
  error             TEXT         NULL,
  created_at        DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  updated_at        DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  PRIMARY KEY (id),
  UNIQUE KEY uq_jobs_schedule_fire (schedule_id, scheduled_at),
  KEY idx_jobs_claim (status, run_at),
  KEY idx_jobs_node (node_id, status),
  KEY idx_jobs_finished (finished_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE job_logs (
  id         BIGINT       NOT NULL AUTO_INCREMENT,
  job_id     BIGINT       NOT NULL,
  level      VARCHAR(16)  NOT NULL DEFAULT 'info',
  message    TEXT         NOT NULL,
  created_at DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (id),
  KEY idx_job_logs_job (job_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE configurations (
  name        VARCHAR(191)  NOT NULL,
  value       TEXT          NOT NULL,
  description VARCHAR(2048) NOT NULL DEFAULT '',
  updated_at  DATETIME(6)   NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  PRIMARY KEY (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE nodes (
  id           VARCHAR(191) NOT NULL,
  hostname     VARCHAR(255) NOT NULL DEFAULT '',
  pid          INT          NOT NULL DEFAULT 0,
  version      VARCHAR(64)  NOT NULL DEFAULT '',
  roles        VARCHAR(64)  NOT NULL DEFAULT '',
  started_at   DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  heartbeat_at DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  status       VARCHAR(16)  NOT NULL DEFAULT 'alive',
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE leases (
  name       VARCHAR(64)  NOT NULL,
  holder     VARCHAR(191) NOT NULL DEFAULT '',
  expires_at DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE leases;
DROP TABLE nodes;
DROP TABLE configurations;
DROP TABLE job_logs;
DROP TABLE jobs;
DROP TABLE time_triggers;
DROP TABLE schedules;
DROP TABLE job_definitions;
