package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// TestEveryRouteHasARule: a route added to routeTable without a rule in
// routeRules fails here (and is admin-only meanwhile), and so does a rule
// for a route that is not served.
func TestEveryRouteHasARule(t *testing.T) {
	t.Parallel()
	served := map[string]bool{}
	for _, rt := range routeTable {
		if rt.handler == nil {
			continue
		}
		key := rt.method + " " + rt.path
		served[key] = true
		ru, ok := routeRules[key]
		if !assertOK(t, ok, "route %s has no rule in routeRules (api/authz.go)", key) {
			continue
		}
		assertOK(t, ru.role.Rank() > 0, "route %s: rule names no known role", key)
		// Invariants that hold whatever the table says.
		if rt.method != "GET" {
			assertOK(t, ru.role.Rank() > models.RoleViewer.Rank(), "route %s writes: a viewer must not reach it", key)
		}
		if strings.Contains(rt.path, "/tokens") || rt.method == "PUT" && strings.Contains(rt.path, "/configurations") {
			assertOK(t, ru.role == models.RoleAdmin && ru.unscoped, "route %s is admin's alone", key)
		}
		if strings.Contains(rt.path, "{id}") && !strings.Contains(rt.path, "/calendars") {
			assertOK(t, ru.object != noObject, "route %s names an object by id: its rule must say which, so scopes apply", key)
		}
	}
	for key := range routeRules {
		assertOK(t, served[key], "routeRules has a rule for %s, which is not served", key)
	}
}

func assertOK(t *testing.T, ok bool, format string, args ...any) bool {
	t.Helper()
	if !ok {
		t.Errorf(format, args...)
	}
	return ok
}

// target is what a request of the matrix aims at: a sleep definition of
// the scope (in), one of another team (out), a shell one of the scope.
type target string

const (
	inScopeTarget target = "in"
	outTarget     target = "out"
	shellTarget   target = "shell"
)

// fixture is one set of objects a case's request may touch, made afresh
// for each case so allowed writes do not disturb the next.
type fixture struct {
	def, sched, job map[target]int64
	calendar        int64
	workflow, run   int64
	channel, rule   int64
	queue           string
	node            string
	spareToken      string
	spareSecret     string
	n               int
}

// sample builds the request of a route against a fixture and a target:
// its path, its body, and whether it changes what runs (a shell target
// then needs admin).
type sample func(f *fixture, tg target) (path, body string, changesTask bool)

func byID(path string, m func(f *fixture) map[target]int64) sample {
	return func(f *fixture, tg target) (string, string, bool) {
		return strings.Replace(path, "{id}", itoa(m(f)[tg]), 1), "", false
	}
}

func defs(f *fixture) map[target]int64   { return f.def }
func scheds(f *fixture) map[target]int64 { return f.sched }
func jobs(f *fixture) map[target]int64   { return f.job }

func constant(path, body string) sample {
	return func(*fixture, target) (string, string, bool) { return path, body, false }
}

func changing(s sample, body string) sample {
	return func(f *fixture, tg target) (string, string, bool) {
		p, _, _ := s(f, tg)
		return p, body, true
	}
}

func teamName(tg target, n int) string {
	if tg == outTarget {
		return fmt.Sprintf("hr.new%d", n)
	}
	return fmt.Sprintf("finance.new%d", n)
}

