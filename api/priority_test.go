package api

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

// Priorities through the API: the definition's default, a schedule's
// override (null keeps the definition's), run-now overrides, and 400s
// naming the field for values outside 1..10.
func TestPriorities(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st)
		const defs, scheds, jobs = "/api/v1/definitions", "/api/v1/schedules", "/api/v1/jobs"

		d := b.ok(201, "POST", defs, `{"name":"plain","task_type":"sleep"}`)
		require.EqualValues(t, 5, d["priority"], "the default")
		d = b.ok(201, "POST", defs, `{"name":"urgent","task_type":"sleep","priority":8}`)
		require.EqualValues(t, 8, d["priority"])
		def := itoa(id(d))
		require.EqualValues(t, 8, b.ok(200, "PATCH", defs+"/"+def, `{"description":"x"}`)["priority"], "PATCH keeps it")
		require.EqualValues(t, 7, b.ok(200, "PATCH", defs+"/"+def, `{"priority":7}`)["priority"])
		require.EqualValues(t, 7, b.ok(200, "GET", defs+"/"+def, "")["priority"], "stored")

		s := b.ok(201, "POST", scheds, `{"name":"inherits","job_definition_id":`+def+`,"schedule_type":"interval","interval_seconds":60}`)
		require.Nil(t, s["priority"], "null: the definition's")
		inherits := itoa(id(s))
		s = b.ok(201, "POST", scheds, `{"name":"own","job_definition_id":`+def+`,"schedule_type":"interval","interval_seconds":60,"priority":2}`)
		require.EqualValues(t, 2, s["priority"])
		own := itoa(id(s))

		// Run now: the override, else the schedule's, else the definition's.
		require.EqualValues(t, 7, b.ok(201, "POST", jobs, `{"job_definition_id":`+def+`}`)["priority"])
		require.EqualValues(t, 10, b.ok(201, "POST", jobs, `{"job_definition_id":`+def+`,"priority":10}`)["priority"])
		require.EqualValues(t, 7, b.ok(201, "POST", scheds+"/"+inherits+"/trigger", "")["priority"])
		j := b.ok(201, "POST", scheds+"/"+own+"/trigger", "")
		require.EqualValues(t, 2, j["priority"])
		require.EqualValues(t, 2, b.ok(200, "GET", jobs+"/"+itoa(id(j)), "")["priority"], "stored")
		require.EqualValues(t, 9, b.ok(201, "POST", scheds+"/"+own+"/trigger", `{"priority":9}`)["priority"])

		// null on PATCH gives the definition's back.
		require.Nil(t, b.ok(200, "PATCH", scheds+"/"+own, `{"priority":null}`)["priority"])
		require.EqualValues(t, 7, b.ok(201, "POST", scheds+"/"+own+"/trigger", "")["priority"])

		for _, bad := range []string{"0", "11", "-3", "99999999999"} {
			b.fails(400, "priority", "priority must be from 1", "POST", defs, `{"name":"bad","task_type":"sleep","priority":`+bad+`}`)
			b.fails(400, "priority", "priority must be from 1", "PATCH", defs+"/"+def, `{"priority":`+bad+`}`)
			b.fails(400, "priority", "priority must be from 1", "POST", scheds,
				`{"name":"bad","job_definition_id":`+def+`,"schedule_type":"interval","interval_seconds":60,"priority":`+bad+`}`)
			b.fails(400, "priority", "priority must be from 1", "PATCH", scheds+"/"+own, `{"priority":`+bad+`}`)
			b.fails(400, "priority", "priority must be from 1", "POST", jobs, `{"job_definition_id":`+def+`,"priority":`+bad+`}`)
			b.fails(400, "priority", "priority must be from 1", "POST", scheds+"/"+own+"/trigger", `{"priority":`+bad+`}`)
		}
		b.fails(400, "priority", "expected an integer", "POST", defs, `{"name":"bad","task_type":"sleep","priority":"high"}`)
		b.fails(400, "priority", "expected an integer", "POST", jobs, `{"job_definition_id":`+def+`,"priority":5.5}`)
		b.fails(400, "bogus", "unknown field", "POST", scheds+"/"+own+"/trigger", `{"bogus":1}`)
	})
}
