package chimedb

import (
	"context"
	"time"

	"github.com/chimesched/chime/models"
)

// ScheduleStore is the database as the schedule engine needs it.
type ScheduleStore interface {
	LoadSchedules(ctx context.Context, p *LoadSchedulesParams) (*LoadSchedulesResult, error)
	EnsureTriggers(ctx context.Context, p *EnsureTriggersParams) error // creates missing time_triggers rows
	UnfinishedSchedules(ctx context.Context, scheduleIDs []int64) (map[int64]bool, error)
	WriteFires(ctx context.Context, p *WriteFiresParams) (*WriteFiresResult, error) // one batch, one transaction
	SetTriggerSpecs(ctx context.Context, p *SetTriggerSpecsParams) error
	MarkInvalid(ctx context.Context, p *MarkInvalidParams) error
}

// TaskStore is every query the task engine makes; dialect differences stay
// behind it.
type TaskStore interface {
	ClaimJobs(ctx context.Context, p *ClaimParams) (*ClaimResult, error)
	WaitingJobs(ctx context.Context, p *WaitingJobsParams) ([]WaitingJob, error)
	StartJobs(ctx context.Context, p *StartJobsParams) (map[int64]int, error)
	CompleteJobs(ctx context.Context, p *CompleteJobsParams) ([]int64, error)
	ReleaseJobs(ctx context.Context, p *ReleaseJobsParams) ([]int64, error)
	CancelStopRequested(ctx context.Context, now time.Time) ([]int64, error)
	ControlRequests(ctx context.Context, nodeID string) ([]ControlRequest, error)
	SetControlOutcome(ctx context.Context, p *ControlOutcomeParams) (bool, error)
	HeartbeatJobs(ctx context.Context, nodeID string, now time.Time) (int64, error)
	InsertJobLogs(ctx context.Context, logs []models.JobLog) error
	RecoverNode(ctx context.Context, p *RecoverNodeParams) (*RecoverNodeResult, error)
}

// LeaseStore is what a lease elector needs: one row per lease, held until
// it expires by the database's clock.
type LeaseStore interface {
	TryAcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (*LeaseTry, error)
	ReleaseLease(ctx context.Context, name, holder string) error
}

// ClusterStore is what a cluster node needs: its row in nodes, the leases,
// and the maintenance the leader of maintenance does (reaping dead nodes,
// reconciling stuck jobs and schedules, retention).
type ClusterStore interface {
	LeaseStore
	GetLease(ctx context.Context, name string) (*LeaseState, error)
	DBNow(ctx context.Context) (time.Time, error)

	RegisterNode(ctx context.Context, p *RegisterNodeParams) error
	HeartbeatNode(ctx context.Context, p *RegisterNodeParams) (string, error)
	SetNodeStatus(ctx context.Context, id, status string) error
	// SyncDrain returns node id's nodes.drain and, when it is draining
	// and idle says the node runs nothing any more, marks it drained
	// first. ErrNotFound when the row is gone.
	SyncDrain(ctx context.Context, id string, idle bool) (string, error)
	DeclareDeadNodes(ctx context.Context, failoverAfter time.Duration) ([]DeadNode, error)
	OrphanNodes(ctx context.Context) ([]string, error)
	DeleteReplacedNodes(ctx context.Context, hostname, keep string) ([]string, error)
	DeleteGoneNodes(ctx context.Context, olderThan time.Duration) (int, error)
	RecoverNode(ctx context.Context, p *RecoverNodeParams) (*RecoverNodeResult, error)

	RecoverStalledJobs(ctx context.Context, silentFor time.Duration) (*RecoverNodeResult, error)
	ReleaseStuckQueued(ctx context.Context, olderThan time.Duration) ([]int64, error)
	ResetJob(ctx context.Context, id int64, reason string) (*models.Job, error)
	CountWaitingJobs(ctx context.Context) (int64, error)
	// CountQueueJobs counts each queue's active jobs (queued, running,
	// paused) and due pending ones, by the queue each job takes (see
	// models.Queue); a queue without such jobs is absent.
	CountQueueJobs(ctx context.Context) (map[string]QueueCount, error)
	FindScheduleAnomalies(ctx context.Context, overdueAfter time.Duration, limit int) (*ScheduleAnomalies, error)
	TouchSchedules(ctx context.Context, ids []int64) error
	DeleteFinishedJobs(ctx context.Context, olderThan time.Duration, batch int) (int, error)
}
