package models

import (
	"fmt"
	"time"
)

// JobDefinition is what to run: a task type with its default params and
// run policy. Table job_definitions.
//
// RequestsRecovery (Quartz's "requests recovery") says whether a job cut off
// by the loss of its node runs again without using an attempt. The column
// defaults to TRUE, but Go's zero value is false: code that builds a
// definition sets it.
//
// Priority is the default priority of its jobs (see PriorityStep); 0 in Go
// leaves it out of an insert, so the column's default, 5, applies.
type JobDefinition struct {
	ID                  int64    `gorm:"column:id;primaryKey;autoIncrement" json:"id"`
	Name                string   `gorm:"column:name" json:"name"`
	TaskType            string   `gorm:"column:task_type" json:"task_type"`
	Description         string   `gorm:"column:description" json:"description"`
	DefaultParams       JSON     `gorm:"column:default_params" json:"default_params"`
	TimeoutSeconds      int      `gorm:"column:timeout_seconds" json:"timeout_seconds"`
	MaxAttempts         int      `gorm:"column:max_attempts" json:"max_attempts"`
	RetryBackoffSeconds int      `gorm:"column:retry_backoff_seconds" json:"retry_backoff_seconds"`
	NotifyOn            NotifyOn `gorm:"column:notify_on" json:"notify_on"`
	NotifyEmails        string   `gorm:"column:notify_emails" json:"notify_emails"`
	RequestsRecovery    bool     `gorm:"column:requests_recovery" json:"requests_recovery"`
	Priority            int      `gorm:"column:priority;default:5" json:"priority"`
	// Queue names the queues row whose limits the definition's jobs take
	// ('' is 'default'); a schedule or an ad hoc job may override it.
	Queue string `gorm:"column:queue;default:default" json:"queue"`
	// MaxRunning bounds the definition's jobs queued, running or paused
	// at once, cluster-wide; nil is no limit (see Queue.MaxRunning).
	MaxRunning *int64 `gorm:"column:max_running" json:"max_running"`
	// RequiredTags are the tags a node must all carry to claim the
	// definition's jobs, comma-separated (see ParseTags); "" is any node.
	// A schedule or an ad hoc job may override them.
	RequiredTags string `gorm:"column:required_tags" json:"required_tags"`
	// Broadcast runs each job of the definition once on every live node
	// that has its required tags (see Job.ShardGroup).
	Broadcast bool `gorm:"column:broadcast" json:"broadcast"`
	// RateLimit and RatePeriodMs limit the starts of the definition's
	// jobs as a queue's do (see Queue), cluster-wide; RateTatUs is the
	// limiter's state, chime's to write.
	RateLimit    *int64    `gorm:"column:rate_limit" json:"rate_limit"`
	RatePeriodMs *int64    `gorm:"column:rate_period_ms" json:"rate_period_ms"`
	RateTatUs    *int64    `gorm:"column:rate_tat_us" json:"-"`
	CreatedAt    time.Time `gorm:"column:created_at" json:"created_at"`
	UpdatedAt    time.Time `gorm:"column:updated_at" json:"updated_at"`

	// Unreadable is no column: the engines' reads set it, with only ID
	// and Name, when a column holds a value its type cannot (SQLite keeps
	// what plain SQL writes: text in an INTEGER column), and say which.
	// Such a definition cannot be run.
	Unreadable string `gorm:"-" json:"-"`
}

// TableName implements gorm's tabler.
func (JobDefinition) TableName() string { return "job_definitions" }

