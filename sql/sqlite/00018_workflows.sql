-- Workflows (issue 27): a graph of steps, each a job definition, joined by
-- edges with a condition; a run is a row, and each job a run writes points
-- at its run and step. docs/workflows.md tells the semantics; the README's
-- SQL contract the columns.
--
-- No foreign keys, as elsewhere in chime: a row that names something gone
-- (a step of another workflow, a definition deleted) is found when a run
-- reads it and fails that run with the reason. The CHECKs refuse what a
-- row alone can show to be wrong.
--
-- workflow_run_steps is the ledger of the steps a run has written: its
-- primary key (run_id, step_id, generation) is the guard that writes a
-- step's job once per generation, whichever node decides it (a rerun
-- moves the run to the next generation).

-- +goose Up
CREATE TABLE workflows (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  name           TEXT     NOT NULL UNIQUE,
  description    TEXT     NOT NULL DEFAULT '',
  failure_policy TEXT     NOT NULL DEFAULT 'stop'
    CONSTRAINT chk_workflows_failure_policy CHECK (failure_policy IN ('stop', 'continue')),
  created_at     DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now')),
  updated_at     DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now'))
);

CREATE TABLE workflow_steps (
  id                INTEGER PRIMARY KEY AUTOINCREMENT,
  workflow_id       INTEGER  NOT NULL,
  name              TEXT     NOT NULL,
  job_definition_id INTEGER  NOT NULL,
  params            JSON     NULL,
  timeout_seconds   INTEGER  NULL CONSTRAINT chk_workflow_steps_timeout CHECK (timeout_seconds IS NULL OR timeout_seconds >= 0),
  max_attempts      INTEGER  NULL CONSTRAINT chk_workflow_steps_attempts CHECK (max_attempts IS NULL OR max_attempts >= 1),
  wait_for          TEXT     NOT NULL DEFAULT 'all' CONSTRAINT chk_workflow_steps_wait_for CHECK (wait_for IN ('all', 'any')),
  created_at        DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now')),
  UNIQUE (workflow_id, name)
);

CREATE TABLE workflow_edges (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  workflow_id  INTEGER NOT NULL,
  from_step_id INTEGER NOT NULL,
  to_step_id   INTEGER NOT NULL,
  condition    TEXT    NOT NULL DEFAULT 'success'
    CONSTRAINT chk_workflow_edges_condition CHECK (condition IN ('success', 'failure', 'always')),
  CONSTRAINT chk_workflow_edges_self CHECK (from_step_id <> to_step_id),
  UNIQUE (workflow_id, from_step_id, to_step_id)
);

CREATE TABLE workflow_runs (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  workflow_id INTEGER  NOT NULL,
  status      TEXT     NOT NULL DEFAULT 'pending'
    CONSTRAINT chk_workflow_runs_status CHECK (status IN ('pending', 'running', 'paused', 'succeeded', 'failed', 'canceled')),
  generation  INTEGER  NOT NULL DEFAULT 1,
  params      JSON     NULL,
  started_by  TEXT     NOT NULL DEFAULT '',
  reason      TEXT     NOT NULL DEFAULT '',
  started_at  DATETIME NULL,
  finished_at DATETIME NULL,
  created_at  DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now')),
  updated_at  DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now'))
);
CREATE INDEX idx_workflow_runs_status ON workflow_runs (status, id);
CREATE INDEX idx_workflow_runs_workflow ON workflow_runs (workflow_id, id);

CREATE TABLE workflow_run_steps (
  run_id     INTEGER  NOT NULL,
  step_id    INTEGER  NOT NULL,
  generation INTEGER  NOT NULL,
  job_id     INTEGER  NULL,
  created_at DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now')),
  PRIMARY KEY (run_id, step_id, generation)
);

ALTER TABLE jobs ADD COLUMN run_id INTEGER NULL;
ALTER TABLE jobs ADD COLUMN step_id INTEGER NULL;
ALTER TABLE jobs ADD COLUMN run_inputs JSON NULL;

-- +goose StatementBegin
CREATE TRIGGER trg_workflows_updated_at AFTER UPDATE ON workflows
FOR EACH ROW WHEN NEW.updated_at = OLD.updated_at
BEGIN
  UPDATE workflows SET updated_at = (strftime('%Y-%m-%d %H:%M:%f+00:00','now')) WHERE id = NEW.id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER trg_workflow_runs_updated_at AFTER UPDATE ON workflow_runs
FOR EACH ROW WHEN NEW.updated_at = OLD.updated_at
BEGIN
  UPDATE workflow_runs SET updated_at = (strftime('%Y-%m-%d %H:%M:%f+00:00','now')) WHERE id = NEW.id;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER trg_workflow_runs_updated_at;
DROP TRIGGER trg_workflows_updated_at;
ALTER TABLE jobs DROP COLUMN run_inputs;
ALTER TABLE jobs DROP COLUMN step_id;
ALTER TABLE jobs DROP COLUMN run_id;
DROP TABLE workflow_run_steps;
DROP TABLE workflow_runs;
DROP TABLE workflow_edges;
DROP TABLE workflow_steps;
DROP TABLE workflows;
