package scheduleengine

import (
	"github.com/chimesched/chime/chimedb"
)

// Store is the database as the schedule engine needs it; *store.Store
// implements it, and tests wrap it. It and its parameter types live in
// chimedb, which imports no driver; they are aliased here under the names
// the engine has always used.
type Store = chimedb.ScheduleStore

type (
	LoadSchedulesParams   = chimedb.LoadSchedulesParams
	LoadSchedulesResult   = chimedb.LoadSchedulesResult
	ScheduleRow           = chimedb.ScheduleRow
	TriggerRow            = chimedb.TriggerRow
	EnsureTriggersParams  = chimedb.EnsureTriggersParams
	TriggerSpec           = chimedb.TriggerSpec
	SetTriggerSpecsParams = chimedb.SetTriggerSpecsParams
	FireJob               = chimedb.FireJob
	WriteFiresParams      = chimedb.WriteFiresParams
	WriteFiresResult      = chimedb.WriteFiresResult
	MarkInvalidParams     = chimedb.MarkInvalidParams
)
