package chimedb

import (
	"context"
	"time"

	"github.com/chimesched/chime/models"
)

// AdminListParams asks for one page of a list, newest first (id descending).
// Zero values mean "no filter".
type AdminListParams struct {
	// BeforeID returns only rows with id < BeforeID (the page cursor); 0 starts at the newest.
	BeforeID int64
	// Limit is the most rows returned; the API asks for one more than it
	// shows to learn whether another page exists.
	Limit int
	// Name filters definitions and schedules by exact name.
	Name string
	// NameContains filters definitions and schedules by a substring of
	// the name, taken literally (% and _ match only themselves).
	NameContains string
	// Status filters schedules and jobs.
	Status string
	// ScheduleID and JobDefinitionID filter schedules (definition only) and jobs.
	ScheduleID      int64
	JobDefinitionID int64
	// Since (inclusive) and Until (exclusive) bound created_at, or
	// scheduled_at for jobs.
	Since, Until time.Time
	// DefinitionPrefix, the scope of a token, keeps only the definitions
	// whose name starts with it (taken literally), and the schedules,
	// jobs and notifications of those definitions.
	DefinitionPrefix string
}

// AdminQueries are the queries behind the admin API and the console: lists,
// plain CRUD and the control requests an admin sends to jobs. Errors wrap
// ErrNotFound, ErrConflict, ErrNoDefinition, ErrInUse or ErrJobState where
// those apply.
type AdminQueries interface {
	ListCalendars(ctx context.Context) ([]models.Calendar, error)
	GetCalendar(ctx context.Context, id int64) (*models.Calendar, error)
	GetCalendarByName(ctx context.Context, name string) (*models.Calendar, error)
	// Calendars returns the calendars of ids that exist, by id.
	Calendars(ctx context.Context, ids []int64) (map[int64]*models.Calendar, error)
	CreateCalendar(ctx context.Context, c *models.Calendar) error
	UpdateCalendar(ctx context.Context, c *models.Calendar) error
	DeleteCalendar(ctx context.Context, id int64) error

	ListDefinitions(ctx context.Context, p *AdminListParams) ([]models.JobDefinition, error)
	ListSchedules(ctx context.Context, p *AdminListParams) ([]models.Schedule, error)
	ListJobs(ctx context.Context, p *AdminListParams) ([]models.Job, error)
	ListJobLogs(ctx context.Context, jobID, afterID int64, limit int) ([]models.JobLog, error)
	ListNodes(ctx context.Context) ([]models.Node, error)
	// SetNodeDrain asks node id to drain (stop claiming; nodes.drain =
	// draining, unless it is draining or drained already) or, with
	// drain false, to claim again (drain = ''), and returns the row;
	// ErrNotFound when no node has that id.
	SetNodeDrain(ctx context.Context, id string, drain bool) (*models.Node, error)
	ListConfigurations(ctx context.Context) ([]models.Configuration, error)
	GetConfiguration(ctx context.Context, name string) (*models.Configuration, error)
	SetConfiguration(ctx context.Context, c *models.Configuration) error
	GetDefinition(ctx context.Context, id int64) (*models.JobDefinition, error)
	CreateDefinition(ctx context.Context, d *models.JobDefinition) error
	UpdateDefinition(ctx context.Context, d *models.JobDefinition) error
	DeleteDefinition(ctx context.Context, id int64) error
	GetJob(ctx context.Context, id int64) (*models.Job, error)
	InsertJob(ctx context.Context, j *models.Job, logMessage string) error
	ControlJob(ctx context.Context, id int64, c models.JobControl) (*models.Job, error)
	GetSchedule(ctx context.Context, id int64) (*models.Schedule, error)
	ScheduleTriggers(ctx context.Context, ids []int64) (map[int64]models.TimeTrigger, error)
	CreateSchedule(ctx context.Context, s *models.Schedule) error
	UpdateSchedule(ctx context.Context, s *models.Schedule) error
	SetScheduleStatus(ctx context.Context, id int64, to models.ScheduleStatus, from ...models.ScheduleStatus) (s *models.Schedule, changed bool, err error)
	DeleteSchedule(ctx context.Context, id int64) error
	ListNotifications(ctx context.Context, p *AdminListParams, jobID int64) ([]models.Notification, error)

	// ListQueues lists the queues rows, checked, with their jobs, and the
	// queues that are named but have no row (Missing), by name.
	ListQueues(ctx context.Context) ([]QueueState, error)
	// GetQueue is one queue of ListQueues, or ErrNotFound.
	GetQueue(ctx context.Context, name string) (*QueueState, error)
	// PutQueue creates q, or sets the limits, description and paused flag
	// of the row of that name (the rate limiter's state starts afresh when
	// the rate changes).
	PutQueue(ctx context.Context, q *models.Queue) error
	// SetQueuePaused pauses or resumes a queue: ErrNotFound when missing.
	SetQueuePaused(ctx context.Context, name string, paused bool) (*models.Queue, error)
	// DeleteQueue deletes a queue no definition, schedule or unfinished
	// job names (else ErrInUse); 'default' is never deleted (ErrInUse).
	DeleteQueue(ctx context.Context, name string) error

	// The console's reads: counts and names around the lists above.

	// CountJobsByStatus counts the jobs due (run_at) at or after since, by
	// status; a status without jobs is absent.
	CountJobsByStatus(ctx context.Context, since time.Time) (map[models.JobStatus]int64, error)
	// CountJobsPerMinute counts the jobs due in each of the n minutes from
	// start (a whole minute), and how many of them failed: n buckets, in
	// order, empty minutes included.
	CountJobsPerMinute(ctx context.Context, start time.Time, n int) ([]MinuteCount, error)
	// CountRunningByNode counts the running jobs of each node.
	CountRunningByNode(ctx context.Context) (map[string]int64, error)
	// LastJobs returns the latest job (by scheduled_at) of each schedule
	// of ids that has one, by schedule id, with id, schedule_id, status,
	// scheduled_at and finished_at set.
	LastJobs(ctx context.Context, scheduleIDs []int64) (map[int64]models.Job, error)
	// ScheduleJobs returns a schedule's latest jobs, newest scheduled_at first.
	ScheduleJobs(ctx context.Context, scheduleID int64, limit int) ([]models.Job, error)
	// DefinitionNames and ScheduleNames map the ids that exist to names.
	DefinitionNames(ctx context.Context, ids []int64) (map[int64]string, error)
	ScheduleNames(ctx context.Context, ids []int64) (map[int64]string, error)
	// DefinitionChoices lists up to MaxDefinitionChoices definitions by
	// name, with id, name and task_type set: what a form offers.
	DefinitionChoices(ctx context.Context) ([]models.JobDefinition, error)

	// The named API tokens (api_tokens).

	// CreateToken inserts t; ErrConflict when its name or hash is taken.
	CreateToken(ctx context.Context, t *models.APIToken) error
	// ListTokens lists every token by name, revoked and expired ones too.
	ListTokens(ctx context.Context) ([]models.APIToken, error)
	// TokenByHash returns the token whose token_sha256 is hash, or
	// ErrNotFound.
	TokenByHash(ctx context.Context, hash string) (*models.APIToken, error)
	// RevokeToken sets revoked_at of the token named name to at, unless
	// it is revoked already, and returns the row; ErrNotFound.
	RevokeToken(ctx context.Context, name string, at time.Time) (*models.APIToken, error)

	// The secrets (secrets): rows of ciphertext; package secrets seals
	// and opens them.

	// PutSecret inserts s, or replaces the ciphertext, nonce and key_id of
	// the row of its name; created says which. s gets the row's id and
	// times.
	PutSecret(ctx context.Context, s *models.Secret) (created bool, err error)
	// GetSecret returns the secret named name, or ErrNotFound.
	GetSecret(ctx context.Context, name string) (*models.Secret, error)
	// ListSecrets lists every secret by name.
	ListSecrets(ctx context.Context) ([]models.Secret, error)
	// DeleteSecret deletes the secret named name; ErrNotFound.
	DeleteSecret(ctx context.Context, name string) error
	// RecryptSecret replaces the ciphertext, nonce and key_id of s.Name's
	// row only while its nonce is still oldNonce (a rotation racing a
	// set loses, and the set's value stands); false when it is not.
	RecryptSecret(ctx context.Context, s *models.Secret, oldNonce string) (bool, error)
}

