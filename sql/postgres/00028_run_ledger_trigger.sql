-- A workflow step's job writes its own ledger row: see the SQLite
-- migration of the same number for the rule. It replaces, for chime's
-- own writes, the data-modifying WITH that wrote a step's job and its
-- ledger row in one statement: the rule now holds for a job written by
-- plain SQL too, as on the other dialects. A row trigger with a WHEN: a
-- job of no run (every fire's) calls nothing.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION chime_jobs_run_ledger() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  gen INT;
  taken BIGINT;
BEGIN
  SELECT r.generation INTO gen FROM workflow_runs r WHERE r.id = NEW.run_id;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  UPDATE workflow_run_steps SET job_id = NEW.id
  WHERE run_id = NEW.run_id AND step_id = NEW.step_id AND generation = gen AND job_id IS NULL;
  IF FOUND THEN
    RETURN NULL;
  END IF;
  SELECT COALESCE(job_id, 0) INTO taken FROM workflow_run_steps
  WHERE run_id = NEW.run_id AND step_id = NEW.step_id AND generation = gen;
  IF NOT FOUND THEN
    INSERT INTO workflow_run_steps (run_id, step_id, generation, job_id) VALUES (NEW.run_id, NEW.step_id, gen, NEW.id);
  ELSIF taken <> NEW.id THEN
    RAISE unique_violation USING MESSAGE = 'chime: this step of the run has its job in the run''s generation already (workflow_run_steps)';
  END IF;
  RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER chime_jobs_run_ledger AFTER INSERT ON jobs
  FOR EACH ROW WHEN (NEW.run_id IS NOT NULL AND NEW.step_id IS NOT NULL)
  EXECUTE FUNCTION chime_jobs_run_ledger();

-- +goose Down
DROP TRIGGER chime_jobs_run_ledger ON jobs;
DROP FUNCTION chime_jobs_run_ledger();
