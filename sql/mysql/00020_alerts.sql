-- Alerts (issue 28): channels (where an alert goes: email, a signed
-- webhook, a Slack-compatible incoming webhook), rules (which event, about
-- what, to which channel, throttled how), and alerts, the outbox of what
-- the rules found: one row per rule, subject and occurrence (dedupe_key is
-- unique, so a second evaluation or a second node records nothing twice),
-- claimed and retried by every node as notifications are.
-- idx_jobs_finished lets the evaluator read the jobs finished since its
-- last pass without scanning jobs.

-- +goose Up
CREATE TABLE alert_channels (
  id              BIGINT        NOT NULL AUTO_INCREMENT,
  name            VARCHAR(191)  NOT NULL,
  kind            VARCHAR(16)   NOT NULL,
  url             VARCHAR(2048) NOT NULL DEFAULT '',
  recipients      VARCHAR(2048) NOT NULL DEFAULT '',
  signing_key     VARCHAR(512)  NOT NULL DEFAULT '',
  headers         TEXT          NULL,
  timeout_seconds INT           NOT NULL DEFAULT 10,
  enabled         TINYINT(1)    NOT NULL DEFAULT 1,
  created_at      DATETIME(6)   NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  updated_at      DATETIME(6)   NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  PRIMARY KEY (id),
  UNIQUE KEY uq_alert_channels_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE alert_rules (
  id               BIGINT        NOT NULL AUTO_INCREMENT,
  name             VARCHAR(191)  NOT NULL,
  event            VARCHAR(32)   NOT NULL,
  scope            VARCHAR(16)   NOT NULL DEFAULT 'all',
  definition_id    BIGINT        NULL,
  schedule_id      BIGINT        NULL,
  channel_id       BIGINT        NOT NULL,
  throttle_seconds INT           NOT NULL DEFAULT 0,
  params           TEXT          NULL,
  enabled          TINYINT(1)    NOT NULL DEFAULT 1,
  created_at       DATETIME(6)   NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  updated_at       DATETIME(6)   NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  PRIMARY KEY (id),
  UNIQUE KEY uq_alert_rules_name (name),
  KEY idx_alert_rules_channel (channel_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE alerts (
  id              BIGINT        NOT NULL AUTO_INCREMENT,
  rule_id         BIGINT        NOT NULL,
  channel_id      BIGINT        NOT NULL,
  event           VARCHAR(32)   NOT NULL,
  state           VARCHAR(16)   NOT NULL DEFAULT 'firing',
  subject         VARCHAR(191)  NOT NULL,
  dedupe_key      VARCHAR(191)  NOT NULL,
  summary         VARCHAR(2048) NOT NULL DEFAULT '',
  payload         MEDIUMTEXT    NULL,
  suppressed      INT           NOT NULL DEFAULT 0,
  status          VARCHAR(16)   NOT NULL DEFAULT 'pending',
  attempts        INT           NOT NULL DEFAULT 0,
  next_attempt_at DATETIME(6)   NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  last_error      TEXT          NULL,
  node_id         VARCHAR(191)  NOT NULL DEFAULT '',
  resolved_at     DATETIME(6)   NULL,
  created_at      DATETIME(6)   NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  sent_at         DATETIME(6)   NULL,
  updated_at      DATETIME(6)   NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  PRIMARY KEY (id),
  UNIQUE KEY uq_alerts_dedupe (dedupe_key),
  KEY idx_alerts_due (status, next_attempt_at),
  KEY idx_alerts_subject (rule_id, subject, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX idx_jobs_finished ON jobs (finished_at);

-- +goose Down
DROP INDEX idx_jobs_finished ON jobs;
DROP TABLE alerts;
DROP TABLE alert_rules;
DROP TABLE alert_channels;
