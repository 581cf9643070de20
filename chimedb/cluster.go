package chimedb

import (
	"time"

	"github.com/chimesched/chime/models"
)

// The leases of a cluster, rows of the leases table.
const (
	// SchedulerLease elects the node whose schedule engine fires.
	SchedulerLease = "scheduler"
	// MaintenanceLease elects the node that reconciles and deletes old jobs.
	MaintenanceLease = "maintenance"
)

// RegisterNodeParams describes this process for the nodes table.
type RegisterNodeParams struct {
	ID       string
	Hostname string
	PID      int
	Version  string
	Roles    string
	// Tags are the node's tags (node.tags), sorted and comma-separated.
	Tags string
	// Drain is the nodes.drain a row written anew starts with: the
	// node's own, when its row was deleted while it was draining (see
	// cluster.Membership). A row that exists keeps its drain.
	Drain string
}

// DeadNode is a node that DeclareDeadNodes found silent.
type DeadNode struct {
	ID          string
	HeartbeatAt time.Time
	// Silence is how long it had been silent, by the database clock.
	Silence time.Duration
}

// MaxLeaseTTLs bounds how far past the database's now a lease's
// expires_at may lie, in TTLs of the node that looks: farther is absurd
// (a row written by hand; a holder renews to now + its TTL), and the node
// cuts it to now + its TTL, so the lease expires on the database's clock.
// The nodes of a cluster must not set cluster.failover_after (the TTL)
// more than this many times apart.
const MaxLeaseTTLs = 10

// LeaseTry is what one TryAcquireLease found and did, in database time.
type LeaseTry struct {
	// Held: the caller holds the lease now.
	Held bool
	// Holder and ExpiresAt are the row as the call left it; Holder is
	// empty for a free lease.
	Holder    string
	ExpiresAt time.Time
	// HolderLive: a nodes row names Holder and says it is alive. False
	// for a holder no node row names (a hand-written one, a node since
	// deleted) or one that is dead or stopped.
	HolderLive bool
	// Cut is the expires_at the call found more than MaxLeaseTTLs × ttl
	// past the database's now (or not a time the database compares
	// before it), as the database shows it, when it cut that to now + ttl;
	// empty when it did not.
	Cut string
}

// LeaseState is a lease row as the database sees it now.
type LeaseState struct {
	Name      string
	Holder    string
	ExpiresAt time.Time
	// Live is true when Holder is set and ExpiresAt is after the database's now.
	Live bool
}

// ScheduleAnomalies is what FindScheduleAnomalies saw.
type ScheduleAnomalies struct {
	// MissingTrigger lists active schedules without a time_triggers row.
	MissingTrigger []int64
	// Overdue lists active schedules whose next_fire_at is older than the bound.
	Overdue []OverdueTrigger
}

// Empty reports whether nothing was found.
func (a *ScheduleAnomalies) Empty() bool { return len(a.MissingTrigger) == 0 && len(a.Overdue) == 0 }

// OverdueTrigger is an active schedule's trigger whose next fire is far in
// the past: no leader has fired it for longer than a failover takes.
type OverdueTrigger struct {
	ScheduleID int64
	NextFireAt time.Time
	Overdue    time.Duration
}

// JobLastHeard is when a queued, running or paused job was last heard
// from: its latest sign of life (heartbeat, else start, else queueing) or
// its row's last write, whichever is later. heartbeat_at is on the node's
// clock, updated_at on the database's: the job is silent only when both
// are old, as in a store's RecoverStalledJobs. store judges a reset with it, and the console which jobs to
// offer one.
func JobLastHeard(job *models.Job) time.Time {
	last := job.UpdatedAt
	for _, t := range []*time.Time{job.HeartbeatAt, job.StartedAt, job.QueuedAt} {
		if t != nil {
			if t.After(last) {
				last = *t
			}
			break
		}
	}
	return last
}
