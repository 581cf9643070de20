package api

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

func TestSchedules(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st)
		now := time.Date(2030, 1, 15, 10, 0, 30, 0, time.UTC)
		b.srv.now = func() time.Time { return now }
		const path = "/api/v1/schedules"
		defID := b.definition("report")
		def := itoa(defID)

		// Dry run: validated and previewed, not saved.
		dry := b.ok(200, "POST", path+"?dry_run=true", `{"name":"daily","job_definition_id":`+def+`,"schedule_type":"cron",
			"cron_expr":"0 9 * * *","timezone":"Europe/Paris"}`)
		require.Equal(t, []any{"2030-01-16T08:00:00Z", "2030-01-17T08:00:00Z", "2030-01-18T08:00:00Z",
			"2030-01-19T08:00:00Z", "2030-01-20T08:00:00Z"}, dry["next_fires"])
		require.EqualValues(t, 0, dry["id"])
		require.Empty(t, items(b.ok(200, "GET", path, "")))
		require.Empty(t, b.changed)

		s := b.ok(201, "POST", path, `{"name":"daily","job_definition_id":`+def+`,"schedule_type":"cron",
			"cron_expr":"0 9 * * *","timezone":"Europe/Paris","params":{"fail":true},"concurrency":"forbid"}`)
		sid := id(s)
		require.Equal(t, "active", s["status"])
		require.Equal(t, "fire_once", s["misfire_policy"])
		require.Len(t, s["next_fires"], 5)
		require.Equal(t, []int64{sid}, b.changed)

		got := b.ok(200, "GET", path+"/"+itoa(sid), "")
		require.Equal(t, "0 9 * * *", got["cron_expr"])
		require.Equal(t, dry["next_fires"], got["next_fires"])

		// Interval with max_runs: the preview stops with the runs.
		iv := b.ok(201, "POST", path, `{"name":"often","job_definition_id":`+def+`,"schedule_type":"interval","interval_seconds":60,
			"start_at":"2030-01-15T10:00:00Z","max_runs":2}`)
		require.Equal(t, []any{"2030-01-15T10:01:00Z", "2030-01-15T10:02:00Z"}, iv["next_fires"])
		once := b.ok(201, "POST", path, `{"name":"once","job_definition_id":`+def+`,"schedule_type":"once","run_at":"2030-02-01T00:00:00+02:00"}`)
		require.Equal(t, []any{"2030-01-31T22:00:00Z"}, once["next_fires"])

		// PATCH: switch type, null clears the old spec column.
		upd := b.ok(200, "PATCH", path+"/"+itoa(sid), `{"schedule_type":"interval","interval_seconds":3600,"cron_expr":null,"start_at":"2030-01-15T00:00:00Z"}`)
		require.Nil(t, upd["cron_expr"])
		require.Equal(t, "2030-01-15T11:00:00Z", upd["next_fires"].([]any)[0])
		require.Equal(t, map[string]any{"fail": true}, upd["params"], "untouched fields keep their value")
		b.fails(400, "cron_expr", "does not apply to a interval schedule", "PATCH", path+"/"+itoa(sid), `{"cron_expr":"* * * * *"}`)

		// Pause, resume, idempotence, invalid.
		p := b.ok(200, "POST", path+"/"+itoa(sid)+"/pause", "")
		require.Equal(t, "paused", p["status"])
		require.NotEmpty(t, p["next_fires"], "a paused schedule still previews")
		b.ok(200, "POST", path+"/"+itoa(sid)+"/pause", "")
		require.Len(t, items(b.ok(200, "GET", path+"?status=paused", "")), 1)
		require.Equal(t, "active", b.ok(200, "POST", path+"/"+itoa(sid)+"/resume", "")["status"])
		require.NoError(t, st.DB().Model(&models.Schedule{}).Where("id = ?", id(iv)).
			Updates(map[string]any{"status": "invalid", "status_reason": "broken"}).Error)
		b.fails(409, "", "is invalid (broken) and cannot be paused", "POST", path+"/"+itoa(id(iv))+"/pause", "")
		inv := b.ok(200, "GET", path+"/"+itoa(id(iv)), "")
		require.Empty(t, inv["next_fires"])
		// Editing an invalid schedule makes it active again.
		require.Equal(t, "active", b.ok(200, "PATCH", path+"/"+itoa(id(iv)), `{"interval_seconds":120}`)["status"])

		// Trigger: one pending job, definition defaults merged with schedule params.
		b.added = 0
		j := b.ok(201, "POST", path+"/"+itoa(sid)+"/trigger", "")
		require.Equal(t, "pending", j["status"])
		require.EqualValues(t, sid, j["schedule_id"])
		require.Equal(t, map[string]any{"duration": "10ms", "fail": true}, j["params"])
		require.EqualValues(t, 1, j["max_attempts"])
		require.Equal(t, 1, b.added)
		var job models.Job
		require.NoError(t, st.DB().First(&job, id(j)).Error)
		require.True(t, job.ScheduledAt.Equal(now), "scheduled_at = now: %v", job.ScheduledAt)
		// The same instant twice hits the unique fire key: a clear 409.
		b.fails(409, "", "already has a job at", "POST", path+"/"+itoa(sid)+"/trigger", "")
		b.fails(404, "", "schedule 999 does not exist", "POST", path+"/999/trigger", "")

		// Filters.
		require.Len(t, items(b.ok(200, "GET", path+"?job_definition_id="+def, "")), 3)
		require.Len(t, items(b.ok(200, "GET", path+"?name=once", "")), 1)
		b.fails(400, "status", "unknown status", "GET", path+"?status=running", "")

		// Delete.
		b.ok(204, "DELETE", path+"/"+itoa(id(once)), "")
		b.fails(404, "", "does not exist", "DELETE", path+"/"+itoa(id(once)), "")
		b.fails(404, "", "does not exist", "GET", path+"/"+itoa(id(once)), "")
		b.fails(404, "", "does not exist", "PATCH", path+"/999", `{"name":"z"}`)
		b.fails(404, "", "does not exist", "POST", path+"/999/pause", "")
		b.fails(404, "", "does not exist", "POST", path+"/999/resume", "")

		b.fails(409, "name", "already exists", "POST", path, `{"name":"daily","job_definition_id":`+def+`,"schedule_type":"once","run_at":"2030-02-01T00:00:00Z"}`)
		b.fails(409, "name", "already exists", "PATCH", path+"/"+itoa(id(iv)), `{"name":"daily"}`)
	})
}

