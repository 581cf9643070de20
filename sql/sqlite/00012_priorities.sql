-- Job priorities, as in the MySQL and PostgreSQL 00012: 1 lowest .. 10
-- highest, 5 (Quartz's default) the default. A job written without a
-- priority (or set to NULL) takes its schedule's, else its definition's:
-- SQLite's BEFORE triggers cannot change NEW, so AFTER triggers fill it in
-- (the column allows NULL only for that instant). The CHECKs also refuse
-- text and fractions, which SQLite's affinity would otherwise store.
--
-- jobs.claim_key, what the claim orders due jobs by, is a generated column:
-- run_at in milliseconds since the Unix epoch, moved one minute earlier per
-- priority above 5 (later below). julianday() keeps whole milliseconds, so
-- the rounding is exact.

-- +goose Up
ALTER TABLE job_definitions ADD COLUMN priority INTEGER NOT NULL DEFAULT 5
  CONSTRAINT chk_job_definitions_priority CHECK (typeof(priority) = 'integer' AND priority BETWEEN 1 AND 10);
ALTER TABLE schedules ADD COLUMN priority INTEGER DEFAULT NULL
  CONSTRAINT chk_schedules_priority CHECK (priority IS NULL OR (typeof(priority) = 'integer' AND priority BETWEEN 1 AND 10));
ALTER TABLE jobs ADD COLUMN priority INTEGER DEFAULT NULL
  CONSTRAINT chk_jobs_priority CHECK (priority IS NULL OR (typeof(priority) = 'integer' AND priority BETWEEN 1 AND 10));
-- Every definition is at 5 so far, so every job is.
UPDATE jobs SET priority = 5;
-- The GLOB keeps 'now' away from julianday(), which SQLite refuses in a
-- generated column: 00003's trigger then refuses the row with its message.
ALTER TABLE jobs ADD COLUMN claim_key INTEGER GENERATED ALWAYS AS
  (CAST(round((julianday(CASE WHEN run_at GLOB '[0-9]*' THEN run_at END) - 2440587.5) * 86400000.0) AS INTEGER)
   - (coalesce(priority, 5) - 5) * 60000) VIRTUAL;
CREATE INDEX idx_jobs_claim_order ON jobs (status, claim_key, id);

-- +goose StatementBegin
CREATE TRIGGER chime_jobs_priority_insert AFTER INSERT ON jobs FOR EACH ROW WHEN NEW.priority IS NULL
BEGIN
  UPDATE jobs SET priority = coalesce((SELECT s.priority FROM schedules s WHERE s.id = NEW.schedule_id),
    (SELECT d.priority FROM job_definitions d WHERE d.id = NEW.job_definition_id), 5)
  WHERE rowid = NEW.rowid;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER chime_jobs_priority_update AFTER UPDATE OF priority ON jobs FOR EACH ROW WHEN NEW.priority IS NULL
BEGIN
  UPDATE jobs SET priority = coalesce((SELECT s.priority FROM schedules s WHERE s.id = NEW.schedule_id),
    (SELECT d.priority FROM job_definitions d WHERE d.id = NEW.job_definition_id), 5)
  WHERE rowid = NEW.rowid;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER chime_jobs_priority_update;
DROP TRIGGER chime_jobs_priority_insert;
DROP INDEX idx_jobs_claim_order;
ALTER TABLE jobs DROP COLUMN claim_key;
ALTER TABLE jobs DROP COLUMN priority;
ALTER TABLE schedules DROP COLUMN priority;
ALTER TABLE job_definitions DROP COLUMN priority;
