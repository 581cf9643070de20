package api

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/validate"
)

// FuzzDecodeScheduleRequest feeds arbitrary bodies through the schedule
// create path without a database: decode, then validate against a fixed
// definition. It must never panic, every refusal must be a 400 or 413 with
// a message, and whatever passes must be a row the engine can schedule,
// with exactly the spec column its type uses. The seeds run in every
// `go test`; `go test -fuzz FuzzDecodeScheduleRequest ./api` explores.
func FuzzDecodeScheduleRequest(f *testing.F) {
	for _, seed := range []string{
		`{"name":"s","job_definition_id":1,"schedule_type":"cron","cron_expr":"*/5 * * * *"}`,
		`{"name":"s","job_definition_id":1,"schedule_type":"cron","cron_expr":"0 0 9 * * MON","timezone":"Asia/Tokyo"}`,
		`{"name":"s","job_definition_id":1,"schedule_type":"cron","cron_expr":"@every 90s","start_at":"2030-01-01T00:00:00Z"}`,
		`{"name":"s","job_definition_id":1,"schedule_type":"interval","interval_seconds":30,"max_runs":3}`,
		`{"name":"s","job_definition_id":1,"schedule_type":"once","run_at":"2030-01-01T00:00:00+05:30"}`,
		`{"name":"s","job_definition_id":1,"schedule_type":"cron","cron_expr":"@daily","params":{"duration":"1s"},"status":"paused"}`,
		`{"name":"s","job_definition_id":1,"schedule_type":"cron","cron_expr":"61 * * * *"}`,
		`{"name":"s","job_definition_id":1,"schedule_type":"interval","interval_seconds":1e99}`,
		`{"name":"s","job_definition_id":1,"schedule_type":"once","run_at":"0000-01-01T00:00:00Z"}`,
		`{"name":"s","job_definition_id":1,"schedule_type":"cron","cron_expr":"@daily","timezone":"../../etc/passwd"}`,
		`{"name":"s","job_definition_id":1,"schedule_type":"cron","cron_expr":"@daily","params":{"duration":5}}`,
		`{"name":"s","job_definition_id":1,"schedule_type":"cron","cron_expr":"@daily","end_at":"2000-01-01T00:00:00Z","start_at":"2001-01-01T00:00:00Z"}`,
		`{"name":"s","unknown":true}`,
		`{"name":`, `[]`, `null`, ``, `{}`, `{"name":"s"} trailing`,
	} {
		f.Add([]byte(seed))
	}
	reg := testRegistry()
	def := &models.JobDefinition{ID: 1, Name: "d", TaskType: "sleep", DefaultParams: models.JSON(`{"duration":"10ms"}`), MaxAttempts: 1}
	created := time.Date(2029, 6, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, body []byte) {
		req := validate.NewScheduleRequest()
		if e := decodeJSON(body, req); e != nil {
			require.Contains(t, []int{400, 413}, e.status)
			require.NotEmpty(t, e.Error.Error)
			return
		}
		row, trig, e := validateSchedule(reg, req, def, nil, created)
		if e != nil {
			require.Equal(t, 400, e.status)
			require.NotEmpty(t, e.Error.Error)
			return
		}
		require.NotNil(t, trig)
		require.Equal(t, row.ScheduleType == models.ScheduleCron, row.CronExpr != nil)
		require.Equal(t, row.ScheduleType == models.ScheduleInterval, row.IntervalSeconds != nil)
		require.Equal(t, row.ScheduleType == models.ScheduleOnce, row.RunAt != nil)
		require.Contains(t, []models.ScheduleStatus{models.ScheduleActive, models.SchedulePaused}, row.Status)
		// next_fires must come back in bounded time and in order.
		fires := nextFires(trig, created, previewFires)
		for i := 1; i < len(fires); i++ {
			require.True(t, fires[i].After(fires[i-1]))
		}
	})
}