// Schedule is when to run a definition: the paper's Schedule table with the
// trigger spec inline. Table schedules. Priority overrides the definition's
// for its jobs; nil (NULL) keeps the definition's.
type Schedule struct {
	ID   int64  `gorm:"column:id;primaryKey;autoIncrement" json:"id"`
	Name string `gorm:"column:name" json:"name"`
	// JobDefinitionID is the definition whose jobs the schedule writes; 0
	// (NULL in the row) when it starts runs of WorkflowID instead. A row
	// names exactly one of the two.
	JobDefinitionID      int64          `gorm:"column:job_definition_id;serializer:zeronull" json:"job_definition_id"`
	WorkflowID           *int64         `gorm:"column:workflow_id" json:"workflow_id"`
	ScheduleType         ScheduleType   `gorm:"column:schedule_type" json:"schedule_type"`
	CronExpr             *string        `gorm:"column:cron_expr" json:"cron_expr"`
	CronSyntax           CronSyntax     `gorm:"column:cron_syntax" json:"cron_syntax"`
	DSTPolicy            DSTPolicy      `gorm:"column:dst_policy" json:"dst_policy"`
	CalendarID           *int64         `gorm:"column:calendar_id" json:"calendar_id"`
	IntervalSeconds      *int           `gorm:"column:interval_seconds" json:"interval_seconds"`
	RunAt                *time.Time     `gorm:"column:run_at" json:"run_at"`
	Timezone             string         `gorm:"column:timezone" json:"timezone"`
	StartAt              *time.Time     `gorm:"column:start_at" json:"start_at"`
	EndAt                *time.Time     `gorm:"column:end_at" json:"end_at"`
	MaxRuns              *int           `gorm:"column:max_runs" json:"max_runs"`
	MisfirePolicy        MisfirePolicy  `gorm:"column:misfire_policy" json:"misfire_policy"`
	CatchupWindowSeconds *int           `gorm:"column:catchup_window_seconds" json:"catchup_window_seconds"`
	Concurrency          Concurrency    `gorm:"column:concurrency" json:"concurrency"`
	Params               JSON           `gorm:"column:params" json:"params"`
	Status               ScheduleStatus `gorm:"column:status" json:"status"`
	StatusReason         string         `gorm:"column:status_reason" json:"status_reason"`
	Priority             *int           `gorm:"column:priority" json:"priority"`
	// Queue overrides the definition's queue for the schedule's jobs; nil
	// or "" keeps it. Read when a job is claimed.
	Queue *string `gorm:"column:queue" json:"queue"`
	// RequiredTags overrides the definition's required tags for the
	// schedule's jobs; nil or "" keeps them. Read when a job is claimed.
	RequiredTags *string   `gorm:"column:required_tags" json:"required_tags"`
	CreatedAt    time.Time `gorm:"column:created_at" json:"created_at"`
	UpdatedAt    time.Time `gorm:"column:updated_at" json:"updated_at"`

	// Unreadable is no column: the schedule engine's read sets it, with
	// only ID, Name, JobDefinitionID and Status, when a column of the row
	// or of its time_triggers row holds a value its type cannot, and says
	// which. Such a schedule cannot be scheduled.
	Unreadable string `gorm:"-" json:"-"`
}

// TableName implements gorm's tabler.
func (Schedule) TableName() string { return "schedules" }

// Calendar excludes times from the schedules that name it (Quartz's
// calendars): a fire in an excluded time is skipped, neither run nor
// counted as missed. Definition is JSON whose shape depends on Kind
// (docs/quartz.md); its days and wall times are read in Timezone.
// Table calendars.
type Calendar struct {
	ID          int64        `gorm:"column:id;primaryKey;autoIncrement" json:"id"`
	Name        string       `gorm:"column:name" json:"name"`
	Kind        CalendarKind `gorm:"column:kind" json:"kind"`
	Definition  JSON         `gorm:"column:definition" json:"definition"`
	Timezone    string       `gorm:"column:timezone" json:"timezone"`
	Description string       `gorm:"column:description" json:"description"`
	CreatedAt   time.Time    `gorm:"column:created_at" json:"created_at"`
	UpdatedAt   time.Time    `gorm:"column:updated_at" json:"updated_at"`
}

