-- Placement and drain (issue 26): which nodes may run a job, and taking a
-- node out of the claim without stopping it (docs/limits.md).
--
-- nodes.tags: the node's tags from its configuration (node.tags), written
-- at registration, sorted and comma-separated: each 1 to 64 of a-z 0-9 . _
-- : -, at most 32. nodes.drain: '' (claims as usual), 'draining' (an
-- admin asked it to stop claiming; it finishes or, after
-- taskengine.drain_timeout, hands back what it runs), 'drained' (written
-- by the node once it runs nothing). An admin writes 'draining' or '' by
-- the API, the CLI or plain SQL; the node acts on it within one heartbeat.
--
-- required_tags: the tags a node must all carry to claim the job,
-- comma-separated like nodes.tags. jobs.required_tags (an ad hoc job's
-- override), else schedules.required_tags, else
-- job_definitions.required_tags; NULL or '' means "not set". A value that
-- does not parse makes the job wait with the reason, never crash a claim.
--
-- Broadcast (run on every node): job_definitions.broadcast TRUE makes a
-- pending job of the definition a seed. The claim that picks it turns it
-- into one job per live node that runs jobs, is not draining and has its
-- required tags: the seed becomes shard 0, the others are inserted as
-- copies; each has shard_index (0-based), shard_total, shard_group (the
-- seed's id) and target_node (only that node claims it). The run as a
-- whole is the rows of one shard_group: it succeeded when they all have.
--
-- job_definitions.rate_limit / rate_period_ms / rate_tat_us: a
-- definition's own rate limit, with the meaning and bounds of the queues'
-- columns of the same names (migration 00017), taken in the same claim.

-- +goose Up
ALTER TABLE nodes ADD COLUMN tags VARCHAR(2100) NOT NULL DEFAULT '', ADD COLUMN drain VARCHAR(16) NOT NULL DEFAULT '';
ALTER TABLE job_definitions ADD COLUMN required_tags VARCHAR(2100) NOT NULL DEFAULT '';
ALTER TABLE schedules ADD COLUMN required_tags VARCHAR(2100) NULL;
ALTER TABLE jobs ADD COLUMN required_tags VARCHAR(2100) NULL;
ALTER TABLE job_definitions ADD COLUMN broadcast TINYINT(1) NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN shard_index INT NULL, ADD COLUMN shard_total INT NULL, ADD COLUMN shard_group BIGINT NULL,
  ADD COLUMN target_node VARCHAR(191) NULL;
ALTER TABLE job_definitions ADD COLUMN rate_limit BIGINT NULL, ADD COLUMN rate_period_ms BIGINT NULL, ADD COLUMN rate_tat_us BIGINT NULL;

-- +goose Down
ALTER TABLE job_definitions DROP COLUMN rate_tat_us, DROP COLUMN rate_period_ms, DROP COLUMN rate_limit;
ALTER TABLE jobs DROP COLUMN target_node, DROP COLUMN shard_group, DROP COLUMN shard_total, DROP COLUMN shard_index;
ALTER TABLE job_definitions DROP COLUMN broadcast;
ALTER TABLE jobs DROP COLUMN required_tags;
ALTER TABLE schedules DROP COLUMN required_tags;
ALTER TABLE job_definitions DROP COLUMN required_tags;
ALTER TABLE nodes DROP COLUMN drain, DROP COLUMN tags;
