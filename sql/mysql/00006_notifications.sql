-- The notification outbox: one row per completion email, written in the
-- same transaction as the job's final state, so a notice survives restarts
-- and failover and is recorded once (the unique key) whichever path ended
-- the job. Nodes with SMTP configured send due rows and retry with backoff.

-- +goose Up
CREATE TABLE notifications (
  id              BIGINT        NOT NULL AUTO_INCREMENT,
  job_id          BIGINT        NOT NULL,
  job_status      VARCHAR(16)   NOT NULL,
  attempt         INT           NOT NULL DEFAULT 0,
  recipients      VARCHAR(2048) NOT NULL DEFAULT '',
  attachments     MEDIUMTEXT    NULL,
  status          VARCHAR(16)   NOT NULL DEFAULT 'pending',
  attempts        INT           NOT NULL DEFAULT 0,
  next_attempt_at DATETIME(6)   NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  last_error      TEXT          NULL,
  node_id         VARCHAR(191)  NOT NULL DEFAULT '',
  created_at      DATETIME(6)   NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  sent_at         DATETIME(6)   NULL,
  updated_at      DATETIME(6)   NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  PRIMARY KEY (id),
  UNIQUE KEY uq_notifications_job (job_id, job_status, attempt),
  KEY idx_notifications_due (status, next_attempt_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE notifications;
