package api

import (
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

// notJSONValues lists values a JSON column may hold when written by plain SQL
// that Go's encoder refuses, one per database: SQLite takes any text;
// MariaDB's JSON_VALID (the CHECK behind its JSON type) takes a number
// ending in a point; PostgreSQL's json takes nesting deeper than Go's
// 10,000 levels. Each database refuses the values before its own.
var notJSONValues = []string{
	"not json",
	`{"a":1.}`,
	`{"a":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`,
}

// writeNotJSON stores the first value of notJSONValues the database accepts in
// table.column of row id, and returns it; it skips the test on a database
// that accepts none, where no such row can exist.
func writeNotJSON(t *testing.T, st *store.Store, table, column string, id int64) string {
	t.Helper()
	for _, v := range notJSONValues {
		if st.DB().Exec("UPDATE "+table+" SET "+column+" = ? WHERE id = ?", v, id).Error == nil {
			return v
		}
	}
	t.Skipf("%s refuses every value of notJSONValues in %s.%s", st.Dialect(), table, column)
	return ""
}

// TestRowsWithColumnsNotJSON: a JSON column that plain SQL filled with
// something that is not JSON neither empties the list it is in (a 200 with
// no body, as before) nor hides the row: the row is shown with that column
// null, invalid true and invalid_reason naming the column; the rows beside
// it are shown as they are.
func TestRowsWithColumnsNotJSON(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		log, hook := test.NewNullLogger()
		b := setupWith(t, st, func(c *Config) { c.Logger = log })
		good, bad := b.definition("good"), b.definition("bad")
		def := itoa(good)
		sched := func(name string) int64 {
			return id(b.ok(201, "POST", "/api/v1/schedules", `{"name":"`+name+`","job_definition_id":`+def+`,"schedule_type":"interval","interval_seconds":60,"params":{"duration":"1s"}}`))
		}
		cal := func(name string) int64 {
			return id(b.ok(201, "POST", "/api/v1/calendars", `{"name":"`+name+`","kind":"weekly","definition":{"days":["sun"]}}`))
		}
		job := func() int64 { return id(b.ok(201, "POST", "/api/v1/jobs", `{"job_definition_id":`+def+`}`)) }
		rows := []struct {
			path, table, column string
			good, bad           int64
		}{
			{"/api/v1/definitions", "job_definitions", "default_params", good, bad},
			{"/api/v1/schedules", "schedules", "params", sched("good"), sched("bad")},
			{"/api/v1/calendars", "calendars", "definition", cal("good"), cal("bad")},
			{"/api/v1/jobs", "jobs", "params", job(), job()},
		}
		for _, r := range rows {
			writeNotJSON(t, st, r.table, r.column, r.bad)
		}
		for _, r := range rows {
			page := b.ok(200, "GET", r.path, "")
			require.NotNil(t, page, "%s answered 200 with no body", r.path)
			list := items(page)
			byID := map[int64]map[string]any{}
			for _, it := range list {
				m := it.(map[string]any)
				byID[id(m)] = m
			}
			require.Contains(t, byID, r.good, "%s lists the good row", r.path)
			require.Contains(t, byID, r.bad, "%s lists the bad row", r.path)
			require.NotContains(t, byID[r.good], "invalid", "%s: a good row carries no invalid field", r.path)
			require.NotContains(t, byID[r.good], "invalid_reason", r.path)
			require.NotNil(t, byID[r.good][r.column], r.path)
			one := b.ok(200, "GET", r.path+"/"+itoa(r.bad), "")
			require.NotNil(t, one, "%s/%d answered 200 with no body", r.path, r.bad)
			for _, got := range []map[string]any{byID[r.bad], one} {
				require.Equal(t, true, got["invalid"], "%s: %v", r.path, got)
				require.Nil(t, got[r.column], "%s: the column is shown as null", r.path)
				require.Contains(t, got["invalid_reason"], r.column+" ", r.path)
				require.Contains(t, got["invalid_reason"], "not valid JSON", r.path)
			}
			t.Logf("%s: %s", r.path, one["invalid_reason"])
		}
		// A PATCH that leaves the column out is refused while it is
		// invalid; one that sets it repairs the row.
		for _, r := range rows[:3] {
			path := r.path + "/" + itoa(r.bad)
			b.fails(400, r.column, "must be a JSON object", "PATCH", path, `{"name":"renamed"}`)
			fixed := b.ok(200, "PATCH", path, `{"`+r.column+`":`+map[string]string{
				"default_params": `{"duration":"1s"}`, "params": `{"duration":"1s"}`, "definition": `{"days":["sat"]}`}[r.column]+`}`)
			require.NotContains(t, fixed, "invalid", path)
			require.NotContains(t, b.ok(200, "GET", path, ""), "invalid", path)
		}
		warned := map[any]int{}
		for _, e := range hook.AllEntries() {
			if e.Level == logrus.WarnLevel && strings.Contains(e.Message, "shown as invalid") {
				warned[e.Data["table"]]++
			}
		}
		require.Equal(t, map[any]int{"job_definitions": 1, "schedules": 1, "calendars": 1, "jobs": 1}, warned,
			"each bad row is logged once, however often it is shown")
	})
}

