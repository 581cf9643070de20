-- See the MySQL migration of the same number: alert channels, rules and
-- the alerts outbox.

-- +goose Up
CREATE TABLE alert_channels (
  id              INTEGER  PRIMARY KEY AUTOINCREMENT,
  name            TEXT     NOT NULL UNIQUE,
  kind            TEXT     NOT NULL,
  url             TEXT     NOT NULL DEFAULT '',
  recipients      TEXT     NOT NULL DEFAULT '',
  signing_key     TEXT     NOT NULL DEFAULT '',
  headers         TEXT     NULL,
  timeout_seconds INTEGER  NOT NULL DEFAULT 10,
  enabled         BOOLEAN  NOT NULL DEFAULT 1,
  created_at      DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now')),
  updated_at      DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now'))
);

CREATE TABLE alert_rules (
  id               INTEGER  PRIMARY KEY AUTOINCREMENT,
  name             TEXT     NOT NULL UNIQUE,
  event            TEXT     NOT NULL,
  scope            TEXT     NOT NULL DEFAULT 'all',
  definition_id    INTEGER  NULL,
  schedule_id      INTEGER  NULL,
  channel_id       INTEGER  NOT NULL,
  throttle_seconds INTEGER  NOT NULL DEFAULT 0,
  params           TEXT     NULL,
  enabled          BOOLEAN  NOT NULL DEFAULT 1,
  created_at       DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now')),
  updated_at       DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now'))
);
CREATE INDEX idx_alert_rules_channel ON alert_rules (channel_id);

CREATE TABLE alerts (
  id              INTEGER  PRIMARY KEY AUTOINCREMENT,
  rule_id         INTEGER  NOT NULL,
  channel_id      INTEGER  NOT NULL,
  event           TEXT     NOT NULL,
  state           TEXT     NOT NULL DEFAULT 'firing',
  subject         TEXT     NOT NULL,
  dedupe_key      TEXT     NOT NULL UNIQUE,
  summary         TEXT     NOT NULL DEFAULT '',
  payload         TEXT     NULL,
  suppressed      INTEGER  NOT NULL DEFAULT 0,
  status          TEXT     NOT NULL DEFAULT 'pending',
  attempts        INTEGER  NOT NULL DEFAULT 0,
  next_attempt_at DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now')),
  last_error      TEXT     NULL,
  node_id         TEXT     NOT NULL DEFAULT '',
  resolved_at     DATETIME NULL,
  created_at      DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now')),
  sent_at         DATETIME NULL,
  updated_at      DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now'))
);
CREATE INDEX idx_alerts_due ON alerts (status, next_attempt_at);
CREATE INDEX idx_alerts_subject ON alerts (rule_id, subject, id);

-- +goose StatementBegin
CREATE TRIGGER trg_alert_channels_updated_at AFTER UPDATE ON alert_channels
FOR EACH ROW WHEN NEW.updated_at = OLD.updated_at
BEGIN
  UPDATE alert_channels SET updated_at = (strftime('%Y-%m-%d %H:%M:%f+00:00','now')) WHERE id = NEW.id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER trg_alert_rules_updated_at AFTER UPDATE ON alert_rules
FOR EACH ROW WHEN NEW.updated_at = OLD.updated_at
BEGIN
  UPDATE alert_rules SET updated_at = (strftime('%Y-%m-%d %H:%M:%f+00:00','now')) WHERE id = NEW.id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER trg_alerts_updated_at AFTER UPDATE ON alerts
FOR EACH ROW WHEN NEW.updated_at = OLD.updated_at
BEGIN
  UPDATE alerts SET updated_at = (strftime('%Y-%m-%d %H:%M:%f+00:00','now')) WHERE id = NEW.id;
END;
-- +goose StatementEnd

CREATE INDEX idx_jobs_finished ON jobs (finished_at);

-- +goose Down
DROP INDEX idx_jobs_finished;
DROP TABLE alerts;
DROP TABLE alert_rules;
DROP TABLE alert_channels;
