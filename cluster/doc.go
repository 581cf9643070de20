// Package cluster lets several chime processes share one database safely,
// as Quartz's clustered JobStore does, but judged on the database's clock
// instead of the nodes' clocks, so no node needs its clock in sync.
//
// A Node, started before the engines and stopped after them:
//
//   - registers this process in nodes and heartbeats it every Heartbeat
//     (heartbeat_at = the database's now), and marks it stopped on a
//     graceful stop;
//   - reaps: any node silent for FailoverAfter by the database's clock is
//     declared dead (one guarded UPDATE, so exactly once) and its queued,
//     running and paused jobs are recovered with store.RecoverNode, as are
//     those of a node that stopped or vanished holding jobs; the recovery
//     re-checks under a lock of the node's row that it is not alive
//     (UnlessAlive), so a node restarting under the same id keeps the jobs
//     its new process claimed;
//   - elects: an Elector per lease (leases table, expires_at in database
//     time). The scheduler Elector is the schedule engine's Leadership;
//     a second lease, maintenance, picks the one node that
//     runs the reconciler and retention, whatever its roles. A standby
//     cuts an absurd expires_at (chimedb.MaxLeaseTTLs) to now + TTL and
//     logs it, and logs a holder that is no live node;
//   - reconciles (maintenance leader): running jobs without a heartbeat for
//     FailoverAfter are retried or failed, jobs queued for QueuedAfter on a
//     node that never started them go back to pending, active schedules
//     without a trigger or with a long-overdue trigger are logged and handed
//     back to the schedule engine by touching their updated_at;
//   - deletes finished jobs older than RetentionDays, with their logs, in
//     small batches (maintenance leader).
//
// No judgement is made by a node that has not itself been in contact with
// the database for a full FailoverAfter: after an outage every heartbeat in
// the table is stale, and the first node back must not take the others for
// dead before they have had a chance to beat.
//
// Lifecycle: New(st, *Config), then Start(ctx) (registration errors are
// returned), then Stop(ctx). Both are idempotent and Stop before Start is
// harmless. An Elector (NewElector(st, *ElectorConfig)) is a
// startstop.Service of its own: it stops when Stop is called or Start's ctx
// ends, and starts again after either; only Stop gives the lease back (a
// run ended by its ctx lets it expire, as a crash would). The clock in
// Config only drives timers and the leader's own deadline; every judgement
// other nodes rely on is made in SQL against the database's clock.
//
// cluster may import chimedb (chimedb.ClusterStore; store implements it),
// models, internal/metrics, logrus and clockwork; it never imports store, an
// engine, the API or the CLI.
package cluster
