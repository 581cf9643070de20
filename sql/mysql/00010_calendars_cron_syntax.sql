-- Quartz schedules: schedules.cron_syntax ('standard' or 'quartz': how
-- cron_expr reads), schedules.dst_policy ('once', 'skip', 'both' or
-- 'wall': what a standard-syntax cron with a fixed hour does with a wall
-- time a daylight-saving change skips or repeats; docs/quartz.md), and
-- calendars (Quartz's Holiday, Annual, Monthly, Weekly, Daily and Cron
-- calendars) that schedules.calendar_id names: a fire in an excluded time
-- is skipped. definition is JSON whose shape depends on kind. A schedule
-- whose calendar_id names no calendar is marked invalid by the engine.

-- +goose Up
CREATE TABLE calendars (
  id          BIGINT        NOT NULL AUTO_INCREMENT,
  name        VARCHAR(191)  NOT NULL,
  kind        VARCHAR(16)   NOT NULL,
  definition  JSON          NULL,
  timezone    VARCHAR(64)   NOT NULL DEFAULT 'UTC',
  description VARCHAR(2048) NOT NULL DEFAULT '',
  created_at  DATETIME(6)   NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  updated_at  DATETIME(6)   NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  PRIMARY KEY (id),
  UNIQUE KEY uq_calendars_name (name),
  KEY idx_calendars_updated_at (updated_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

ALTER TABLE schedules
  ADD COLUMN cron_syntax VARCHAR(16) NOT NULL DEFAULT 'standard' AFTER cron_expr,
  ADD COLUMN dst_policy VARCHAR(16) NOT NULL DEFAULT 'once' AFTER cron_syntax,
  ADD COLUMN calendar_id BIGINT NULL AFTER dst_policy,
  ADD KEY idx_schedules_calendar (calendar_id);

-- +goose Down
ALTER TABLE schedules DROP KEY idx_schedules_calendar, DROP COLUMN calendar_id, DROP COLUMN dst_policy, DROP COLUMN cron_syntax;
DROP TABLE calendars;