// routeSamples holds a request for every route; a route without one fails
// TestEveryRouteByRole.
var routeSamples = map[string]sample{
	"GET /api/v1/openapi.json": constant("/api/v1/openapi.json", ""),
	"GET /api/v1/audit":        constant("/api/v1/audit?object_type=definition", ""),
	"GET /api/v1/definitions":  constant("/api/v1/definitions", ""),
	"POST /api/v1/definitions": func(f *fixture, tg target) (string, string, bool) {
		if tg == shellTarget {
			return "/api/v1/definitions", `{"name":"` + teamName(tg, f.n) + `","task_type":"shell","default_params":{"command":"true"}}`, true
		}
		return "/api/v1/definitions", `{"name":"` + teamName(tg, f.n) + `","task_type":"sleep","default_params":{"duration":"1ms"}}`, true
	},
	"GET /api/v1/definitions/{id}":   byID("/api/v1/definitions/{id}", defs),
	"PATCH /api/v1/definitions/{id}": changing(byID("/api/v1/definitions/{id}", defs), `{"description":"changed"}`),
	"DELETE /api/v1/definitions/{id}": func(f *fixture, tg target) (string, string, bool) {
		return "/api/v1/definitions/" + itoa(f.def[tg]), "", true
	},

	"GET /api/v1/schedules": constant("/api/v1/schedules", ""),
	"POST /api/v1/schedules": func(f *fixture, tg target) (string, string, bool) {
		return "/api/v1/schedules", `{"name":"s-new` + itoa(int64(f.n)) + `","job_definition_id":` + itoa(f.def[tg]) + `,"schedule_type":"interval","interval_seconds":60}`, true
	},
	"GET /api/v1/schedules/{id}":          byID("/api/v1/schedules/{id}", scheds),
	"PATCH /api/v1/schedules/{id}":        changing(byID("/api/v1/schedules/{id}", scheds), `{"interval_seconds":120}`),
	"DELETE /api/v1/schedules/{id}":       changing(byID("/api/v1/schedules/{id}", scheds), ""),
	"POST /api/v1/schedules/{id}/pause":   byID("/api/v1/schedules/{id}/pause", scheds),
	"POST /api/v1/schedules/{id}/resume":  byID("/api/v1/schedules/{id}/resume", scheds),
	"POST /api/v1/schedules/{id}/trigger": byID("/api/v1/schedules/{id}/trigger", scheds),

	"GET /api/v1/calendars": constant("/api/v1/calendars", ""),
	"POST /api/v1/calendars": func(f *fixture, _ target) (string, string, bool) {
		return "/api/v1/calendars", `{"name":"c-new` + itoa(int64(f.n)) + `","kind":"weekly","definition":{"days":["sun"]}}`, false
	},
	"GET /api/v1/calendars/{id}": func(f *fixture, _ target) (string, string, bool) {
		return "/api/v1/calendars/" + itoa(f.calendar), "", false
	},
	"PATCH /api/v1/calendars/{id}": func(f *fixture, _ target) (string, string, bool) {
		return "/api/v1/calendars/" + itoa(f.calendar), `{"description":"changed"}`, false
	},
	"DELETE /api/v1/calendars/{id}": func(f *fixture, _ target) (string, string, bool) {
		return "/api/v1/calendars/" + itoa(f.calendar), "", false
	},

	"GET /api/v1/jobs": constant("/api/v1/jobs", ""),
	"POST /api/v1/jobs": func(f *fixture, tg target) (string, string, bool) {
		if tg == shellTarget {
			// Params change what runs; without them an operator runs a
			// shell definition as an admin wrote it.
			return "/api/v1/jobs", `{"job_definition_id":` + itoa(f.def[tg]) + `,"params":{"command":"echo other"}}`, true
		}
		return "/api/v1/jobs", `{"job_definition_id":` + itoa(f.def[tg]) + `}`, false
	},
	"GET /api/v1/jobs/{id}":         byID("/api/v1/jobs/{id}", jobs),
	"GET /api/v1/jobs/{id}/logs":    byID("/api/v1/jobs/{id}/logs", jobs),
	"POST /api/v1/jobs/{id}/pause":  byID("/api/v1/jobs/{id}/pause", jobs),
	"POST /api/v1/jobs/{id}/resume": byID("/api/v1/jobs/{id}/resume", jobs),
	"POST /api/v1/jobs/{id}/stop":   byID("/api/v1/jobs/{id}/stop", jobs),
	"POST /api/v1/jobs/{id}/reset":  byID("/api/v1/jobs/{id}/reset", jobs),

	"GET /api/v1/notifications":         constant("/api/v1/notifications", ""),
	"GET /api/v1/nodes":                 constant("/api/v1/nodes", ""),
	"GET /api/v1/configurations":        constant("/api/v1/configurations", ""),
	"GET /api/v1/configurations/{name}": constant("/api/v1/configurations/log.level", ""),
	"PUT /api/v1/configurations/{name}": constant("/api/v1/configurations/log.level", `{"value":"info"}`),
	"GET /api/v1/whoami":                constant("/api/v1/whoami", ""),
	"GET /api/v1/tokens":                constant("/api/v1/tokens", ""),
	"POST /api/v1/tokens": func(f *fixture, _ target) (string, string, bool) {
		return "/api/v1/tokens", `{"name":"t-new` + itoa(int64(f.n)) + `","role":"viewer"}`, false
	},
	"POST /api/v1/tokens/{name}/revoke": func(f *fixture, _ target) (string, string, bool) {
		return "/api/v1/tokens/" + f.spareToken + "/revoke", "", false
	},
	"GET /api/v1/version": constant("/api/v1/version", ""),

	"GET /api/v1/secrets": constant("/api/v1/secrets", ""),
	"POST /api/v1/secrets": func(f *fixture, _ target) (string, string, bool) {
		return "/api/v1/secrets", `{"name":"s-new` + itoa(int64(f.n)) + `","value":"v\n\u0000w"}`, false
	},
	"DELETE /api/v1/secrets/{name}": func(f *fixture, _ target) (string, string, bool) {
		return "/api/v1/secrets/" + f.spareSecret, "", false
	},
	"POST /api/v1/secrets/rotate": constant("/api/v1/secrets/rotate", ""),

	"GET /api/v1/workflows": constant("/api/v1/workflows", ""),
	"POST /api/v1/workflows": func(f *fixture, _ target) (string, string, bool) {
		return "/api/v1/workflows", `{"name":"wf-new` + itoa(int64(f.n)) + `","steps":[{"name":"a","definition_id":` + itoa(f.def[inScopeTarget]) + `}]}`, false
	},
	"GET /api/v1/workflows/{id}":       shared("/api/v1/workflows/{id}", func(f *fixture) int64 { return f.workflow }),
	"DELETE /api/v1/workflows/{id}":    shared("/api/v1/workflows/{id}", func(f *fixture) int64 { return f.workflow }),
	"POST /api/v1/workflows/{id}/runs": shared("/api/v1/workflows/{id}/runs", func(f *fixture) int64 { return f.workflow }),
	"GET /api/v1/runs":                 constant("/api/v1/runs", ""),
	"GET /api/v1/runs/{id}":            shared("/api/v1/runs/{id}", func(f *fixture) int64 { return f.run }),
	"POST /api/v1/runs/{id}/cancel":    shared("/api/v1/runs/{id}/cancel", func(f *fixture) int64 { return f.run }),
	"POST /api/v1/runs/{id}/rerun":     shared("/api/v1/runs/{id}/rerun", func(f *fixture) int64 { return f.run }),
	"POST /api/v1/runs/{id}/pause":     shared("/api/v1/runs/{id}/pause", func(f *fixture) int64 { return f.run }),
	"POST /api/v1/runs/{id}/resume":    shared("/api/v1/runs/{id}/resume", func(f *fixture) int64 { return f.run }),
	"GET /api/v1/alert-channels":       constant("/api/v1/alert-channels", ""),
	"POST /api/v1/alert-channels": func(f *fixture, _ target) (string, string, bool) {
		return "/api/v1/alert-channels", `{"name":"ch-new` + itoa(int64(f.n)) + `","kind":"email","recipients":"ops@example.com"}`, false
	},
	"PATCH /api/v1/alert-channels/{id}": func(f *fixture, _ target) (string, string, bool) {
		return "/api/v1/alert-channels/" + itoa(f.channel), `{"recipients":"oncall@example.com"}`, false
	},
	"DELETE /api/v1/alert-channels/{id}":    shared("/api/v1/alert-channels/{id}", func(f *fixture) int64 { return f.channel }),
	"POST /api/v1/alert-channels/{id}/test": shared("/api/v1/alert-channels/{id}/test", func(f *fixture) int64 { return f.channel }),
	"GET /api/v1/alert-rules":               constant("/api/v1/alert-rules", ""),
	"POST /api/v1/alert-rules": func(f *fixture, _ target) (string, string, bool) {
		return "/api/v1/alert-rules", `{"name":"r-new` + itoa(int64(f.n)) + `","event":"job_failed","channel_id":` + itoa(f.channel) + `}`, false
	},
	"PATCH /api/v1/alert-rules/{id}": func(f *fixture, _ target) (string, string, bool) {
		return "/api/v1/alert-rules/" + itoa(f.rule), `{"throttle_seconds":600}`, false
	},
	"DELETE /api/v1/alert-rules/{id}": shared("/api/v1/alert-rules/{id}", func(f *fixture) int64 { return f.rule }),
	"GET /api/v1/alerts":              constant("/api/v1/alerts", ""),

	"GET /api/v1/queues":        constant("/api/v1/queues", ""),
	"GET /api/v1/queues/{name}": constant("/api/v1/queues/default", ""),
	"PUT /api/v1/queues/{name}": func(f *fixture, _ target) (string, string, bool) {
		return "/api/v1/queues/q" + itoa(int64(f.n)), `{"max_running":2}`, false
	},
	"DELETE /api/v1/queues/{name}": func(f *fixture, _ target) (string, string, bool) {
		return "/api/v1/queues/" + f.queue, "", false
	},
	"POST /api/v1/queues/{name}/pause":  constant("/api/v1/queues/default/pause", ""),
	"POST /api/v1/queues/{name}/resume": constant("/api/v1/queues/default/resume", ""),
	"POST /api/v1/nodes/{node}/drain": func(f *fixture, _ target) (string, string, bool) {
		return "/api/v1/nodes/" + f.node + "/drain", "", false
	},
	"POST /api/v1/nodes/{node}/undrain": func(f *fixture, _ target) (string, string, bool) {
		return "/api/v1/nodes/" + f.node + "/undrain", "", false
	},
}