// TableName implements gorm's tabler.
func (Calendar) TableName() string { return "calendars" }

// TimeTrigger is the engine's firing state for one schedule (the paper's
// TimeTrigger). Table time_triggers; only engines write it.
type TimeTrigger struct {
	ID             int64      `gorm:"column:id;primaryKey;autoIncrement" json:"id"`
	ScheduleID     int64      `gorm:"column:schedule_id" json:"schedule_id"`
	NextFireAt     *time.Time `gorm:"column:next_fire_at" json:"next_fire_at"`
	LastFireAt     *time.Time `gorm:"column:last_fire_at" json:"last_fire_at"`
	FiredCount     int64      `gorm:"column:fired_count" json:"fired_count"`
	RemainingCount *int64     `gorm:"column:remaining_count" json:"remaining_count"`
	MisfiredCount  int64      `gorm:"column:misfired_count" json:"misfired_count"`
	CreatedAt      time.Time  `gorm:"column:created_at" json:"created_at"`
	UpdatedAt      time.Time  `gorm:"column:updated_at" json:"updated_at"`

	// SpecHash fingerprints the schedule's timing the trigger was computed
	// from; SpecChangedAt is when the engine saw it change, and fires count
	// from then (an edit starts the schedule afresh). Empty: not known yet.
	SpecHash      string     `gorm:"column:spec_hash" json:"spec_hash"`
	SpecChangedAt *time.Time `gorm:"column:spec_changed_at" json:"spec_changed_at"`
}

// TableName implements gorm's tabler.
func (TimeTrigger) TableName() string { return "time_triggers" }

// Job is one fire or ad-hoc run of a definition (the paper's Job table).
// Recoveries counts its reruns after node loss that used no attempt.
// Outcome is what the task chose for its last run (tasks.SkipRetry,
// Snooze, Cancel), empty when it chose nothing; Snoozes counts snoozes.
//
// Priority is the effective priority the job was written with; 0 in Go
// leaves it out of an insert, and the database's trigger fills in the
// schedule's, else the definition's (migration 00012). ClaimKey is what the
// claim orders due jobs by (see PriorityStep): the database keeps it, so
// GORM only reads it.
type Job struct {
	ID              int64      `gorm:"column:id;primaryKey;autoIncrement" json:"id"`
	ScheduleID      *int64     `gorm:"column:schedule_id" json:"schedule_id"`
	JobDefinitionID int64      `gorm:"column:job_definition_id" json:"job_definition_id"`
	ScheduledAt     time.Time  `gorm:"column:scheduled_at" json:"scheduled_at"`
	RunAt           time.Time  `gorm:"column:run_at" json:"run_at"`
	Status          JobStatus  `gorm:"column:status" json:"status"`
	Control         JobControl `gorm:"column:control" json:"control"`
	Attempt         int        `gorm:"column:attempt" json:"attempt"`
	MaxAttempts     int        `gorm:"column:max_attempts" json:"max_attempts"`
	Recoveries      int        `gorm:"column:recoveries" json:"recoveries"`
	Outcome         JobOutcome `gorm:"column:outcome" json:"outcome"`
	Snoozes         int        `gorm:"column:snoozes" json:"snoozes"`
	Priority        int        `gorm:"column:priority;default:null" json:"priority"`
	// Queue is the job's own queue (an ad hoc job's override); nil or ""
	// takes its schedule's, else its definition's, when claimed.
	Queue *string `gorm:"column:queue" json:"queue"`
	// RequiredTags are the job's own required tags (an ad hoc job's
	// override); nil or "" takes its schedule's, else its definition's.
	RequiredTags *string `gorm:"column:required_tags" json:"required_tags"`
	// ShardIndex, ShardTotal, ShardGroup and TargetNode are set on the jobs
	// a broadcast definition's job became (one per node; ShardGroup is the
	// first one's id): only TargetNode claims it while that node is live
	// and undrained; after, a live node with the tags takes it over
	// (store/broadcast.go). Nil on other jobs.
	ShardIndex  *int       `gorm:"column:shard_index" json:"shard_index"`
	ShardTotal  *int       `gorm:"column:shard_total" json:"shard_total"`
	ShardGroup  *int64     `gorm:"column:shard_group" json:"shard_group"`
	TargetNode  *string    `gorm:"column:target_node" json:"target_node"`
	ClaimKey    int64      `gorm:"column:claim_key;->" json:"-"`
	Params      JSON       `gorm:"column:params" json:"params"`
	CatchUp     bool       `gorm:"column:catch_up" json:"catch_up"`
	MissedFires int        `gorm:"column:missed_fires" json:"missed_fires"`
	NodeID      string     `gorm:"column:node_id" json:"node_id"`
	QueuedAt    *time.Time `gorm:"column:queued_at" json:"queued_at"`
	StartedAt   *time.Time `gorm:"column:started_at" json:"started_at"`
	FinishedAt  *time.Time `gorm:"column:finished_at" json:"finished_at"`
	HeartbeatAt *time.Time `gorm:"column:heartbeat_at" json:"heartbeat_at"`
	Result      *string    `gorm:"column:result" json:"result"`
	Error       *string    `gorm:"column:error" json:"error"`
	CreatedAt   time.Time  `gorm:"column:created_at" json:"created_at"`
	UpdatedAt   time.Time  `gorm:"column:updated_at" json:"updated_at"`

	// RunID and StepID name the workflow run and step that wrote the job;
	// nil for a job of no run. RunInputs is what the run hands the step
	// (its params and its upstream steps' results, see RunInputs), written
	// with the job.
	RunID     *int64 `gorm:"column:run_id" json:"run_id,omitempty"`
	StepID    *int64 `gorm:"column:step_id" json:"step_id,omitempty"`
	RunInputs JSON   `gorm:"column:run_inputs" json:"run_inputs,omitempty"`

	// Unreadable is no column: the admin's reads set it when a column
	// holds a value its field cannot (that field is then zero), or a
	// counter or time is out of its bound (see CheckBounds; a time out of
	// it is zero too, which JSON can show), and say which. The engines
	// fail such a row instead.
	Unreadable string `gorm:"-" json:"-"`
}

