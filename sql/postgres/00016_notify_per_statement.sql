-- chime_jobs_notify ran its PL/pgSQL function once per inserted row that
-- was pending and due within the fire-ahead (00015): a fire of 1,000 jobs
-- made 1,000 calls for what PostgreSQL folds into one notification at
-- COMMIT. It is now a statement-level trigger over the statement's
-- inserted rows (a transition table): one call per INSERT, and one
-- pg_notify when any of its rows is pending and due by the rule of 00015
-- (run_at at most 5 s after the statement began).
--
-- chime_jobs_notify_update stays a row trigger: PostgreSQL refuses a
-- transition table on a trigger with a column list (UPDATE OF status,
-- run_at), and its WHEN keeps the call off claims and completions.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION chime_jobs_notify_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM chime_new_jobs
             WHERE status = 'pending' AND run_at <= statement_timestamp() + interval '5 seconds') THEN
    PERFORM pg_notify('chime_jobs', '');
  END IF;
  RETURN NULL;
END
$$;
-- +goose StatementEnd
DROP TRIGGER chime_jobs_notify ON jobs;
CREATE TRIGGER chime_jobs_notify AFTER INSERT ON jobs
  REFERENCING NEW TABLE AS chime_new_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION chime_jobs_notify_inserted();

-- +goose Down
DROP TRIGGER chime_jobs_notify ON jobs;
DROP FUNCTION chime_jobs_notify_inserted();
CREATE TRIGGER chime_jobs_notify AFTER INSERT ON jobs
  FOR EACH ROW WHEN (NEW.status = 'pending' AND NEW.run_at <= statement_timestamp() + interval '5 seconds')
  EXECUTE FUNCTION chime_jobs_notify();
