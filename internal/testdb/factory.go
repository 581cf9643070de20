package testdb

import (
	"testing"
	"time"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// Definition inserts a job definition named "d" of the sleep task that
// allows maxAttempts attempts and notifies nobody.
func Definition(t testing.TB, st *store.Store, maxAttempts int) models.JobDefinition {
	t.Helper()
	d := models.JobDefinition{Name: "d", TaskType: "sleep", MaxAttempts: maxAttempts, NotifyOn: models.NotifyNever}
	if err := st.DB().Create(&d).Error; err != nil {
		t.Fatalf("testdb: create definition: %v", err)
	}
	return d
}

// Job inserts an ad-hoc job of def, due now, in status on node at attempt;
// hb, when set, is both its started_at and its heartbeat_at.
func Job(t testing.TB, st *store.Store, def models.JobDefinition, status models.JobStatus, node string, attempt int, hb *time.Time) models.Job {
	t.Helper()
	now := store.DBTime(time.Now())
	j := models.Job{JobDefinitionID: def.ID, ScheduledAt: now, RunAt: now, Status: status, NodeID: node, Attempt: attempt, HeartbeatAt: hb, StartedAt: hb}
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
