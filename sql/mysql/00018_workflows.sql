-- Workflows (issue 27): see the SQLite migration of the same number.

-- +goose Up
CREATE TABLE workflows (
  id             BIGINT       NOT NULL AUTO_INCREMENT,
  name           VARCHAR(191) NOT NULL,
  description    VARCHAR(2048) NOT NULL DEFAULT '',
  failure_policy VARCHAR(16)  NOT NULL DEFAULT 'stop',
  created_at     DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  updated_at     DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  PRIMARY KEY (id),
  UNIQUE KEY uq_workflows_name (name),
  CONSTRAINT chk_workflows_failure_policy CHECK (failure_policy IN ('stop', 'continue'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE workflow_steps (
  id                BIGINT       NOT NULL AUTO_INCREMENT,
  workflow_id       BIGINT       NOT NULL,
  name              VARCHAR(191) NOT NULL,
  job_definition_id BIGINT       NOT NULL,
  params            JSON         NULL,
  timeout_seconds   INT          NULL,
  max_attempts      INT          NULL,
  wait_for          VARCHAR(8)   NOT NULL DEFAULT 'all',
  created_at        DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (id),
  UNIQUE KEY uq_workflow_steps_name (workflow_id, name),
  CONSTRAINT chk_workflow_steps_timeout CHECK (timeout_seconds IS NULL OR timeout_seconds >= 0),
  CONSTRAINT chk_workflow_steps_attempts CHECK (max_attempts IS NULL OR max_attempts >= 1),
  CONSTRAINT chk_workflow_steps_wait_for CHECK (wait_for IN ('all', 'any'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE workflow_edges (
  id           BIGINT      NOT NULL AUTO_INCREMENT,
  workflow_id  BIGINT      NOT NULL,
  from_step_id BIGINT      NOT NULL,
  to_step_id   BIGINT      NOT NULL,
  `condition`  VARCHAR(16) NOT NULL DEFAULT 'success',
  PRIMARY KEY (id),
  UNIQUE KEY uq_workflow_edges (workflow_id, from_step_id, to_step_id),
  CONSTRAINT chk_workflow_edges_condition CHECK (`condition` IN ('success', 'failure', 'always')),
  CONSTRAINT chk_workflow_edges_self CHECK (from_step_id <> to_step_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE workflow_runs (
  id          BIGINT       NOT NULL AUTO_INCREMENT,
  workflow_id BIGINT       NOT NULL,
  status      VARCHAR(16)  NOT NULL DEFAULT 'pending',
  generation  INT          NOT NULL DEFAULT 1,
  params      JSON         NULL,
  started_by  VARCHAR(191) NOT NULL DEFAULT '',
  reason      VARCHAR(2048) NOT NULL DEFAULT '',
  started_at  DATETIME(6)  NULL,
  finished_at DATETIME(6)  NULL,
  created_at  DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  updated_at  DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  PRIMARY KEY (id),
  KEY idx_workflow_runs_status (status, id),
  KEY idx_workflow_runs_workflow (workflow_id, id),
  CONSTRAINT chk_workflow_runs_status CHECK (status IN ('pending', 'running', 'paused', 'succeeded', 'failed', 'canceled'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE workflow_run_steps (
  run_id     BIGINT      NOT NULL,
  step_id    BIGINT      NOT NULL,
  generation INT         NOT NULL,
  job_id     BIGINT      NULL,
  created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (run_id, step_id, generation)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

ALTER TABLE jobs ADD COLUMN run_id BIGINT NULL, ADD COLUMN step_id BIGINT NULL, ADD COLUMN run_inputs JSON NULL;

-- +goose Down
ALTER TABLE jobs DROP COLUMN run_inputs, DROP COLUMN step_id, DROP COLUMN run_id;
DROP TABLE workflow_run_steps;
DROP TABLE workflow_runs;
DROP TABLE workflow_edges;
DROP TABLE workflow_steps;
DROP TABLE workflows;