// FuzzDecodeDefinitionRequest feeds arbitrary bodies through the job
// definition create path without a database: decode, then validate. It
// must never panic; every refusal is a 400 or 413 with a message, and what
// passes is a row of a known task type whose default_params is an object.
func FuzzDecodeDefinitionRequest(f *testing.F) {
	for _, seed := range []string{
		`{"name":"d","task_type":"sleep","default_params":{"duration":"10ms"}}`,
		`{"name":"d","task_type":"shell","default_params":{"command":"echo hi"},"timeout_seconds":30,"max_attempts":3,"retry_backoff_seconds":5}`,
		`{"name":"d","task_type":"sleep","notify_on":"failure","notify_emails":"a@example.com, b@example.com"}`,
		`{"name":"d","task_type":"shell","default_params":{"argv":["ls","-l"],"env":{"A":"1"}}}`,
		`{"name":"d","task_type":"nope"}`,
		`{"name":"","task_type":"sleep"}`,
		`{"name":"d","task_type":"sleep","default_params":[]}`,
		`{"name":"d","task_type":"sleep","default_params":{"duration":"x"}}`,
		`{"name":"d","task_type":"sleep","max_attempts":-1}`,
		`{"name":"d","task_type":"sleep","timeout_seconds":1e99}`,
		`{"name":"d","task_type":"sleep","notify_on":"always","notify_emails":"not an address"}`,
		`{"name":"d","name":"e","task_type":"sleep"}`,
		`{"Name":"d","task_type":"sleep"}`,
		`{"name":"d","task_type":"shell","default_params":{"command":"a","command":"b"}}`,
		`{"name":"\u0000\u001b[2J","task_type":"sleep"}`,
		`{"name":`, `[]`, `null`, ``, `{}`, `{"name":"d"} trailing`,
	} {
		f.Add([]byte(seed))
	}
	reg := testRegistry()
	f.Fuzz(func(t *testing.T, body []byte) {
		req := validate.NewDefinitionRequest()
		if e := decodeJSON(body, req); e != nil {
			require.Contains(t, []int{400, 413}, e.status)
			require.NotEmpty(t, e.Error.Error)
			return
		}
		d, e := validateDefinition(reg, req)
		if e != nil {
			require.Equal(t, 400, e.status)
			require.NotEmpty(t, e.Error.Error)
			return
		}
		require.NotEmpty(t, d.Name)
		require.Contains(t, reg.Kinds(), d.TaskType)
		require.GreaterOrEqual(t, d.MaxAttempts, 1)
		if len(d.DefaultParams) > 0 {
			var m map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(d.DefaultParams, &m), "default_params is an object")
		}
	})
}

// FuzzDecodeRunRequest feeds arbitrary bodies through the ad hoc run path
// (POST /api/v1/jobs) without a database, against a fixed definition.
func FuzzDecodeRunRequest(f *testing.F) {
	for _, seed := range []string{
		`{"job_definition_id":1}`,
		`{"job_definition_id":1,"params":{"duration":"1s"}}`,
		`{"job_definition_id":1,"params":{"fail":true},"run_at":"2030-01-01T00:00:00Z"}`,
		`{"job_definition_id":1,"run_at":"0001-01-01T00:00:00Z"}`,
		`{"job_definition_id":1,"run_at":"yesterday"}`,
		`{"job_definition_id":1,"params":{"duration":"x"}}`,
		`{"job_definition_id":1,"params":[1]}`,
		`{"job_definition_id":1,"params":{"duration":"1s","duration":"2s"}}`,
		`{"job_definition_id":-5}`, `{"job_definition_id":1e99}`, `{"JOB_DEFINITION_ID":1}`,
		`{"job_definition_id":1,"schedule_id":2}`,
		`{`, `[]`, `null`, ``, `{}`, `{"job_definition_id":1} {}`,
	} {
		f.Add([]byte(seed))
	}
	reg := testRegistry()
	def := &models.JobDefinition{ID: 1, Name: "d", TaskType: "sleep", DefaultParams: models.JSON(`{"duration":"10ms"}`), MaxAttempts: 2}
	now := time.Date(2029, 6, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, body []byte) {
		var req runRequest
		if e := decodeJSON(body, &req); e != nil {
			require.Contains(t, []int{400, 413}, e.status)
			require.NotEmpty(t, e.Error.Error)
			return
		}
		params, e := checkObject("params", req.Params)
		if e != nil {
			require.Equal(t, 400, e.status)
			return
		}
		job, e := validateRun(reg, def, params, req.RunAt, req.Priority, now)
		if e != nil {
			require.Equal(t, 400, e.status)
			require.NotEmpty(t, e.Error.Error)
			return
		}
		require.Equal(t, def.ID, job.JobDefinitionID)
		require.Equal(t, 2, job.MaxAttempts)
		require.Equal(t, job.RunAt, job.ScheduledAt)
		require.True(t, job.RunAt.Year() >= 1970 && job.RunAt.Year() <= 9999)
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(job.Params, &m), "merged params are an object")
	})
}
