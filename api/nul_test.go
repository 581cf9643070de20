package api

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

// TestNULInText: a NUL in any text field of a body, or in a query
// parameter, is a 400 naming the field on every database. PostgreSQL
// refuses NUL in text (SQLSTATE 22021), which was a 500; SQLite and
// MariaDB stored it.
func TestNULInText(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st)
		def := itoa(b.definition("report"))
		cal := itoa(id(b.ok(201, "POST", "/api/v1/calendars", `{"name":"weekends","kind":"weekly","definition":{"days":["sun"]}}`)))
		for _, c := range []struct{ field, method, path, body string }{
			{"description", "POST", "/api/v1/definitions", `{"name":"x","task_type":"sleep","description":"a\u0000b"}`},
			{"description", "PATCH", "/api/v1/definitions/" + def, `{"description":"a\u0000b"}`},
			{"task_type", "POST", "/api/v1/definitions", `{"name":"x","task_type":"sleep\u0000"}`},
			{"description", "POST", "/api/v1/calendars", `{"name":"x","kind":"weekly","definition":{"days":["sun"]},"description":"a\u0000b"}`},
			{"description", "PATCH", "/api/v1/calendars/" + cal, `{"description":"\u0000"}`},
			{"timezone", "POST", "/api/v1/schedules", `{"name":"x","job_definition_id":` + def + `,"schedule_type":"interval","interval_seconds":60,"timezone":"UTC\u0000"}`},
			{"cron_expr", "POST", "/api/v1/schedules", `{"name":"x","job_definition_id":` + def + `,"schedule_type":"cron","cron_expr":"* * * * *\u0000"}`},
			{"description", "PUT", "/api/v1/configurations/log.level", `{"value":"info","description":"a\u0000b"}`},
			{"value", "PUT", "/api/v1/configurations/log.level", `{"value":"info\u0000"}`},
			{"name", "GET", "/api/v1/definitions?name=a%00b", ``},
			{"name", "GET", "/api/v1/schedules?name=a%00b", ``},
			{"name", "GET", "/api/v1/calendars?name=a%00b", ``},
		} {
			b.fails(400, c.field, "NUL", c.method, c.path, c.body)
		}
		b.fails(400, "name", "not valid UTF-8", "GET", "/api/v1/definitions?name=%ff", "")
		b.fails(400, "name", "control characters", "GET", "/api/v1/configurations/a%00b", "")
		b.fails(400, "name", "UTF-8", "GET", "/api/v1/configurations/a%ffb", "")
		require.Equal(t, "", b.ok(200, "GET", "/api/v1/definitions/"+def, "")["description"], "nothing was written")
	})
}
