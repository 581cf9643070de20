-- Job priorities, as in the MySQL and SQLite 00012: 1 lowest .. 10
-- highest, 5 (Quartz's default) the default. jobs.priority written NULL
-- or left out takes the schedule's, else the definition's (the BEFORE
-- trigger; PostgreSQL checks NOT NULL after it).
--
-- jobs.claim_key, what the claim orders due jobs by, is run_at in
-- milliseconds since the Unix epoch moved one minute earlier per priority
-- above 5 (later below). It is kept by the trigger rather than a generated
-- column: a generated column needs an IMMUTABLE expression, and neither
-- timestamptz arithmetic nor extract(epoch ...) is marked so.

-- +goose Up
ALTER TABLE job_definitions ADD COLUMN priority INT NOT NULL DEFAULT 5
  CONSTRAINT chk_job_definitions_priority CHECK (priority BETWEEN 1 AND 10);
ALTER TABLE schedules ADD COLUMN priority INT
  CONSTRAINT chk_schedules_priority CHECK (priority BETWEEN 1 AND 10);
-- Every definition is at 5 so far, so every job is; the default goes right
-- after, so that a job written without a priority inherits one.
ALTER TABLE jobs ADD COLUMN priority INT NOT NULL DEFAULT 5
  CONSTRAINT chk_jobs_priority CHECK (priority BETWEEN 1 AND 10), ADD COLUMN claim_key BIGINT;
ALTER TABLE jobs ALTER COLUMN priority DROP DEFAULT;
ALTER TABLE jobs DISABLE TRIGGER chime_jobs_updated_at;
UPDATE jobs SET claim_key = floor(extract(epoch FROM run_at) * 1000)::bigint;
ALTER TABLE jobs ENABLE TRIGGER chime_jobs_updated_at;
ALTER TABLE jobs ALTER COLUMN claim_key SET NOT NULL;
CREATE INDEX idx_jobs_claim_order ON jobs (status, claim_key, id);

-- +goose StatementBegin
CREATE FUNCTION chime_jobs_priority() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.priority IS NULL THEN
    NEW.priority := COALESCE((SELECT s.priority FROM schedules s WHERE s.id = NEW.schedule_id),
      (SELECT d.priority FROM job_definitions d WHERE d.id = NEW.job_definition_id), 5);
  END IF;
  NEW.claim_key := floor(extract(epoch FROM NEW.run_at) * 1000)::bigint - (NEW.priority - 5) * 60000;
  RETURN NEW;
END $$;
-- +goose StatementEnd
CREATE TRIGGER chime_jobs_priority BEFORE INSERT OR UPDATE OF run_at, priority, claim_key ON jobs
  FOR EACH ROW EXECUTE FUNCTION chime_jobs_priority();

-- +goose Down
DROP TRIGGER chime_jobs_priority ON jobs;
DROP FUNCTION chime_jobs_priority();
DROP INDEX idx_jobs_claim_order;
ALTER TABLE jobs DROP COLUMN claim_key, DROP COLUMN priority;
ALTER TABLE schedules DROP COLUMN priority;
ALTER TABLE job_definitions DROP COLUMN priority;