// TableName implements gorm's tabler.
func (Job) TableName() string { return "jobs" }

// JobLog is one line of a job's history: a state transition or a line the
// task logged. Table job_logs.
type JobLog struct {
	ID        int64     `gorm:"column:id;primaryKey;autoIncrement" json:"id"`
	JobID     int64     `gorm:"column:job_id" json:"job_id"`
	Level     string    `gorm:"column:level" json:"level"`
	Message   string    `gorm:"column:message" json:"message"`
	CreatedAt time.Time `gorm:"column:created_at" json:"created_at"`
}

// TableName implements gorm's tabler.
func (JobLog) TableName() string { return "job_logs" }

// OutcomeLogID is the id of a succeeded job's last log line, which is not a
// job_logs row: a success writes none, since the job's own columns (status,
// attempt, scheduled_at, finished_at) say all the line says, and a row per
// job was a large part of what a job cost the database. The store derives
// the line from the job when it lists or tails the log (see SucceededLine).
// It sorts after every real line and stays exact in a browser's JSON
// numbers (2^53 − 1), so a follower that sends it back as its cursor gets
// nothing more.
const OutcomeLogID int64 = 1<<53 - 1

// A log listing's position after the derived line. Lines may be stored
// after a job has succeeded (a notification's, say) with ids below
// OutcomeLogID, so a follower must not continue from OutcomeLogID itself:
// it continues from the last stored line it saw, marked as having seen
// the derived line. Such a position is OutcomeLogID + 1 + that line's id
// (0 for none), above every real id and exact in an int64. OutcomeLogID
// itself, the position an older listing gave, still means "after
// everything".

