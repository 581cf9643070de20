-- A workflow step's job writes its own ledger row (issue 27's cost: a
-- step's job and its ledger row were two INSERTs on MySQL and SQLite).
--
-- chime_jobs_run_ledger runs after each INSERT of a job that names its
-- run and step (jobs.run_id, jobs.step_id), whoever writes it, chime or
-- plain SQL, in the statement of that INSERT:
--
-- * a ledger row of the step in the run's current generation without a
--   job (one an admin wrote) gets this job's id;
-- * a ledger row that names another job refuses the INSERT: a step runs
--   once per generation, and the job's INSERT itself is refused, so no
--   job is ever left without its row nor a row without its job. The
--   table's primary key (run_id, step_id, generation) stays the guard
--   where two writers race;
-- * a row that names this job already is left as it is;
-- * otherwise the row (run_id, step_id, the run's generation, job id) is
--   written;
-- * a run that does not exist writes nothing (the job is a job of no
--   run the decisions know, as before).
--
-- The same rule on every dialect (see the MySQL and PostgreSQL
-- migrations of the same number). A later migration that rebuilds jobs
-- on SQLite must create this trigger again.

-- +goose Up
-- +goose StatementBegin
CREATE TRIGGER chime_jobs_run_ledger AFTER INSERT ON jobs FOR EACH ROW
WHEN NEW.run_id IS NOT NULL AND NEW.step_id IS NOT NULL
BEGIN
  UPDATE workflow_run_steps SET job_id = NEW.id
  WHERE run_id = NEW.run_id AND step_id = NEW.step_id AND job_id IS NULL
    AND generation = (SELECT r.generation FROM workflow_runs r WHERE r.id = NEW.run_id);
  SELECT RAISE(ABORT, 'chime: this step of the run has its job in the run''s generation already (workflow_run_steps)')
  WHERE EXISTS (SELECT 1 FROM workflow_run_steps rs JOIN workflow_runs r ON r.id = rs.run_id AND r.generation = rs.generation
    WHERE rs.run_id = NEW.run_id AND rs.step_id = NEW.step_id AND (rs.job_id IS NULL OR rs.job_id <> NEW.id));
  INSERT INTO workflow_run_steps (run_id, step_id, generation, job_id)
  SELECT NEW.run_id, NEW.step_id, r.generation, NEW.id FROM workflow_runs r
  WHERE r.id = NEW.run_id AND NOT EXISTS (SELECT 1 FROM workflow_run_steps rs
    WHERE rs.run_id = NEW.run_id AND rs.step_id = NEW.step_id AND rs.generation = r.generation);
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER chime_jobs_run_ledger;