// MaxDefinitionChoices bounds DefinitionChoices; definitions are written
// one by one by admins, so there are few.
const MaxDefinitionChoices = 1000

// MinuteCount is one minute of CountJobsPerMinute.
type MinuteCount struct {
	Start time.Time
	// Fires counts the jobs due in the minute, Failures those of them
	// that failed.
	Fires, Failures int64
}

// AdminStore is what the API needs from a database: the admin queries, and
// the job resets and stop requests it shares with the cluster's reconciler.
type AdminStore interface {
	Admin() AdminQueries
	ResetJob(ctx context.Context, id int64, reason string) (*models.Job, error)
	ResetSilentJob(ctx context.Context, id int64, reason string, failoverAfter time.Duration) (*models.Job, error)
	AskJobToStop(ctx context.Context, id int64, reason string) (*models.Job, error)
	// UnfinishedSchedules is ScheduleStore's: a forbid schedule with an
	// unfinished job writes no catch-up on resume.
	UnfinishedSchedules(ctx context.Context, scheduleIDs []int64) (map[int64]bool, error)
	Ping(ctx context.Context) error
}

// ConsoleStore is what the web console reads; it writes through the API.
type ConsoleStore interface {
	Admin() AdminQueries
	// GetLease tells which nodes lead (SchedulerLease, MaintenanceLease).
	GetLease(ctx context.Context, name string) (*LeaseState, error)
	// RevokeSession records a console logout until the cookie's expiry,
	// for every node and across restarts.
	RevokeSession(ctx context.Context, id string, expires, now time.Time) error
	// SessionRevoked tells whether a session was logged out.
	SessionRevoked(ctx context.Context, id string) (bool, error)
}

// QueueState is a queues row as the admin doors show it: the row, why it
// is invalid (its jobs then wait; "" when valid), and its jobs now.
type QueueState struct {
	models.Queue
	// Invalid says what is wrong with the row (or that no row exists for a
	// queue definitions, schedules or jobs name: Missing).
	Invalid string
	Missing bool
	// Running counts the queue's jobs queued, running or paused; Waiting
	// its pending jobs that are due.
	Running, Waiting int64
}

// QueueCount is the running and waiting jobs of one queue.
type QueueCount struct{ Running, Waiting int64 }
