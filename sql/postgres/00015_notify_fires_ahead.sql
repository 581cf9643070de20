-- chime_jobs_notify (00001) sends NOTIFY chime_jobs, at COMMIT, for a job
-- inserted pending and due. It judged "due" at the INSERT, and a fire
-- prepared ahead (scheduleengine.fire_ahead, at most 2 s) inserts its jobs
-- before their instant and commits at it: no notification was sent, and
-- the nodes other than the leader learnt of its fires at their next poll.
-- Jobs due within 5 s of the INSERT (the largest fire-ahead, plus room for
-- the leader's clock running ahead of the database's) now notify too. A
-- job inserted due a few seconds after its commit wakes the nodes once for
-- nothing and starts at the poll after it is due, as before.
--
-- MySQL and SQLite have no NOTIFY: there the task engines read the jobs
-- table's primary key every taskengine.wake_interval (store.JobsWatch),
-- which sees a job when its transaction commits, and this migration does
-- nothing.

-- +goose Up
DROP TRIGGER chime_jobs_notify ON jobs;
CREATE TRIGGER chime_jobs_notify AFTER INSERT ON jobs
  FOR EACH ROW WHEN (NEW.status = 'pending' AND NEW.run_at <= statement_timestamp() + interval '5 seconds')
  EXECUTE FUNCTION chime_jobs_notify();

-- +goose Down
DROP TRIGGER chime_jobs_notify ON jobs;
CREATE TRIGGER chime_jobs_notify AFTER INSERT ON jobs
  FOR EACH ROW WHEN (NEW.status = 'pending' AND NEW.run_at <= statement_timestamp())
  EXECUTE FUNCTION chime_jobs_notify();
