-- Quartz schedules, as in the MySQL and SQLite 00010: schedules.cron_syntax
-- ('standard' or 'quartz'), schedules.dst_policy ('once', 'skip', 'both',
-- 'wall'; docs/quartz.md), and calendars that schedules.calendar_id names.
-- definition is JSON whose shape depends on kind.

-- +goose Up
CREATE TABLE calendars (
  id          BIGSERIAL     PRIMARY KEY,
  name        VARCHAR(191)  NOT NULL,
  kind        VARCHAR(16)   NOT NULL,
  definition  JSON          NULL,
  timezone    VARCHAR(64)   NOT NULL DEFAULT 'UTC',
  description VARCHAR(2048) NOT NULL DEFAULT '',
  created_at  TIMESTAMPTZ   NOT NULL DEFAULT statement_timestamp(),
  updated_at  TIMESTAMPTZ   NOT NULL DEFAULT statement_timestamp(),
  CONSTRAINT uq_calendars_name UNIQUE (name)
);
CREATE INDEX idx_calendars_updated_at ON calendars (updated_at);
CREATE TRIGGER chime_calendars_updated_at BEFORE UPDATE ON calendars
  FOR EACH ROW EXECUTE FUNCTION chime_touch_updated_at();

ALTER TABLE schedules
  ADD COLUMN cron_syntax VARCHAR(16) NOT NULL DEFAULT 'standard',
  ADD COLUMN dst_policy VARCHAR(16) NOT NULL DEFAULT 'once',
  ADD COLUMN calendar_id BIGINT NULL;
CREATE INDEX idx_schedules_calendar ON schedules (calendar_id);

-- +goose Down
DROP INDEX idx_schedules_calendar;
ALTER TABLE schedules DROP COLUMN calendar_id, DROP COLUMN dst_policy, DROP COLUMN cron_syntax;
DROP TABLE calendars;