func TestScheduleValidation(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st)
		def := itoa(b.definition("report"))
		shellDef := itoa(id(b.ok(201, "POST", "/api/v1/definitions", `{"name":"sh","task_type":"shell","default_params":{"command":"true"}}`)))
		base := `"name":"s","job_definition_id":` + def + `,`
		for _, c := range []struct{ field, want, body string }{
			{"cron_expr", "bad cron_expr", base + `"schedule_type":"cron","cron_expr":"61 * * * *"`},
			{"cron_expr", "bad cron_expr", base + `"schedule_type":"cron","cron_expr":"* * *"`},
			{"cron_expr", "TZ= prefix", base + `"schedule_type":"cron","cron_expr":"TZ=UTC * * * * *"`},
			{"cron_expr", "needs cron_expr", base + `"schedule_type":"cron"`},
			{"cron_expr", "needs cron_expr", base + `"schedule_type":"cron","cron_expr":"  "`},
			{"cron_expr", "@every needs", base + `"schedule_type":"cron","cron_expr":"@every 1ms"`},
			{"timezone", "unknown timezone \"Mars/Olympus\"", base + `"schedule_type":"cron","cron_expr":"@daily","timezone":"Mars/Olympus"`},
			{"timezone", "Local", base + `"schedule_type":"cron","cron_expr":"@daily","timezone":"Local"`},
			{"timezone", "must not be empty", base + `"schedule_type":"cron","cron_expr":"@daily","timezone":""`},
			{"job_definition_id", "job definition 999 does not exist", `"name":"s","job_definition_id":999,"schedule_type":"cron","cron_expr":"@daily"`},
			{"job_definition_id", "required", `"name":"s","schedule_type":"cron","cron_expr":"@daily"`},
			{"schedule_type", "unknown schedule_type", base + `"schedule_type":"weekly"`},
			{"schedule_type", "required", base + `"cron_expr":"@daily"`},
			{"interval_seconds", "does not apply to a cron schedule", base + `"schedule_type":"cron","cron_expr":"@daily","interval_seconds":5`},
			{"run_at", "does not apply to a interval schedule", base + `"schedule_type":"interval","interval_seconds":5,"run_at":"2030-01-01T00:00:00Z"`},
			{"cron_expr", "does not apply to a once schedule", base + `"schedule_type":"once","run_at":"2030-01-01T00:00:00Z","cron_expr":"@daily"`},
			{"interval_seconds", "needs interval_seconds", base + `"schedule_type":"interval"`},
			{"interval_seconds", "must be from 1", base + `"schedule_type":"interval","interval_seconds":0`},
			{"run_at", "needs run_at", base + `"schedule_type":"once"`},
			{"run_at", "RFC 3339", base + `"schedule_type":"once","run_at":"tomorrow"`},
			{"run_at", "RFC 3339 time string", base + `"schedule_type":"once","run_at":5`},
			{"end_at", "before start_at", base + `"schedule_type":"cron","cron_expr":"@daily","start_at":"2030-01-02T00:00:00Z","end_at":"2030-01-01T00:00:00Z"`},
			{"max_runs", "must be from 1", base + `"schedule_type":"cron","cron_expr":"@daily","max_runs":0`},
			{"catchup_window_seconds", "must be from 0", base + `"schedule_type":"cron","cron_expr":"@daily","catchup_window_seconds":-5`},
			{"misfire_policy", "unknown misfire_policy", base + `"schedule_type":"cron","cron_expr":"@daily","misfire_policy":"sometimes"`},
			{"concurrency", "unknown concurrency", base + `"schedule_type":"cron","cron_expr":"@daily","concurrency":"maybe"`},
			{"status", "must be active or paused", base + `"schedule_type":"cron","cron_expr":"@daily","status":"completed"`},
			{"params", "must be a JSON object", base + `"schedule_type":"cron","cron_expr":"@daily","params":"x"`},
			{"params.duration", "invalid duration", base + `"schedule_type":"cron","cron_expr":"@daily","params":{"duration":"x"}`},
			{"params", "unknown field", base + `"schedule_type":"cron","cron_expr":"@daily","params":{"nope":1}`},
			{"params.argv", "not both", `"name":"s","job_definition_id":` + shellDef + `,"schedule_type":"cron","cron_expr":"@daily","params":{"argv":["ls"]}`},
			{"status_reason", "unknown field", base + `"schedule_type":"cron","cron_expr":"@daily","status_reason":"x"`},
			{"next_fires", "unknown field", base + `"schedule_type":"cron","cron_expr":"@daily","next_fires":[]`},
			{"name", "longer than 191", `"name":"` + strings.Repeat("n", 192) + `","job_definition_id":` + def + `,"schedule_type":"cron","cron_expr":"@daily"`},
		} {
			b.fails(400, c.field, c.want, "POST", "/api/v1/schedules", "{"+c.body+"}")
			b.fails(400, c.field, c.want, "POST", "/api/v1/schedules?dry_run=true", "{"+c.body+"}")
		}
		b.fails(400, "dry_run", "true or false", "POST", "/api/v1/schedules?dry_run=maybe", `{}`)
		var n int64
		require.NoError(t, st.DB().Model(&models.Schedule{}).Count(&n).Error)
		require.Zero(t, n, "nothing invalid reached the table")

		// A definition written by SQL with a task type this node lacks.
		ghost := models.JobDefinition{Name: "ghost", TaskType: "ghost", MaxAttempts: 1, NotifyOn: models.NotifyNever}
		require.NoError(t, st.DB().Create(&ghost).Error)
		b.fails(400, "job_definition_id", `task_type "ghost" is not registered`, "POST", "/api/v1/schedules",
			`{"name":"g","job_definition_id":`+itoa(ghost.ID)+`,"schedule_type":"cron","cron_expr":"@daily"}`)
		b.fails(400, "job_definition_id", `task_type "ghost" is not registered`, "POST", "/api/v1/jobs", `{"job_definition_id":`+itoa(ghost.ID)+`}`)

		// Valid forms the engine accepts.
		for i, expr := range []string{"*/5 * * * *", "0 */10 * * * *", "@daily", "@every 5m", "0 9 * * MON-FRI"} {
			b.ok(201, "POST", "/api/v1/schedules", `{"name":"ok`+itoa(int64(i))+`","job_definition_id":`+def+`,"schedule_type":"cron","cron_expr":"`+expr+`","timezone":"America/New_York"}`)
		}
	})
}

