-- See the MySQL migration of the same number: the notification outbox.

-- +goose Up
CREATE TABLE notifications (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id          INTEGER  NOT NULL,
  job_status      TEXT     NOT NULL,
  attempt         INTEGER  NOT NULL DEFAULT 0,
  recipients      TEXT     NOT NULL DEFAULT '',
  attachments     TEXT     NULL,
  status          TEXT     NOT NULL DEFAULT 'pending',
  attempts        INTEGER  NOT NULL DEFAULT 0,
  next_attempt_at DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now')),
  last_error      TEXT     NULL,
  node_id         TEXT     NOT NULL DEFAULT '',
  created_at      DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now')),
  sent_at         DATETIME NULL,
  updated_at      DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now')),
  UNIQUE (job_id, job_status, attempt)
);
CREATE INDEX idx_notifications_due ON notifications (status, next_attempt_at);

-- +goose StatementBegin
CREATE TRIGGER trg_notifications_updated_at AFTER UPDATE ON notifications
FOR EACH ROW WHEN NEW.updated_at = OLD.updated_at
BEGIN
  UPDATE notifications SET updated_at = (strftime('%Y-%m-%d %H:%M:%f+00:00','now')) WHERE id = NEW.id;
END;
-- +goose StatementEnd

-- +goose Down
DROP TABLE notifications;
