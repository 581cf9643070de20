package chimedb

import (
	"time"
)

// RegisterNodeParams describes this process for the nodes table.
type RegisterNodeParams struct {
	ID       string
	Hostname string
	PID      int
	Version  string
	Roles    string
}

// DeadNode is a node that DeclareDeadNodes found silent.
type DeadNode struct {
	ID          string
	HeartbeatAt time.Time
	// Silence is how long it had been silent, by the database clock.
	Silence time.Duration
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
