package api

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

func TestDefinitions(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st)
		const path = "/api/v1/definitions"

		d := b.ok(201, "POST", path, `{"name":"backup","task_type":"shell","description":"nightly",
			"default_params":{"command": "echo hi"},"max_attempts":3,"notify_on":"failure","notify_emails":"ops@example.com, dba@example.com"}`)
		defID := id(d)
		require.Equal(t, "backup", d["name"])
		require.Equal(t, map[string]any{"command": "echo hi"}, d["default_params"])
		require.EqualValues(t, 3, d["max_attempts"])
		require.EqualValues(t, 10, d["retry_backoff_seconds"], "column default")
		require.Equal(t, "ops@example.com,dba@example.com", d["notify_emails"])
		require.Equal(t, true, d["requests_recovery"], "column default: at-least-once after node loss")

		got := b.ok(200, "GET", path+"/"+itoa(defID), "")
		require.Equal(t, "nightly", got["description"])
		require.Len(t, items(b.ok(200, "GET", path+"?name=backup", "")), 1)
		require.Empty(t, items(b.ok(200, "GET", path+"?name=nope", "")))

		// PATCH changes only what it names.
		upd := b.ok(200, "PATCH", path+"/"+itoa(defID), `{"description":"weekly","timeout_seconds":60}`)
		require.Equal(t, "weekly", upd["description"])
		require.EqualValues(t, 60, upd["timeout_seconds"])
		require.EqualValues(t, 3, upd["max_attempts"])
		require.Equal(t, "shell", upd["task_type"])
		require.Equal(t, []int64{0}, b.changed, "a definition change refreshes the schedule engine")
		upd = b.ok(200, "PATCH", path+"/"+itoa(defID), `{"requests_recovery":false}`)
		require.Equal(t, false, upd["requests_recovery"])
		require.Equal(t, "weekly", upd["description"])
		require.Equal(t, false, b.ok(200, "GET", path+"/"+itoa(defID), "")["requests_recovery"], "stored")
		off := b.ok(201, "POST", path, `{"name":"no-rerun","task_type":"sleep","requests_recovery":false}`)
		require.Equal(t, false, off["requests_recovery"])

		// Validation at the door.
		for _, c := range []struct{ field, want, body string }{
			{"", "malformed JSON", `{"name":`},
			{"", "malformed JSON", `{"name":"x"} {}`},
			{"", "request body is empty", ``},
			{"", "must be a JSON object", `[1,2]`},
			{"bogus", "unknown field", `{"name":"x","task_type":"sleep","bogus":1}`},
			{"id", "unknown field", `{"id":5,"name":"x","task_type":"sleep"}`},
			{"max_attempts", "expected an integer", `{"name":"x","task_type":"sleep","max_attempts":"3"}`},
			{"requests_recovery", "expected", `{"name":"x","task_type":"sleep","requests_recovery":"no"}`},
			{"name", "name is required", `{"task_type":"sleep"}`},
			{"name", "all digits", `{"name":"123","task_type":"sleep"}`},
			{"name", "white space", `{"name":" x","task_type":"sleep"}`},
			{"task_type", "unknown task_type \"nope\"", `{"name":"x","task_type":"nope"}`},
			{"task_type", "required", `{"name":"x"}`},
			{"max_attempts", "must be from 1", `{"name":"x","task_type":"sleep","max_attempts":0}`},
			{"timeout_seconds", "must be from 0", `{"name":"x","task_type":"sleep","timeout_seconds":-1}`},
			{"timeout_seconds", "must be from 0", `{"name":"x","task_type":"sleep","timeout_seconds":99999999999}`},
			{"notify_on", "unknown notify_on", `{"name":"x","task_type":"sleep","notify_on":"sometimes"}`},
			{"notify_emails", "not an email address", `{"name":"x","task_type":"sleep","notify_emails":"ops@example.com,nope"}`},
			{"default_params", "must be a JSON object", `{"name":"x","task_type":"sleep","default_params":[1]}`},
			{"default_params.duration", "invalid duration", `{"name":"x","task_type":"sleep","default_params":{"duration":"soon"}}`},
			{"default_params", "unknown field", `{"name":"x","task_type":"sleep","default_params":{"durations":"1s"}}`},
			{"default_params.command", "required", `{"name":"x","task_type":"shell"}`},
		} {
			b.fails(400, c.field, c.want, "POST", path, c.body)
		}
		b.fails(400, "task_type", "unknown task_type", "PATCH", path+"/"+itoa(defID), `{"task_type":"nope"}`)
		b.fails(409, "name", "already exists", "POST", path, `{"name":"backup","task_type":"sleep"}`)
		other := b.definition("other")
		b.fails(409, "name", "already exists", "PATCH", path+"/"+itoa(other), `{"name":"backup"}`)
		b.fails(404, "", "job definition 999 does not exist", "GET", path+"/999", "")
		b.fails(404, "", "does not exist", "PATCH", path+"/999", `{"name":"y"}`)
		b.fails(404, "", "does not exist", "DELETE", path+"/999", "")
		b.fails(400, "id", "positive integer", "GET", path+"/abc", "")
		b.fails(400, "bogus", "unknown query parameter", "GET", path+"?bogus=1", "")

		// A definition in use by a schedule cannot be deleted.
		b.ok(201, "POST", "/api/v1/schedules", `{"name":"every-min","job_definition_id":`+itoa(defID)+`,"schedule_type":"cron","cron_expr":"* * * * *"}`)
		b.fails(409, "", "used by 1 schedule(s)", "DELETE", path+"/"+itoa(defID), "")
		b.ok(204, "DELETE", path+"/"+itoa(other), "")
		b.fails(404, "", "does not exist", "GET", path+"/"+itoa(other), "")
	})
}
