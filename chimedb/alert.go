package chimedb

import (
	"context"
	"time"

	"github.com/chimesched/chime/models"
)

// AlertStore is the database as alerting needs it: the channels and rules
// admins write, the jobs the rules judge, and the alerts outbox. Errors
// wrap ErrNotFound, ErrConflict and ErrInUse where those apply.
type AlertStore interface {
	// ListAlertChannels returns every channel by name; a row that cannot
	// deliver as it is comes back with Invalid set to the reason.
	ListAlertChannels(ctx context.Context) ([]models.AlertChannel, error)
	// SaveAlertChannel creates c (ID 0) or replaces the row c.ID; it sets
	// c.ID. It does not check c: the caller does (models.AlertChannel.Check).
	SaveAlertChannel(ctx context.Context, c *models.AlertChannel) error
	// DeleteAlertChannel deletes channel id; ErrInUse while a rule names it.
	DeleteAlertChannel(ctx context.Context, id int64) error
	// ListAlertRules returns every rule by name; a row that cannot be
	// evaluated as it is comes back with Invalid set to the reason (its
	// params, or a definition, schedule or channel that does not exist).
	ListAlertRules(ctx context.Context) ([]models.AlertRule, error)
	// SaveAlertRule is SaveAlertChannel for rules.
	SaveAlertRule(ctx context.Context, r *models.AlertRule) error
	DeleteAlertRule(ctx context.Context, id int64) error

	// AlertJobs returns the jobs q matches, in q.Order, at most q.Limit;
	// rows that cannot be read are left out.
	AlertJobs(ctx context.Context, q *AlertJobQuery) ([]models.Job, error)
	// RecordAlerts records each alert unless its dedupe_key is there
	// already, throttling as each record asks, all in one transaction; it
	// returns how many it recorded (suppressed ones included).
	RecordAlerts(ctx context.Context, rs []AlertRecord) (int, error)
	// OpenAlerts returns the firing alerts of events not yet resolved,
	// recorded at or after since, oldest first, at most limit.
	OpenAlerts(ctx context.Context, events []models.AlertEvent, since time.Time, limit int) ([]models.Alert, error)
	// ClaimAlerts takes up to p.Limit due pending alerts for p.NodeID, as
	// ClaimNotifications does notices (Settle and MaxAge unused). A row
	// that cannot be read is failed with the reason.
	ClaimAlerts(ctx context.Context, p *models.NotificationClaim) ([]models.Alert, error)
	// FinishAlert records a claimed try (JobID and JobLog unused); it
	// reports whether the row was still this claim's.
	FinishAlert(ctx context.Context, r *models.NotificationResult) (bool, error)
	// ListAlerts returns a page of alerts, newest first (p.BeforeID,
	// p.Limit, p.Status).
	ListAlerts(ctx context.Context, p *AdminListParams) ([]models.Alert, error)

	// LeaseChanges returns the takings of lease name (lease_changes, which
	// triggers on leases write) at or after since, oldest first, at most
	// limit (default and cap MaxAlertJobs).
	LeaseChanges(ctx context.Context, name string, since time.Time, limit int) ([]models.LeaseChange, error)
	// AlertRuns returns the workflow runs q matches, by finished_at and
	// id, at most q.Limit (default and cap MaxAlertJobs).
	AlertRuns(ctx context.Context, q *AlertRunQuery) ([]AlertRun, error)
	// PruneLeaseChanges deletes the lease changes before before; it
	// returns how many.
	PruneLeaseChanges(ctx context.Context, before time.Time) (int64, error)
}

// AlertJobOrder is the order of AlertJobs.
type AlertJobOrder int

const (
	ByFinishedAt     AlertJobOrder = iota // finished_at, id
	ByFinishedAtDesc                      // finished_at DESC, id DESC
	ByRunAt                               // run_at, id
	ByStartedAt                           // started_at, id
)

// AlertJobQuery selects jobs for AlertJobs; zero fields do not filter.
type AlertJobQuery struct {
	Statuses     []models.JobStatus
	ScheduleID   int64
	DefinitionID int64
	// Queue: jobs that run in this queue (their own, else their
	// schedule's, else their definition's, else "default").
	Queue string
	// WorkflowID: jobs of this workflow's runs.
	WorkflowID int64
	// CatchUp: only catch-up jobs that stand for missed fires
	// (missed_fires > 0).
	CatchUp bool
	// MinRecoveries > 0: only jobs taken back from a lost node or reset
	// by the reconciler at least that many times.
	MinRecoveries int
	// FinishedFrom <= finished_at < FinishedTo.
	FinishedFrom, FinishedTo time.Time
	// ScheduledFrom <= scheduled_at < ScheduledTo.
	ScheduledFrom, ScheduledTo time.Time
	// RunAtTo: run_at <= RunAtTo (due by then).
	RunAtTo time.Time
	Order   AlertJobOrder
	Limit   int // default and cap 1000
}

// AlertRunQuery selects workflow runs for AlertRuns; zero fields do not
// filter.
type AlertRunQuery struct {
	Statuses   []models.RunStatus
	WorkflowID int64
	// FinishedFrom <= finished_at < FinishedTo.
	FinishedFrom, FinishedTo time.Time
	Limit                    int
}

// AlertRun is a workflow run with its workflow's name.
type AlertRun struct {
	models.WorkflowRun
	WorkflowName string
}

// MaxAlertJobs caps AlertJobQuery.Limit.
const MaxAlertJobs = 1000

// AlertRecord is one alert to record.
type AlertRecord struct {
	Alert models.Alert
	// At is the evaluator's clock: the alert's created_at, and the end of
	// its throttle window.
	At time.Time
	// ThrottleSeconds > 0 records a firing alert suppressed when another
	// of its rule and subject was recorded (not suppressed) less than this
	// long before At; one recorded is given the count suppressed since.
	ThrottleSeconds int
	// Resolves is the dedupe_key of the firing alert a resolved alert
	// clears; its resolved_at is set.
	Resolves string
}
