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
	// Status filters schedules and jobs.
	Status string
	// ScheduleID and JobDefinitionID filter schedules (definition only) and jobs.
	ScheduleID      int64
	JobDefinitionID int64
	// Since (inclusive) and Until (exclusive) bound created_at, or
	// scheduled_at for jobs.
	Since, Until time.Time
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