// LogPositionPastOutcome is the position after the derived line, when
// lastStored is the id of the last stored line seen before it.
func LogPositionPastOutcome(lastStored int64) int64 { return OutcomeLogID + 1 + lastStored }

// SplitLogPosition returns the last stored line's id that position after
// stands for, and whether the derived line has been seen.
func SplitLogPosition(after int64) (lastStored int64, outcomeSeen bool) {
	if after > OutcomeLogID {
		return after - OutcomeLogID - 1, true
	}
	return after, after == OutcomeLogID
}

// SucceededMessage is the log line of a successful attempt.
func SucceededMessage(attempt int, took time.Duration) string {
	return fmt.Sprintf("succeeded (attempt %d, %v after scheduled_at)", attempt, took.Round(time.Millisecond))
}

// SucceededLine is the log line j's success would have written, when j has
// succeeded.
func SucceededLine(j *Job) (JobLog, bool) {
	if j.Status != JobSucceeded || j.FinishedAt == nil {
		return JobLog{}, false
	}
	return JobLog{ID: OutcomeLogID, JobID: j.ID, Level: "info", Message: SucceededMessage(j.Attempt, j.FinishedAt.Sub(j.ScheduledAt)),
		CreatedAt: *j.FinishedAt}, true
}

// Configuration is a setting an admin may change at run time (the paper's
// Configuration table).
type Configuration struct {
	Name        string    `gorm:"column:name;primaryKey" json:"name"`
	Value       string    `gorm:"column:value" json:"value"`
	Description string    `gorm:"column:description" json:"description"`
	UpdatedAt   time.Time `gorm:"column:updated_at" json:"updated_at"`
}

// TableName implements gorm's tabler.
func (Configuration) TableName() string { return "configurations" }

// Node is one chime process of a cluster (Quartz's SCHEDULER_STATE).
type Node struct {
	ID          string    `gorm:"column:id;primaryKey" json:"id"`
	Hostname    string    `gorm:"column:hostname" json:"hostname"`
	PID         int       `gorm:"column:pid" json:"pid"`
	Version     string    `gorm:"column:version" json:"version"`
	Roles       string    `gorm:"column:roles" json:"roles"`
	StartedAt   time.Time `gorm:"column:started_at" json:"started_at"`
	HeartbeatAt time.Time `gorm:"column:heartbeat_at" json:"heartbeat_at"`
	Status      string    `gorm:"column:status" json:"status"`
	// Tags are the node's tags from its configuration (node.tags), sorted
	// and comma-separated.
	Tags string `gorm:"column:tags" json:"tags"`
	// Drain is "" (claims as usual), NodeDraining (asked to stop claiming)
	// or NodeDrained (draining, and runs nothing any more).
	Drain string `gorm:"column:drain" json:"drain"`
}

// The values of nodes.drain besides "".
const (
	NodeDraining = "draining"
	NodeDrained  = "drained"
)

// TableName implements gorm's tabler.
func (Node) TableName() string { return "nodes" }

// Lease is a named, expiring lock held by one node (Quartz's LOCKS, with a
// deadline so a dead holder cannot keep it).
type Lease struct {
	Name      string    `gorm:"column:name;primaryKey" json:"name"`
	Holder    string    `gorm:"column:holder" json:"holder"`
	ExpiresAt time.Time `gorm:"column:expires_at" json:"expires_at"`
}

// TableName implements gorm's tabler.
func (Lease) TableName() string { return "leases" }

// LeaseChange is one taking of a lease by a holder: a node that took it
// over, or created it. Table lease_changes, written by triggers on leases
// (migration 00026), never by chime's code; renewals write nothing.
// Previous is the holder before ("" when the lease was free or new).
type LeaseChange struct {
	ID        int64     `gorm:"column:id;primaryKey;autoIncrement" json:"id"`
	Name      string    `gorm:"column:name" json:"name"`
	Holder    string    `gorm:"column:holder" json:"holder"`
	Previous  string    `gorm:"column:previous" json:"previous"`
	ChangedAt time.Time `gorm:"column:changed_at" json:"changed_at"`
}

