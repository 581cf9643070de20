-- A schedule whose timing is edited (schedule_type, cron_expr,
-- interval_seconds, run_at, timezone, start_at) starts afresh from the edit
-- instead of catching up what the new rule would have fired since the last
-- fire. spec_hash is the fingerprint of the timing the trigger was computed
-- from; when the schedules row no longer matches it, the schedule engine
-- counts fires from the moment it saw the change, spec_changed_at. Empty:
-- a row from before this migration, adopted without a reset.

-- +goose Up
ALTER TABLE time_triggers
  ADD COLUMN spec_hash VARCHAR(64) NOT NULL DEFAULT '',
  ADD COLUMN spec_changed_at DATETIME(6) NULL;

-- +goose Down
ALTER TABLE time_triggers DROP COLUMN spec_hash, DROP COLUMN spec_changed_at;
