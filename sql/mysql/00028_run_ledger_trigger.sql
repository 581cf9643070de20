-- A workflow step's job writes its own ledger row: see the SQLite
-- migration of the same number for the rule. MySQL has no WHEN on a
-- trigger: the body tests run_id and step_id first and declares its
-- variables inside that test, so a job of no run (every fire's) costs
-- the trigger's call and the test, about 2 µs a row on MariaDB 10.11
-- (50,000-row INSERTs into a narrow table, with and without it).
--
-- The run's generation is read with a plain SELECT: under READ
-- COMMITTED (chime's sessions) that is the newest committed row, or this
-- transaction's own, and chime writes a run's steps holding its row's
-- lock. MESSAGE_TEXT stays under MySQL's 128 characters.

-- +goose Up
-- +goose StatementBegin
CREATE TRIGGER chime_jobs_run_ledger AFTER INSERT ON jobs FOR EACH ROW
BEGIN
  IF NEW.run_id IS NOT NULL AND NEW.step_id IS NOT NULL THEN BEGIN
    DECLARE gen INT;
    DECLARE taken BIGINT;
    SET gen = (SELECT r.generation FROM workflow_runs r WHERE r.id = NEW.run_id);
    IF gen IS NOT NULL THEN
      UPDATE workflow_run_steps SET job_id = NEW.id
      WHERE run_id = NEW.run_id AND step_id = NEW.step_id AND generation = gen AND job_id IS NULL;
      IF ROW_COUNT() = 0 THEN
        -- NULL: no row; 0: a row without a job (another writer's, since).
        SET taken = (SELECT COALESCE(job_id, 0) FROM workflow_run_steps
          WHERE run_id = NEW.run_id AND step_id = NEW.step_id AND generation = gen);
        IF taken IS NULL THEN
          INSERT INTO workflow_run_steps (run_id, step_id, generation, job_id) VALUES (NEW.run_id, NEW.step_id, gen, NEW.id);
        ELSEIF taken <> NEW.id THEN
          SIGNAL SQLSTATE '23000' SET MESSAGE_TEXT = 'chime: this step of the run has its job in the run''s generation already (workflow_run_steps)';
        END IF;
      END IF;
    END IF;
  END; END IF;
END
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER chime_jobs_run_ledger;