// TableName implements gorm's tabler.
func (LeaseChange) TableName() string { return "lease_changes" }

// All lists every model, in creation order, for schema checks.
func All() []any {
	return []any{&JobDefinition{}, &Schedule{}, &TimeTrigger{}, &Job{}, &JobLog{}, &Configuration{}, &Node{}, &Lease{}, &Notification{}, &Calendar{},
		&AlertChannel{}, &AlertRule{}, &Alert{},
		&Workflow{}, &WorkflowStep{}, &WorkflowEdge{}, &WorkflowRun{}, &WorkflowRunStep{}, &APIToken{}, &Queue{}, &LeaseChange{}, &AuditEntry{}, &Secret{}}
}

// Notification is one completion email in the outbox: written in the same
// transaction as the job's final state, sent (and retried) by a node with
// SMTP configured, kept after sending. Table notifications.
type Notification struct {
	ID    int64 `gorm:"column:id;primaryKey;autoIncrement" json:"id"`
	JobID int64 `gorm:"column:job_id" json:"job_id"`
	// RunID, set, makes it the notice of a workflow run's final state:
	// JobID is then the run's id negated (so the unique key holds one per
	// run), JobStatus the run's status and Attempt its generation.
	RunID *int64 `gorm:"column:run_id" json:"run_id,omitempty"`
	// JobStatus and Attempt are the final state the notice is about; with
	// JobID they are unique, so a notice is recorded once whichever path
	// wrote the final state.
	JobStatus JobStatus `gorm:"column:job_status" json:"job_status"`
	Attempt   int       `gorm:"column:attempt" json:"attempt"`
	// Recipients is the definition's notify_emails when the notice was recorded.
	Recipients string `gorm:"column:recipients" json:"recipients"`
	// Attachments are what the task attached (Job.Attach), as JSON.
	Attachments   JSON               `gorm:"column:attachments" json:"-"`
	Status        NotificationStatus `gorm:"column:status" json:"status"`
	Attempts      int                `gorm:"column:attempts" json:"attempts"`
	NextAttemptAt time.Time          `gorm:"column:next_attempt_at" json:"next_attempt_at"`
	LastError     *string            `gorm:"column:last_error" json:"last_error"`
	// NodeID is the node that last tried to send it.
	NodeID    string     `gorm:"column:node_id" json:"node_id"`
	CreatedAt time.Time  `gorm:"column:created_at" json:"created_at"`
	SentAt    *time.Time `gorm:"column:sent_at" json:"sent_at"`
	UpdatedAt time.Time  `gorm:"column:updated_at" json:"updated_at"`

	// Unreadable is Job.Unreadable for a notice.
	Unreadable string `gorm:"-" json:"-"`
}

// TableName implements gorm's tabler.
func (Notification) TableName() string { return "notifications" }

// NotificationAttachment is one element of notifications.attachments.
type NotificationAttachment struct {
	Name        string `json:"name"`
	ContentType string `json:"content_type,omitempty"`
	Data        []byte `json:"data"` // base64 in the JSON
}