// shared is the request of a route whose {id} names an object no scope
// covers: every target names the same one.
func shared(path string, id func(f *fixture) int64) sample {
	return func(f *fixture, _ target) (string, string, bool) {
		return strings.Replace(path, "{id}", itoa(id(f)), 1), "", false
	}
}

// principalCase is a token of the matrix.
type principalCase struct {
	name  string
	role  models.Role
	scope string
	token string
}

// newFixture writes, as the bootstrap admin, a definition, a schedule and
// a job of each target, a calendar and a spare token.
func (b *bundle) newFixture(n int) *fixture {
	b.t.Helper()
	f := &fixture{def: map[target]int64{}, sched: map[target]int64{}, job: map[target]int64{}, n: n}
	for _, tg := range []target{inScopeTarget, outTarget, shellTarget} {
		name := fmt.Sprintf("finance.%s%d", tg, n)
		body := `{"name":"` + name + `","task_type":"sleep","default_params":{"duration":"1ms"}}`
		if tg == outTarget {
			name = fmt.Sprintf("hr.payroll%d", n)
			body = `{"name":"` + name + `","task_type":"sleep","default_params":{"duration":"1ms"}}`
		}
		if tg == shellTarget {
			body = `{"name":"` + name + `","task_type":"shell","default_params":{"command":"true"}}`
		}
		f.def[tg] = id(b.ok(201, "POST", "/api/v1/definitions", body))
		f.sched[tg] = id(b.ok(201, "POST", "/api/v1/schedules", `{"name":"`+name+`-s","job_definition_id":`+itoa(f.def[tg])+
			`,"schedule_type":"interval","interval_seconds":60,"status":"paused"}`))
		f.job[tg] = id(b.ok(201, "POST", "/api/v1/jobs", `{"job_definition_id":`+itoa(f.def[tg])+`,"run_at":"2099-01-01T00:00:00Z"}`))
	}
	f.calendar = id(b.ok(201, "POST", "/api/v1/calendars", fmt.Sprintf(`{"name":"cal%d","kind":"weekly","definition":{"days":["sun"]}}`, n)))
	f.workflow = id(b.ok(201, "POST", "/api/v1/workflows", fmt.Sprintf(`{"name":"wf%d","steps":[{"name":"a","definition_id":%d}]}`, n, f.def[inScopeTarget])))
	f.run = id(b.ok(201, "POST", "/api/v1/workflows/"+itoa(f.workflow)+"/runs", ""))
	f.channel = id(b.ok(201, "POST", "/api/v1/alert-channels", fmt.Sprintf(`{"name":"ch%d","kind":"email","recipients":"ops@example.com"}`, n)))
	f.rule = id(b.ok(201, "POST", "/api/v1/alert-rules", fmt.Sprintf(`{"name":"r%d","event":"job_failed","channel_id":%d}`, n, f.channel)))
	f.queue = fmt.Sprintf("spareq%d", n)
	b.ok(200, "PUT", "/api/v1/queues/"+f.queue, `{"max_running":1}`)
	f.node = fmt.Sprintf("node%d", n)
	require.NoError(b.t, b.st.RegisterNode(b.t.Context(), &chimedb.RegisterNodeParams{ID: f.node, Roles: "worker"}))
	f.spareToken = fmt.Sprintf("spare%d", n)
	b.ok(201, "POST", "/api/v1/tokens", `{"name":"`+f.spareToken+`","role":"viewer"}`)
	f.spareSecret = fmt.Sprintf("spare-secret%d", n)
	b.ok(201, "POST", "/api/v1/secrets", `{"name":"`+f.spareSecret+`","value":"v"}`)
	return f
}

