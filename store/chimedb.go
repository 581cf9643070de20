package store

import "github.com/chimesched/chime/chimedb"

// The parameter and row types of the engines' queries live in chimedb, so
// that the engines build without gorm and the drivers; these aliases keep
// their store names.
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

	ClaimParams          = chimedb.ClaimParams
	ClaimResult          = chimedb.ClaimResult
	ClaimCursor          = chimedb.ClaimCursor
	ClaimedJob           = chimedb.ClaimedJob
	WaitingJobsParams    = chimedb.WaitingJobsParams
	WaitingJob           = chimedb.WaitingJob
	StartJobsParams      = chimedb.StartJobsParams
	StartJob             = chimedb.StartJob
	CompleteJobsParams   = chimedb.CompleteJobsParams
	JobOutcome           = chimedb.JobOutcome
	OutcomeNotice        = chimedb.OutcomeNotice
	ReleaseJobsParams    = chimedb.ReleaseJobsParams
	ControlRequest       = chimedb.ControlRequest
	ControlOutcomeParams = chimedb.ControlOutcomeParams
	RecoverNodeParams    = chimedb.RecoverNodeParams
	RecoverNodeResult    = chimedb.RecoverNodeResult

	RegisterNodeParams = chimedb.RegisterNodeParams
	DeadNode           = chimedb.DeadNode
	LeaseState         = chimedb.LeaseState
	ScheduleAnomalies  = chimedb.ScheduleAnomalies
	OverdueTrigger     = chimedb.OverdueTrigger

	AdminListParams = chimedb.AdminListParams
)

var (
	_ chimedb.ScheduleStore = (*Store)(nil)
	_ chimedb.TaskStore     = (*Store)(nil)
	_ chimedb.ClusterStore  = (*Store)(nil)
	_ chimedb.AdminStore    = (*Store)(nil)
	_ chimedb.ConsoleStore  = (*Store)(nil)
	_ chimedb.AdminQueries  = (*Admin)(nil)
)
