package scheduleengine

import (
	"context"

	"github.com/chimesched/chime/store"
)

// Store is the database as the schedule engine needs it; *store.Store
// implements it (store/schedule_engine.go, fire.go, trigger.go), and tests
// wrap it. Its parameter types are store's, aliased below.
type Store interface {
	LoadSchedules(ctx context.Context, p *LoadSchedulesParams) (*LoadSchedulesResult, error)
	EnsureTriggers(ctx context.Context, p *EnsureTriggersParams) error // creates missing time_triggers rows
	UnfinishedSchedules(ctx context.Context, scheduleIDs []int64) (map[int64]bool, error)
	WriteFires(ctx context.Context, p *WriteFiresParams) (*WriteFiresResult, error) // one batch, one transaction
	SetTriggerSpecs(ctx context.Context, p *SetTriggerSpecsParams) error
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