// as sends a request with token.
func (b *bundle) as(token, method, path, body string) *httptest.ResponseRecorder {
	b.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	b.h.ServeHTTP(rec, req)
	return rec
}

// fingerprint is every row a request could change, as text.
func fingerprint(t *testing.T, st *store.Store) string {
	t.Helper()
	var out strings.Builder
	for _, q := range []string{
		"SELECT id, name, task_type, description, updated_at FROM job_definitions ORDER BY id",
		"SELECT id, name, job_definition_id, status, interval_seconds, updated_at FROM schedules ORDER BY id",
		"SELECT id, status, control, params, run_at FROM jobs ORDER BY id",
		"SELECT id, name, description, updated_at FROM calendars ORDER BY id",
		"SELECT name, value FROM configurations ORDER BY name",
		"SELECT name, role, revoked_at FROM api_tokens ORDER BY name",
		"SELECT id, name, updated_at FROM workflows ORDER BY id",
		"SELECT id, status, generation FROM workflow_runs ORDER BY id",
		"SELECT id, name, recipients, updated_at FROM alert_channels ORDER BY id",
		"SELECT id, name, throttle_seconds, updated_at FROM alert_rules ORDER BY id",
		"SELECT name, max_running, paused FROM queues ORDER BY name",
		"SELECT name, key_id, nonce FROM secrets ORDER BY name",
		"SELECT id, drain FROM nodes ORDER BY id",
	} {
		rows, err := st.DB().Raw(q).Rows()
		require.NoError(t, err, q)
		cols, err := rows.Columns()
		require.NoError(t, err)
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			require.NoError(t, rows.Scan(ptrs...))
			fmt.Fprintf(&out, "%v\n", vals)
		}
		require.NoError(t, rows.Close())
	}
	return out.String()
}

