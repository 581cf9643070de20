-- Workflows (issue 27): see the SQLite migration of the same number.

-- +goose Up
CREATE TABLE workflows (
  id             BIGSERIAL   PRIMARY KEY,
  name           TEXT        NOT NULL UNIQUE,
  description    TEXT        NOT NULL DEFAULT '',
  failure_policy TEXT        NOT NULL DEFAULT 'stop'
    CONSTRAINT chk_workflows_failure_policy CHECK (failure_policy IN ('stop', 'continue')),
  created_at     TIMESTAMPTZ NOT NULL DEFAULT statement_timestamp(),
  updated_at     TIMESTAMPTZ NOT NULL DEFAULT statement_timestamp()
);

CREATE TABLE workflow_steps (
  id                BIGSERIAL   PRIMARY KEY,
  workflow_id       BIGINT      NOT NULL,
  name              TEXT        NOT NULL,
  job_definition_id BIGINT      NOT NULL,
  params            JSON        NULL,
  timeout_seconds   INT         NULL CONSTRAINT chk_workflow_steps_timeout CHECK (timeout_seconds IS NULL OR timeout_seconds >= 0),
  max_attempts      INT         NULL CONSTRAINT chk_workflow_steps_attempts CHECK (max_attempts IS NULL OR max_attempts >= 1),
  wait_for          TEXT        NOT NULL DEFAULT 'all' CONSTRAINT chk_workflow_steps_wait_for CHECK (wait_for IN ('all', 'any')),
  created_at        TIMESTAMPTZ NOT NULL DEFAULT statement_timestamp(),
  UNIQUE (workflow_id, name)
);

CREATE TABLE workflow_edges (
  id           BIGSERIAL PRIMARY KEY,
  workflow_id  BIGINT    NOT NULL,
  from_step_id BIGINT    NOT NULL,
  to_step_id   BIGINT    NOT NULL,
  condition    TEXT      NOT NULL DEFAULT 'success'
    CONSTRAINT chk_workflow_edges_condition CHECK (condition IN ('success', 'failure', 'always')),
  CONSTRAINT chk_workflow_edges_self CHECK (from_step_id <> to_step_id),
  UNIQUE (workflow_id, from_step_id, to_step_id)
);

CREATE TABLE workflow_runs (
  id          BIGSERIAL   PRIMARY KEY,
  workflow_id BIGINT      NOT NULL,
  status      TEXT        NOT NULL DEFAULT 'pending'
    CONSTRAINT chk_workflow_runs_status CHECK (status IN ('pending', 'running', 'paused', 'succeeded', 'failed', 'canceled')),
  generation  INT         NOT NULL DEFAULT 1,
  params      JSON        NULL,
  started_by  TEXT        NOT NULL DEFAULT '',
  reason      TEXT        NOT NULL DEFAULT '',
  started_at  TIMESTAMPTZ NULL,
  finished_at TIMESTAMPTZ NULL,
  created_at  TIMESTAMPTZ NOT NULL DEFAULT statement_timestamp(),
  updated_at  TIMESTAMPTZ NOT NULL DEFAULT statement_timestamp()
);
CREATE INDEX idx_workflow_runs_status ON workflow_runs (status, id);
CREATE INDEX idx_workflow_runs_workflow ON workflow_runs (workflow_id, id);

CREATE TABLE workflow_run_steps (
  run_id     BIGINT      NOT NULL,
  step_id    BIGINT      NOT NULL,
  generation INT         NOT NULL,
  job_id     BIGINT      NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT statement_timestamp(),
  PRIMARY KEY (run_id, step_id, generation)
);

ALTER TABLE jobs ADD COLUMN run_id BIGINT NULL, ADD COLUMN step_id BIGINT NULL, ADD COLUMN run_inputs JSON NULL;

CREATE TRIGGER chime_workflows_updated_at BEFORE UPDATE ON workflows
  FOR EACH ROW EXECUTE FUNCTION chime_touch_updated_at();
CREATE TRIGGER chime_workflow_runs_updated_at BEFORE UPDATE ON workflow_runs
  FOR EACH ROW EXECUTE FUNCTION chime_touch_updated_at();

-- +goose Down
DROP TRIGGER chime_workflow_runs_updated_at ON workflow_runs;
DROP TRIGGER chime_workflows_updated_at ON workflows;
ALTER TABLE jobs DROP COLUMN run_inputs, DROP COLUMN step_id, DROP COLUMN run_id;
DROP TABLE workflow_run_steps;
DROP TABLE workflow_runs;
DROP TABLE workflow_edges;
DROP TABLE workflow_steps;
DROP TABLE workflows;
