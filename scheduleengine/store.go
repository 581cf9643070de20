package scheduleengine

import (
	"context"

	"github.com/chimesched/chime/store"
)

// Store is the database as the schedule engine needs it; *store.Store
// implements it (store/schedule_engine.go, fire.go, trigger.go), and tests
// wrap it. Its parameter types are store's, aliased below.
type Store interface {
	// LoadSchedules reads schedules with their definitions and triggers.
	LoadSchedules(ctx context.Context, p *LoadSchedulesParams) (*LoadSchedulesResult, error)
	// EnsureTriggers creates the time_triggers rows that do not exist yet.
	EnsureTriggers(ctx context.Context, p *EnsureTriggersParams) error
	// UnfinishedSchedules returns which of the given schedules have a job
	// that is not finished, for concurrency = forbid.
	UnfinishedSchedules(ctx context.Context, scheduleIDs []int64) (map[int64]bool, error)
	// WriteFires writes one batch of fires in one transaction.
	WriteFires(ctx context.Context, p *WriteFiresParams) (*WriteFiresResult, error)
	// SetTriggerSpecs records the timing fingerprint (and, after an edit,
	// the instant fires count from) of existing trigger rows.
	SetTriggerSpecs(ctx context.Context, p *SetTriggerSpecsParams) error
	// MarkInvalid sets an active schedule to invalid with a reason.
	MarkInvalid(ctx context.Context, p *MarkInvalidParams) error
}

type (
	LoadSchedulesParams   = store.LoadSchedulesParams
	LoadSchedulesResult   = store.LoadSchedulesResult
	ScheduleRow           = store.ScheduleRow
	TriggerRow            = store.TriggerRow
	EnsureTriggersParams  = store.EnsureTriggersParams
	TriggerSpec           = store.TriggerSpec
	SetTriggerSpecsParams = store.SetTriggerSpecsParams
	FireJob               = store.FireJob
	WriteFiresParams      = store.WriteFiresParams
	WriteFiresResult      = store.WriteFiresResult
	MarkInvalidParams     = store.MarkInvalidParams
)

var _ Store = (*store.Store)(nil)