// TestRowsWithValuesOutOfTheirFields: a jobs or notifications row whose
// column plain SQL filled with a value its field cannot hold (SQLite's
// text in an INTEGER or a time column, PostgreSQL's 'infinity'), or with a
// counter or time out of its bound (a year JSON cannot write), is listed
// and shown beside the others, flagged invalid with the column named,
// where it failed the whole answer.
func TestRowsWithValuesOutOfTheirFields(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		log, hook := test.NewNullLogger()
		b := setupWith(t, st, func(c *Config) { c.Logger = log })
		def := itoa(b.definition("d"))
		job := func() int64 { return id(b.ok(201, "POST", "/api/v1/jobs", `{"job_definition_id":`+def+`}`)) }
		values := map[store.Dialect][]struct{ column, value string }{
			store.SQLite:   {{"attempt", "x"}, {"finished_at", "not a time"}},
			store.Postgres: {{"finished_at", "infinity"}, {"scheduled_at", "10000-01-01 00:00:00"}},
			store.MySQL:    {{"attempt", "2147483647"}},
		}[st.Dialect()]
		for _, table := range []string{"jobs", "notifications"} {
			path := "/api/v1/" + table
			good := job()
			for _, v := range values {
				row := job()
				if table == "notifications" {
					for _, j := range []int64{good, row} {
						require.NoError(t, st.DB().Exec("INSERT INTO notifications (job_id, job_status, recipients) VALUES (?, 'failed', 'a@example.com')", j).Error)
					}
					require.NoError(t, st.DB().Raw("SELECT id FROM notifications WHERE job_id = ?", row).Scan(&row).Error)
					require.NoError(t, st.DB().Raw("SELECT id FROM notifications WHERE job_id = ?", good).Scan(&good).Error)
					v.column = map[string]string{"attempt": "attempts", "finished_at": "sent_at", "scheduled_at": "created_at"}[v.column]
				}
				require.NoError(t, st.DB().Exec("UPDATE "+table+" SET "+v.column+" = ? WHERE id = ?", v.value, row).Error)
				byID := map[int64]map[string]any{}
				for _, it := range items(b.ok(200, "GET", path, "")) {
					byID[id(it.(map[string]any))] = it.(map[string]any)
				}
				require.Contains(t, byID, good, "%s lists the good row", path)
				require.NotContains(t, byID[good], "invalid", path)
				shown := []map[string]any{byID[row]}
				if table == "jobs" {
					shown = append(shown, b.ok(200, "GET", path+"/"+itoa(row), ""))
				}
				for _, got := range shown {
					require.Equal(t, true, got["invalid"], "%s.%s = %s: %v", table, v.column, v.value, got)
					require.Contains(t, got["invalid_reason"], table+"."+v.column, "%s.%s = %s", table, v.column, v.value)
				}
				t.Logf("%s: %s", path, byID[row]["invalid_reason"])
				require.NoError(t, st.DB().Exec("DELETE FROM "+table+" WHERE id = ?", row).Error)
			}
		}
		warned := 0
		for _, e := range hook.AllEntries() {
			if e.Level == logrus.WarnLevel && strings.Contains(e.Message, "shown as invalid") {
				warned++
			}
		}
		require.Equal(t, 2*len(values), warned, "each bad row is logged once, however often it is shown")
	})
}
