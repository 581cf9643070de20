package taskengine

import (
	"context"
	"time"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// jobStore is every query the engine makes; *store.Store implements it, and
// dialect differences stay behind it.
type jobStore interface {
	ClaimJobs(ctx context.Context, p *store.ClaimParams) (*store.ClaimResult, error)
	WaitingJobs(ctx context.Context, p *store.WaitingJobsParams) ([]store.WaitingJob, error)
	StartJobs(ctx context.Context, p *store.StartJobsParams) (map[int64]int, error)
	CompleteJobs(ctx context.Context, p *store.CompleteJobsParams) ([]int64, error)
	ReleaseJobs(ctx context.Context, p *store.ReleaseJobsParams) ([]int64, error)
	CancelStopRequested(ctx context.Context, now time.Time) ([]int64, error)
	ControlRequests(ctx context.Context, nodeID string) ([]store.ControlRequest, error)
	SetControlOutcome(ctx context.Context, p *store.ControlOutcomeParams) (bool, error)
	HeartbeatJobs(ctx context.Context, nodeID string, now time.Time) (int64, error)
	InsertJobLogs(ctx context.Context, logs []models.JobLog) error
	RecoverNode(ctx context.Context, p *store.RecoverNodeParams) (*store.RecoverNodeResult, error)
}

var _ jobStore = (*store.Store)(nil)
