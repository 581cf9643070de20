-- Job priorities (1 lowest .. 10 highest; 5, Quartz's default, is the
-- default). job_definitions.priority is the default, schedules.priority
-- (NULL = the definition's) overrides it, and jobs.priority is the
-- effective priority a job was written with. A job written without one
-- (an admin's plain INSERT) takes its schedule's, else its definition's:
-- the BEFORE INSERT trigger fills it, and an UPDATE to NULL does the same.
--
-- jobs.claim_key is what the claim orders due jobs by: run_at in
-- milliseconds since the Unix epoch, moved one minute earlier per priority
-- above 5 and one minute later per priority below. So among due jobs the
-- higher priority goes first, and a due job is passed over only by jobs
-- that became due less than (their priority - its priority) minutes after
-- it: nothing starves. The triggers keep it right for every writer, plain
-- SQL included; they run after the time-zone triggers of 00003, so run_at
-- is UTC by then. idx_jobs_claim_order serves the claim as a range scan.

-- +goose Up
ALTER TABLE job_definitions ADD COLUMN priority INT NOT NULL DEFAULT 5,
  ADD CONSTRAINT chk_job_definitions_priority CHECK (priority BETWEEN 1 AND 10);
ALTER TABLE schedules ADD COLUMN priority INT NULL DEFAULT NULL,
  ADD CONSTRAINT chk_schedules_priority CHECK (priority BETWEEN 1 AND 10);
ALTER TABLE jobs ADD COLUMN priority INT NULL DEFAULT NULL, ADD COLUMN claim_key BIGINT NULL DEFAULT NULL,
  ADD CONSTRAINT chk_jobs_priority CHECK (priority BETWEEN 1 AND 10);
-- Every definition is at 5 so far, so every job is.
UPDATE jobs SET priority = 5, claim_key = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', run_at) DIV 1000, updated_at = updated_at;
ALTER TABLE jobs ADD INDEX idx_jobs_claim_order (status, claim_key, id);

-- +goose StatementBegin
CREATE TRIGGER chime_jobs_priority_insert BEFORE INSERT ON jobs FOR EACH ROW FOLLOWS chime_jobs_utc_insert
BEGIN
  IF NEW.priority IS NULL THEN
    SET NEW.priority = COALESCE((SELECT s.priority FROM schedules s WHERE s.id = NEW.schedule_id),
      (SELECT d.priority FROM job_definitions d WHERE d.id = NEW.job_definition_id), 5);
  END IF;
  SET NEW.claim_key = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', NEW.run_at) DIV 1000 - (NEW.priority - 5) * 60000;
END
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER chime_jobs_priority_update BEFORE UPDATE ON jobs FOR EACH ROW FOLLOWS chime_jobs_utc_update
BEGIN
  IF NEW.priority IS NULL THEN
    SET NEW.priority = COALESCE((SELECT s.priority FROM schedules s WHERE s.id = NEW.schedule_id),
      (SELECT d.priority FROM job_definitions d WHERE d.id = NEW.job_definition_id), 5);
  END IF;
  SET NEW.claim_key = TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', NEW.run_at) DIV 1000 - (NEW.priority - 5) * 60000;
END
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER chime_jobs_priority_update;
DROP TRIGGER chime_jobs_priority_insert;
ALTER TABLE jobs DROP INDEX idx_jobs_claim_order;
ALTER TABLE jobs DROP CONSTRAINT chk_jobs_priority, DROP COLUMN claim_key, DROP COLUMN priority;
ALTER TABLE schedules DROP CONSTRAINT chk_schedules_priority, DROP COLUMN priority;
ALTER TABLE job_definitions DROP CONSTRAINT chk_job_definitions_priority, DROP COLUMN priority;
