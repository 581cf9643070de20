-- See the MySQL migration of the same number: schedules.cron_syntax,
-- schedules.dst_policy, schedules.calendar_id and the calendars table.

-- +goose Up
CREATE TABLE calendars (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  name        TEXT     NOT NULL UNIQUE,
  kind        TEXT     NOT NULL,
  definition  JSON     NULL,
  timezone    TEXT     NOT NULL DEFAULT 'UTC',
  description TEXT     NOT NULL DEFAULT '',
  created_at  DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now')),
  updated_at  DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f+00:00','now'))
);
CREATE INDEX idx_calendars_updated_at ON calendars (updated_at);

-- +goose StatementBegin
CREATE TRIGGER trg_calendars_updated_at AFTER UPDATE ON calendars
FOR EACH ROW WHEN NEW.updated_at = OLD.updated_at
BEGIN
  UPDATE calendars SET updated_at = (strftime('%Y-%m-%d %H:%M:%f+00:00','now')) WHERE id = NEW.id;
END;
-- +goose StatementEnd

ALTER TABLE schedules ADD COLUMN cron_syntax TEXT NOT NULL DEFAULT 'standard';
ALTER TABLE schedules ADD COLUMN dst_policy TEXT NOT NULL DEFAULT 'once';
ALTER TABLE schedules ADD COLUMN calendar_id INTEGER NULL;
CREATE INDEX idx_schedules_calendar ON schedules (calendar_id);

-- +goose Down
DROP INDEX idx_schedules_calendar;
ALTER TABLE schedules DROP COLUMN calendar_id;
ALTER TABLE schedules DROP COLUMN dst_policy;
ALTER TABLE schedules DROP COLUMN cron_syntax;
DROP TRIGGER trg_calendars_updated_at;
DROP TABLE calendars;
