-- A schedule may start a workflow run instead of a job (issue 27): see
-- the MySQL migration of the same number (and, there, how a run's final
-- state is emailed).

-- +goose Up
ALTER TABLE schedules
  ALTER COLUMN job_definition_id DROP NOT NULL,
  ADD COLUMN workflow_id BIGINT NULL,
  ADD CONSTRAINT chk_schedules_target CHECK ((job_definition_id IS NULL) <> (workflow_id IS NULL));
CREATE INDEX idx_schedules_workflow ON schedules (workflow_id);
ALTER TABLE workflow_runs
  ADD COLUMN schedule_id BIGINT NULL,
  ADD COLUMN scheduled_at TIMESTAMPTZ NULL,
  ADD CONSTRAINT uq_workflow_runs_schedule_fire UNIQUE (schedule_id, scheduled_at);
ALTER TABLE workflows
  ADD COLUMN notify_on TEXT NOT NULL DEFAULT 'never'
    CONSTRAINT chk_workflows_notify_on CHECK (notify_on IN ('never', 'always', 'success', 'failure')),
  ADD COLUMN notify_emails TEXT NOT NULL DEFAULT '';
ALTER TABLE notifications ADD COLUMN run_id BIGINT NULL;

-- +goose Down
DELETE FROM notifications WHERE run_id IS NOT NULL;
ALTER TABLE notifications DROP COLUMN run_id;
ALTER TABLE workflows DROP COLUMN notify_emails, DROP COLUMN notify_on;
ALTER TABLE workflow_runs DROP CONSTRAINT uq_workflow_runs_schedule_fire, DROP COLUMN scheduled_at, DROP COLUMN schedule_id;
DROP INDEX idx_schedules_workflow;
DELETE FROM schedules WHERE job_definition_id IS NULL;
ALTER TABLE schedules DROP CONSTRAINT chk_schedules_target, DROP COLUMN workflow_id,
  ALTER COLUMN job_definition_id SET NOT NULL;
