-- See the MySQL migration of the same number: lease_changes, the history
-- of who took each lease (written by a trigger on leases), and the queue
-- and workflow scopes of alert rules.

-- +goose Up
CREATE TABLE lease_changes (
  id         INTEGER  PRIMARY KEY AUTOINCREMENT,
  name       TEXT     NOT NULL,
  holder     TEXT     NOT NULL,
  previous   TEXT     NOT NULL DEFAULT '',
  changed_at DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now'))
);
CREATE INDEX idx_lease_changes_at ON lease_changes (changed_at);

-- +goose StatementBegin
CREATE TRIGGER chime_leases_changed_insert AFTER INSERT ON leases FOR EACH ROW WHEN NEW.holder <> ''
BEGIN
  INSERT INTO lease_changes (name, holder, previous) VALUES (NEW.name, NEW.holder, '');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER chime_leases_changed_update AFTER UPDATE OF holder ON leases FOR EACH ROW
  WHEN NEW.holder <> '' AND NEW.holder <> OLD.holder
BEGIN
  INSERT INTO lease_changes (name, holder, previous) VALUES (NEW.name, NEW.holder, OLD.holder);
END;
-- +goose StatementEnd

ALTER TABLE alert_rules ADD COLUMN queue TEXT NULL;
ALTER TABLE alert_rules ADD COLUMN workflow_id INTEGER NULL;

-- The evaluator reads the workflow runs finished since its last pass.
CREATE INDEX idx_workflow_runs_finished ON workflow_runs (finished_at);

-- +goose Down
DROP INDEX idx_workflow_runs_finished;
ALTER TABLE alert_rules DROP COLUMN workflow_id;
ALTER TABLE alert_rules DROP COLUMN queue;
DROP TRIGGER chime_leases_changed_update;
DROP TRIGGER chime_leases_changed_insert;
DROP TABLE lease_changes;