// Queue is a named set of jobs with cluster-wide limits, enforced inside
// the claim's transaction (store/limits.go). Table queues; the row
// 'default' holds every job whose definition names no other.
//
// MaxRunning: nil is no limit; 1..MaxQueueRunning is the most of the
// queue's jobs queued, running or paused at once. RateLimit and
// RatePeriodMs: both nil is no rate limit; otherwise at most RateLimit
// starts per RatePeriodMs, spaced evenly (one every period / limit).
// Paused stops new starts; running jobs go on. A row with a value out of
// these bounds (0, negative, absurd; see CheckQueue) is invalid: its
// jobs wait, with the reason, until an admin fixes it.
type Queue struct {
	Name         string `gorm:"column:name;primaryKey" json:"name"`
	Description  string `gorm:"column:description" json:"description"`
	MaxRunning   *int64 `gorm:"column:max_running" json:"max_running"`
	RateLimit    *int64 `gorm:"column:rate_limit" json:"rate_limit"`
	RatePeriodMs *int64 `gorm:"column:rate_period_ms" json:"rate_period_ms"`
	// RateTatUs is the rate limiter's state: the earliest next start, in
	// microseconds since the Unix epoch on the database's clock. chime
	// writes it in the claim; NULL starts afresh.
	RateTatUs *int64 `gorm:"column:rate_tat_us" json:"-"`
	Paused    bool   `gorm:"column:paused" json:"paused"`
}

// TableName implements gorm's tabler.
func (Queue) TableName() string { return "queues" }

// DefaultQueue is the queue of a definition that names none.
const DefaultQueue = "default"

// Bounds of the limits: beyond them a value is a typo or an attack, and
// the row holding it is invalid rather than a limit nobody meant.
const (
	MaxQueueRunning  = 1_000_000
	MaxRateLimit     = 1_000_000
	MinRatePeriodMs  = 1
	MaxRatePeriodMs  = 366 * 24 * 3600 * 1000
	MaxQueueNameLen  = 191
	minRateSpacingUs = 1 // one start per microsecond at the most
)

// CheckMaxRunning says what is wrong with a max_running value; "" when
// it is a limit (nil is none).
func CheckMaxRunning(v *int64) string {
	if v == nil {
		return ""
	}
	if *v < 1 || *v > MaxQueueRunning {
		return fmt.Sprintf("max_running %d is out of 1..%d (NULL is no limit)", *v, MaxQueueRunning)
	}
	return ""
}

// CheckQueue says what is wrong with q's limits; "" when the row is valid.
func CheckQueue(q *Queue) string {
	if q.Name == "" || len(q.Name) > MaxQueueNameLen {
		return fmt.Sprintf("queue name must be 1..%d bytes", MaxQueueNameLen)
	}
	if r := CheckMaxRunning(q.MaxRunning); r != "" {
		return r
	}
	return CheckRate(q.RateLimit, q.RatePeriodMs)
}

// CheckRate says what is wrong with a rate limit of limit starts per
// periodMs (a queue's or a definition's); "" when it is one (both nil is
// none).
func CheckRate(limit, periodMs *int64) string {
	if (limit == nil) != (periodMs == nil) {
		return "rate_limit and rate_period_ms must be set together (both NULL is no rate limit)"
	}
	if limit == nil {
		return ""
	}
	if *limit < 1 || *limit > MaxRateLimit {
		return fmt.Sprintf("rate_limit %d is out of 1..%d", *limit, MaxRateLimit)
	}
	if *periodMs < MinRatePeriodMs || *periodMs > MaxRatePeriodMs {
		return fmt.Sprintf("rate_period_ms %d is out of %d..%d", *periodMs, MinRatePeriodMs, MaxRatePeriodMs)
	}
	if *periodMs*1000 / *limit < minRateSpacingUs {
		return fmt.Sprintf("rate_limit %d per %d ms is more than one start per microsecond", *limit, *periodMs)
	}
	return ""
}

// RateSpacingOf is the time between two starts of limit per periodMs; 0
// for none.
func RateSpacingOf(limit, periodMs *int64) time.Duration {
	if limit == nil || periodMs == nil || *limit <= 0 {
		return 0
	}
	return time.Duration(*periodMs) * time.Millisecond / time.Duration(*limit)
}

// RateSpacing is the time between two starts of a rate-limited queue.
func (q *Queue) RateSpacing() time.Duration { return RateSpacingOf(q.RateLimit, q.RatePeriodMs) }