// A paused schedule's show says the catch-up its resume writes at once:
// for which instant and collapsing how many missed fires, as the engine
// computes it; the list does not, and a schedule that missed nothing, a
// skip policy or an active schedule shows none.
func TestScheduleShowsCatchUpOnResume(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st)
		now := time.Date(2030, 1, 15, 10, 0, 0, 0, time.UTC)
		b.srv.now = func() time.Time { return now }
		const path = "/api/v1/schedules"
		def := itoa(b.definition("report"))
		sid := itoa(id(b.ok(201, "POST", path, `{"name":"five","job_definition_id":`+def+`,"schedule_type":"cron","cron_expr":"*/5 * * * *","max_runs":100}`)))
		skip := itoa(id(b.ok(201, "POST", path, `{"name":"skips","job_definition_id":`+def+`,"schedule_type":"cron","cron_expr":"*/5 * * * *","misfire_policy":"skip"}`)))
		// What the engine wrote when it last fired them, at 10:00.
		for _, s := range []string{sid, skip} {
			require.NoError(t, st.DB().Exec(`INSERT INTO time_triggers (schedule_id, last_fire_at, next_fire_at, fired_count, remaining_count,
				misfired_count, spec_hash, created_at, updated_at) VALUES (?, ?, ?, 1, ?, 0, '', ?, ?)`, s, store.DBTime(now),
				store.DBTime(now.Add(5*time.Minute)), map[string]any{sid: 99, skip: nil}[s], store.DBTime(now), store.DBTime(now)).Error)
		}
		p := b.ok(200, "POST", path+"/"+sid+"/pause", "")
		require.NotContains(t, p, "catch_up_on_resume", "nothing missed yet")

		// An hour later, 12 fires were missed: 10:05 … 11:00.
		now = now.Add(time.Hour + 30*time.Second)
		got := b.ok(200, "GET", path+"/"+sid, "")
		require.Equal(t, map[string]any{"scheduled_at": "2030-01-15T11:00:00Z", "missed_fires": float64(12), "jobs": float64(1)},
			got["catch_up_on_resume"])
		require.Equal(t, "2030-01-15T11:05:00Z", got["next_fires"].([]any)[0], "then the next fires")
		require.Len(t, got["next_fires"], 5)
		require.NotContains(t, items(b.ok(200, "GET", path+"?status=paused", ""))[0].(map[string]any), "catch_up_on_resume")

		b.ok(200, "POST", path+"/"+skip+"/pause", "")
		require.NotContains(t, b.ok(200, "GET", path+"/"+skip, ""), "catch_up_on_resume", "skip writes none")
		// The resume answers with the schedule active: nothing more to say.
		require.NotContains(t, b.ok(200, "POST", path+"/"+sid+"/resume", ""), "catch_up_on_resume")
	})
}