// TestEveryRouteByRole sends every route of routeTable as every role,
// unscoped and scoped to "finance.", at an object of the scope, of
// another team and of a shell definition: a role below the route's, a
// scoped token on a shared object, and a non-admin changing what a shell
// definition runs are refused with 403 and change nothing; another
// team's object is answered as missing, without its name, and changes
// nothing; lists of a scoped token hold nothing of another team; the
// rest is allowed.
func TestEveryRouteByRole(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.SQLite)
	// A test send reaches no receiver here: what is checked is who may ask.
	b := setupWith(t, st, func(c *Config) {
		c.TestAlertChannel = func(context.Context, *models.AlertChannel) error { return nil }
	})
	var principals []principalCase
	for _, role := range models.Roles() {
		for _, scope := range []string{"", "finance."} {
			name := string(role)
			if scope != "" {
				name += "-scoped"
			}
			tok := "chime_matrix_" + name
			// Written as an admin's SQL would: the API refuses a scoped
			// admin, a row can still say so.
			require.NoError(t, st.Admin().CreateToken(t.Context(), &models.APIToken{Name: name, TokenSHA256: HashToken(tok), Role: role, Scope: scope}))
			principals = append(principals, principalCase{name: name, role: role, scope: scope, token: tok})
		}
	}
	b.ok(200, "PUT", "/api/v1/configurations/log.level", `{"value":"info"}`)
	// A fixture is made afresh only after a request changed something:
	// most are refused or read.
	n, fixtures := 0, 0
	var (
		f      *fixture
		before string // the rows before the request; "" after a new fixture
	)
	for _, rt := range routeTable {
		if rt.handler == nil {
			continue
		}
		key := rt.method + " " + rt.path
		smp, ok := routeSamples[key]
		if !assertOK(t, ok, "route %s has no sample request in routeSamples (api/authz_test.go)", key) {
			continue
		}
		ru := ruleOf(rt.method, rt.path)
		targets := []target{inScopeTarget}
		if strings.Contains(rt.path, "{id}") && !strings.Contains(rt.path, "calendars") || rt.method == "POST" && (rt.path == Prefix+"/definitions" ||
			rt.path == Prefix+"/schedules" || rt.path == Prefix+"/jobs") {
			targets = append(targets, outTarget, shellTarget)
		}
		for _, p := range principals {
			for _, tg := range targets {
				if tg == outTarget && p.scope == "" {
					continue // another team's object is just an object
				}
				n++
				if f == nil {
					fixtures++
					f = b.newFixture(fixtures)
					before = ""
				}
				f.n = n
				path, body, changes := smp(f, tg)
				if before == "" {
					before = fingerprint(t, st)
				}
				rec := b.as(p.token, rt.method, path, body)
				// The state after is the next request's before, unless a
				// new fixture comes between. A read changes nothing.
				after := before
				if rt.method != "GET" {
					after = fingerprint(t, st)
				}
				if after != before {
					f = nil
				}
				desc := fmt.Sprintf("%s as %s at %s: %d %s", key, p.name, tg, rec.Code, rec.Body.String())
				switch {
				case p.role.Rank() < ru.role.Rank(), p.scope != "" && ru.unscoped,
					tg == shellTarget && changes && p.role != models.RoleAdmin,
					tg == outTarget && rt.path == Prefix+"/definitions" && rt.method == "POST":
					require.Equal(t, http.StatusForbidden, rec.Code, desc)
					require.Equal(t, before, after, "refused, yet changed: %s", desc)
					require.NotContains(t, rec.Body.String(), "hr.", desc)
				case tg == outTarget:
					require.Contains(t, []int{http.StatusNotFound, http.StatusBadRequest}, rec.Code, desc)
					require.Contains(t, rec.Body.String(), "does not exist", desc)
					require.NotContains(t, rec.Body.String(), "hr.", desc)
					require.Equal(t, before, after, "another team's, yet changed: %s", desc)
				default:
					require.NotContains(t, []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound}, rec.Code, desc)
					require.Less(t, rec.Code, 500, desc)
					if p.scope != "" && rt.method == "GET" {
						require.NotContains(t, rec.Body.String(), "hr.", "a scoped list shows another team's: %s", desc)
					}
				}
				before = after
			}
		}
	}
	t.Logf("%d requests, %d fixtures", n, fixtures)
}

