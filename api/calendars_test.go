package api

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

// TestCalendarsAndSyntax: calendars are managed by the API, schedules name
// them (by id or name) and next_fires skips what they exclude; cron_syntax
// and dst_policy are schedule fields with their rules.
func TestCalendarsAndSyntax(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st)
		now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) // a Tuesday
		b.srv.now = func() time.Time { return now }
		def := itoa(b.definition("report"))
		const cals, scheds = "/api/v1/calendars", "/api/v1/schedules"

		require.Empty(t, items(b.ok(200, "GET", cals, "")))
		c := b.ok(201, "POST", cals, `{"name":"weekends","kind":"weekly","definition":{"days":["sat","sun"]},"timezone":"Europe/Berlin"}`)
		cid := id(c)
		require.Equal(t, "weekly", c["kind"])
		b.fails(409, "name", "already exists", "POST", cals, `{"name":"weekends","kind":"weekly","definition":{"days":["sun"]}}`)
		b.fails(400, "definition", "cannot exclude every day", "POST", cals, `{"name":"never","kind":"weekly","definition":{"days":["sun","mon","tue","wed","thu","fri","sat"]}}`)
		b.fails(400, "kind", "unknown kind", "POST", cals, `{"name":"x","kind":"lunar","definition":{}}`)
		b.fails(400, "definition", "YYYY-MM-DD", "POST", cals, `{"name":"x","kind":"holiday","definition":{"dates":["soon"]}}`)
		b.fails(400, "timezone", "unknown timezone", "POST", cals, `{"name":"x","kind":"holiday","definition":{},"timezone":"Nowhere/Else"}`)

		s := b.ok(201, "POST", scheds, `{"name":"weekdays","job_definition_id":`+def+`,"schedule_type":"cron","cron_expr":"0 9 * * *","calendar":"weekends"}`)
		require.EqualValues(t, cid, s["calendar_id"])
		require.Len(t, items(b.ok(200, "GET", cals+"?name=weekends", "")), 1)
		require.Empty(t, items(b.ok(200, "GET", cals+"?name=none", "")))
		require.Equal(t, "standard", s["cron_syntax"])
		require.Equal(t, "once", s["dst_policy"])
		require.Equal(t, []any{"2030-01-01T09:00:00Z", "2030-01-02T09:00:00Z", "2030-01-03T09:00:00Z", "2030-01-04T09:00:00Z",
			"2030-01-07T09:00:00Z"}, s["next_fires"], "Saturday 5 and Sunday 6 January are excluded")
		b.fails(400, "calendar", "does not exist", "POST", scheds, `{"name":"x","job_definition_id":`+def+`,"schedule_type":"cron","cron_expr":"0 9 * * *","calendar":"nope"}`)
		b.fails(400, "calendar_id", "does not exist", "POST", scheds, `{"name":"x","job_definition_id":`+def+`,"schedule_type":"cron","cron_expr":"0 9 * * *","calendar_id":999}`)

		// Editing the calendar changes the preview; deleting it is refused while named.
		b.ok(200, "PATCH", cals+"/"+itoa(cid), `{"definition":{"days":["wed"]}}`)
		got := b.ok(200, "GET", scheds+"/"+itoa(id(s)), "")
		require.Equal(t, "2030-01-03T09:00:00Z", got["next_fires"].([]any)[1], "Wednesday 2 January is excluded now")
		b.fails(409, "", "used by 1 schedule", "DELETE", cals+"/"+itoa(cid), "")
		clr := b.ok(200, "PATCH", scheds+"/"+itoa(id(s)), `{"calendar":""}`)
		require.Nil(t, clr["calendar_id"])
		require.Equal(t, 204, b.call("DELETE", cals+"/"+itoa(cid), "").Code)

		// Quartz syntax: 1 is Sunday; its errors are Quartz's.
		q := b.ok(200, "POST", scheds+"?dry_run=true", `{"name":"q","job_definition_id":`+def+`,"schedule_type":"cron","cron_expr":"0 0 0 ? * 1","cron_syntax":"quartz"}`)
		require.Equal(t, "2030-01-06T00:00:00Z", q["next_fires"].([]any)[0])
		b.fails(400, "cron_expr", "Support for specifying both", "POST", scheds, `{"name":"q","job_definition_id":`+def+`,"schedule_type":"cron","cron_expr":"0 0 0 * * 1","cron_syntax":"quartz"}`)
		b.fails(400, "cron_syntax", "unknown cron_syntax", "POST", scheds, `{"name":"q","job_definition_id":`+def+`,"schedule_type":"cron","cron_expr":"0 0 * * *","cron_syntax":"vixie"}`)
		b.fails(400, "dst_policy", "standard syntax only", "POST", scheds, `{"name":"q","job_definition_id":`+def+`,"schedule_type":"cron","cron_expr":"0 0 0 ? * 1","cron_syntax":"quartz","dst_policy":"skip"}`)
		b.fails(400, "dst_policy", "unknown dst_policy", "POST", scheds, `{"name":"q","job_definition_id":`+def+`,"schedule_type":"cron","cron_expr":"0 0 * * *","dst_policy":"later"}`)

		// dst_policy: a daily 02:30 in Berlin on the spring-forward day.
		spring := `{"name":"d","job_definition_id":` + def + `,"schedule_type":"cron","cron_expr":"30 2 * * *","timezone":"Europe/Berlin","start_at":"2030-03-30T12:00:00Z"`
		once := b.ok(200, "POST", scheds+"?dry_run=true", spring+`}`)
		require.Equal(t, "2030-03-31T01:00:00Z", once["next_fires"].([]any)[0], "03:00 CEST, just after the gap")
		skip := b.ok(200, "POST", scheds+"?dry_run=true", spring+`,"dst_policy":"skip"}`)
		require.Equal(t, "2030-04-01T00:30:00Z", skip["next_fires"].([]any)[0])
	})
}
