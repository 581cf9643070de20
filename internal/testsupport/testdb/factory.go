package testdb

import (
	"testing"
	"time"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// DefinitionOpts describes a job definition for Definition; the zero value
// (or nil) is a sleep task named "d" with one attempt that notifies nobody.
type DefinitionOpts struct {
	Name        string // "d" when empty
	TaskType    string // "sleep" when empty
	MaxAttempts int    // 1 when 0
	// RequestsRecovery gives a crashed run its attempt back (see store.RecoverNode).
	RequestsRecovery    bool
	Priority            int    // the column's default, 5, when 0
	DefaultParams       string // JSON; none when empty
	TimeoutSeconds      int
	RetryBackoffSeconds int
}

// Definition inserts a job definition as o describes it.
func Definition(t testing.TB, st *store.Store, o *DefinitionOpts) models.JobDefinition {
	t.Helper()
	if o == nil {
		o = &DefinitionOpts{}
	}
	d := models.JobDefinition{Name: o.Name, TaskType: o.TaskType, MaxAttempts: max(o.MaxAttempts, 1),
		RequestsRecovery: o.RequestsRecovery, NotifyOn: models.NotifyNever, Priority: o.Priority,
		TimeoutSeconds: o.TimeoutSeconds, RetryBackoffSeconds: o.RetryBackoffSeconds}
	if o.DefaultParams != "" {
		d.DefaultParams = models.JSON(o.DefaultParams)
	}
	if d.Name == "" {
		d.Name = "d"
	}
	if d.TaskType == "" {
		d.TaskType = "sleep"
	}
	if err := st.DB().Create(&d).Error; err != nil {
		t.Fatalf("testdb: create definition: %v", err)
	}
	return d
}

// JobOpts describes an ad hoc job for Job, due now.
type JobOpts struct {
	DefinitionID int64            // required
	Status       models.JobStatus // pending when empty
	NodeID       string
	Attempt      int
	// Heartbeat, when set, is both started_at and heartbeat_at.
	Heartbeat *time.Time
	// Priority is the job's; when 0 the database gives it the definition's.
	Priority int
	// RunAt is when it is due; now when zero.
	RunAt time.Time
	// Params is the job's own params (JSON); the definition's when empty.
	Params string
}

// Job inserts an ad hoc job as o describes it.
func Job(t testing.TB, st *store.Store, o *JobOpts) models.Job {
	t.Helper()
	if o == nil || o.DefinitionID == 0 {
		t.Fatal("testdb: Job needs JobOpts.DefinitionID")
	}
	now := store.DBTime(time.Now())
	status := o.Status
	if status == "" {
		status = models.JobPending
	}
	runAt := now
	if !o.RunAt.IsZero() {
		runAt = store.DBTime(o.RunAt)
	}
	j := models.Job{JobDefinitionID: o.DefinitionID, ScheduledAt: runAt, RunAt: runAt, Status: status, NodeID: o.NodeID,
		Attempt: o.Attempt, HeartbeatAt: o.Heartbeat, StartedAt: o.Heartbeat, Priority: o.Priority}
	if o.Params != "" {
		j.Params = models.JSON(o.Params)
	}
	if err := st.DB().Create(&j).Error; err != nil {
		t.Fatalf("testdb: create job: %v", err)
	}
	return j
}

// GetJob reads job id back.
func GetJob(t testing.TB, st *store.Store, id int64) models.Job {
	t.Helper()
	var j models.Job
	if err := st.DB().First(&j, id).Error; err != nil {
		t.Fatalf("testdb: read job %d: %v", id, err)
	}
	return j
}