// TestTokenLifecycle: a token made through the API works at once with its
// role, is listed without its hash, is refused on every node once revoked
// or expired, and the refusals are logged at info with the reason and
// never the token.
func TestTokenLifecycle(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		var logs bytes.Buffer
		log := logrus.New()
		log.SetOutput(&logs)
		log.SetLevel(logrus.InfoLevel)
		log.SetFormatter(&logrus.JSONFormatter{})
		b := setupWith(t, st, func(c *Config) { c.Logger = log })
		other := setup(t, st) // a second node on the same database

		made := b.ok(201, "POST", "/api/v1/tokens", `{"name":"oncall","role":"operator","expires_at":"2099-01-01T00:00:00Z"}`)
		tok := made["token"].(string)
		require.True(t, strings.HasPrefix(tok, TokenPrefix))
		var row models.APIToken
		require.NoError(t, st.DB().Where("name = ?", "oncall").First(&row).Error)
		require.Equal(t, HashToken(tok), row.TokenSHA256)
		require.NotContains(t, fingerprint(t, st), tok, "only the hash is stored")

		rec := other.as(tok, "GET", "/api/v1/whoami", "")
		require.Equal(t, 200, rec.Code, rec.Body.String())
		require.JSONEq(t, `{"name":"oncall","role":"operator","scope":""}`, rec.Body.String())
		require.Equal(t, 403, other.as(tok, "POST", "/api/v1/definitions", `{"name":"x","task_type":"sleep"}`).Code)

		list := b.call("GET", "/api/v1/tokens", "")
		require.Equal(t, 200, list.Code)
		require.NotContains(t, list.Body.String(), row.TokenSHA256)
		require.NotContains(t, list.Body.String(), tok)

		b.fails(409, "name", "already exists", "POST", "/api/v1/tokens", `{"name":"oncall","role":"viewer"}`)
		b.fails(400, "role", "role must be", "POST", "/api/v1/tokens", `{"name":"y","role":"root"}`)
		b.fails(400, "scope", "cannot be scoped", "POST", "/api/v1/tokens", `{"name":"y","role":"admin","scope":"a."}`)
		b.fails(400, "expires_at", "future", "POST", "/api/v1/tokens", `{"name":"y","role":"viewer","expires_at":"2001-01-01T00:00:00Z"}`)
		b.fails(400, "name", "spaces", "POST", "/api/v1/tokens", `{"name":"a b","role":"viewer"}`)
		b.fails(404, "", "does not exist", "POST", "/api/v1/tokens/nobody/revoke", "")

		b.ok(200, "POST", "/api/v1/tokens/oncall/revoke", "")
		for _, srv := range []*bundle{b, other} {
			rec := srv.as(tok, "GET", "/api/v1/whoami", "")
			require.Equal(t, 401, rec.Code)
			require.Contains(t, rec.Body.String(), "invalid bearer token", "a revoked token is answered as a wrong one")
		}
		require.Contains(t, logs.String(), `token \"oncall\" is revoked`)
		require.Contains(t, logs.String(), `"level":"info","msg":"api: authentication failed"`)
		require.Contains(t, logs.String(), `"by":"bootstrap"`, "the change is logged with who made it")
		require.NotContains(t, logs.String(), tok)

		// Expired: written with plain SQL, as an admin may.
		exp := b.ok(201, "POST", "/api/v1/tokens", `{"name":"temp","role":"viewer"}`)["token"].(string)
		require.Equal(t, 200, b.as(exp, "GET", "/api/v1/whoami", "").Code)
		require.NoError(t, st.DB().Exec("UPDATE api_tokens SET expires_at = ? WHERE name = ?", store.DBTime(time.Now().Add(-time.Second)), "temp").Error)
		require.Equal(t, 401, b.as(exp, "GET", "/api/v1/whoami", "").Code)
		require.Contains(t, logs.String(), `token \"temp\" expired`)

		// A role chime does not know, written with SQL: refused.
		unk := "chime_unknown_role_token"
		require.NoError(t, st.DB().Exec("INSERT INTO api_tokens (name, token_sha256, role) VALUES (?, ?, ?)", "odd", HashToken(unk), "root").Error)
		require.Equal(t, 401, b.as(unk, "GET", "/api/v1/whoami", "").Code)
		var listed struct{ Items []TokenView }
		require.NoError(t, json.Unmarshal(b.call("GET", "/api/v1/tokens", "").Body.Bytes(), &listed))
		require.Len(t, listed.Items, 3)
		for _, v := range listed.Items {
			require.False(t, v.Live, "%s is revoked, expired or of an unknown role", v.Name)
		}
	})
}

