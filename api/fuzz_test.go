package api

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/models"
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
		req := newScheduleRequest()
		if e := decodeJSON(body, req); e != nil {
			require.Contains(t, []int{400, 413}, e.status)
			require.NotEmpty(t, e.Error.Error)
			return
		}
		row, trig, e := validateSchedule(reg, req, def, created)
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