// TestManyTokens: with 10,000 tokens in api_tokens, each request still
// finds its own by the unique key, and a wrong one is still refused.
func TestManyTokens(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.SQLite)
	b := setup(t, st)
	// One statement: a loop of inserts takes minutes under -race.
	require.NoError(t, st.DB().Exec(`INSERT INTO api_tokens (name, token_sha256, role, scope)
		WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 9999)
		SELECT printf('t%05d', i), printf('%064d', i), 'viewer', 'team' || (i % 50) || '.' FROM n`).Error)
	require.NoError(t, st.DB().Exec(`UPDATE api_tokens SET token_sha256 = ? WHERE name = 't07777'`, HashToken("tok-7777")).Error)
	var count int64
	require.NoError(t, st.DB().Raw(`SELECT COUNT(*) FROM api_tokens`).Scan(&count).Error)
	require.EqualValues(t, 10_000, count)
	rec := b.as("tok-7777", "GET", "/api/v1/whoami", "")
	require.Equal(t, 200, rec.Code)
	require.JSONEq(t, `{"name":"t07777","role":"viewer","scope":"team27."}`, rec.Body.String())
	require.Equal(t, 401, b.as("tok-10000", "GET", "/api/v1/whoami", "").Code)
}

// TestChangesLoggedWithWho: every change through the API is logged at
// info with the token's name and the door; reads and refusals are not
// logged as changes.
func TestChangesLoggedWithWho(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.SQLite)
	var logs bytes.Buffer
	log := logrus.New()
	log.SetOutput(&logs)
	log.SetFormatter(&logrus.JSONFormatter{})
	b := setupWith(t, st, func(c *Config) { c.Logger = log })
	tok := b.ok(201, "POST", "/api/v1/tokens", `{"name":"ed","role":"editor"}`)["token"].(string)
	rec := b.as(tok, "POST", "/api/v1/definitions", `{"name":"d1","task_type":"sleep","default_params":{"duration":"1ms"}}`)
	require.Equal(t, 201, rec.Code, rec.Body.String())
	require.Equal(t, 403, b.as(tok, "POST", "/api/v1/definitions", `{"name":"d2","task_type":"shell","default_params":{"command":"id"}}`).Code)
	require.Equal(t, 200, b.as(tok, "GET", "/api/v1/definitions", "").Code)
	var changes, refusals []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		switch m["msg"] {
		case "api: change":
			changes = append(changes, m)
		case "api: request refused by role or scope":
			refusals = append(refusals, m)
		}
	}
	require.Len(t, changes, 2, "the token's creation and the definition's: %s", logs.String())
	require.Equal(t, "bootstrap", changes[0]["by"])
	require.Equal(t, "ed", changes[1]["by"])
	require.Equal(t, "api", changes[1]["via"])
	require.Equal(t, "info", changes[1]["level"])
	require.Equal(t, "POST /api/v1/definitions", changes[1]["route"])
	require.Len(t, refusals, 1, "the shell definition's refusal")
	require.Equal(t, "ed", refusals[0]["by"])
	require.NotContains(t, refusals[0], "name", "the body is not logged")
	require.NotContains(t, logs.String(), tok)
}
