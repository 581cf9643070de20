package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/configs"
	"github.com/chimesched/chime/internal/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

func TestAuthAndOps(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st)
		for _, rt := range routeTable {
			path := strings.ReplaceAll(strings.ReplaceAll(rt.path, "{id}", "1"), "{name}", "x")
			for _, auth := range []string{"", "Bearer wrong", "Basic " + testToken, "Bearer " + testToken + "x"} {
				req := httptest.NewRequest(rt.method, path, strings.NewReader("{}"))
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				rec := httptest.NewRecorder()
				b.h.ServeHTTP(rec, req)
				if rt.public {
					require.Equal(t, http.StatusOK, rec.Code, "%s %s", rt.method, path)
					continue
				}
				require.Equal(t, http.StatusUnauthorized, rec.Code, "%s %s with %q", rt.method, path, auth)
				var e Error
				require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e))
				require.Contains(t, e.Error, "bearer token")
			}
			// With the token, the mux knows the route (it does not fall
			// through to the JSON "no route" answer).
			rec := b.call(rt.method, path, "{}")
			require.NotContains(t, rec.Body.String(), "no route", "%s %s", rt.method, path)
		}
		b.fails(404, "", "no route GET /api/v1/nope", "GET", "/api/v1/nope", "")

		rec := b.call("GET", "/metrics", "")
		require.Equal(t, 200, rec.Code)
		require.Contains(t, rec.Body.String(), "chime_pool_capacity")
		require.Equal(t, "ready", b.ok(200, "GET", "/readyz", "")["status"])
		require.Equal(t, "ok", b.ok(200, "GET", "/healthz", "")["status"])
	})
}

func TestReadyzFailsWithoutDatabase(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.SQLite)
	b := setup(t, st)
	require.NoError(t, st.Close())
	b.fails(503, "", "database unreachable", "GET", "/readyz", "")
}

func TestNodesAndConfigurations(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st)
		require.Empty(t, items(b.ok(200, "GET", "/api/v1/nodes", "")))
		now := store.DBTime(time.Now())
		require.NoError(t, st.DB().Create(&models.Node{ID: "n1", Hostname: "h", PID: 7, StartedAt: now, HeartbeatAt: now, Status: "alive"}).Error)
		nodes := items(b.ok(200, "GET", "/api/v1/nodes", ""))
		require.Len(t, nodes, 1)
		require.Equal(t, "n1", nodes[0].(map[string]any)["id"])
		b.fails(400, "x", "unknown query parameter", "GET", "/api/v1/nodes?x=1", "")

		const path = "/api/v1/configurations"
		require.Empty(t, items(b.ok(200, "GET", path, "")))
		b.fails(404, "", `configuration "smtp.from" does not exist`, "GET", path+"/smtp.from", "")
		c := b.ok(200, "PUT", path+"/taskengine.pool_size", `{"value":"16","description":"workers per node"}`)
		require.Equal(t, "16", c["value"])
		c = b.ok(200, "PUT", path+"/taskengine.pool_size", `{"value":"32"}`)
		require.Equal(t, "workers per node", c["description"], "a missing description keeps the stored one")
		got := b.ok(200, "GET", path+"/taskengine.pool_size", "")
		require.Equal(t, "32", got["value"])
		require.Len(t, items(b.ok(200, "GET", path, "")), 1)
		b.fails(400, "value", "value is required", "PUT", path+"/taskengine.pool_size", `{"description":"x"}`)
		b.fails(400, "value", "expected a string", "PUT", path+"/taskengine.pool_size", `{"value":16}`)
		b.fails(400, "value", "taskengine.pool_size", "PUT", path+"/taskengine.pool_size", `{"value":"lots"}`)
		require.Equal(t, "8", b.ok(200, "PUT", path+"/taskengine.pool_size", `{"value":"8"}`)["value"])
		b.fails(400, "name", "white space", "PUT", path+"/a%20b", `{"value":"1"}`)
		b.fails(400, "x", "unknown query parameter", "GET", path+"?x=1", "")
	})
}

// Secrets are write-only: every answer shows them as configs.Redacted.
// Rows are checked as strictly as start-up: unknown keys (with close
// matches), keys only the file or environment may set, and values out of
// bounds get a 400 naming the key.
func TestConfigurationSecretsAndKeys(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st)
		const path = "/api/v1/configurations"
		const secret = "hunter2-smtp"
		for _, body := range []string{
			b.call("PUT", path+"/smtp.username", `{"value":"chime"}`).Body.String(),
			b.call("PUT", path+"/smtp.password", `{"value":"`+secret+`"}`).Body.String(),
			b.call("GET", path+"/smtp.password", "").Body.String(),
			b.call("GET", path, "").Body.String(),
		} {
			require.NotContains(t, body, secret)
		}
		require.Equal(t, configs.Redacted, b.ok(200, "GET", path+"/smtp.password", "")["value"])
		stored, err := st.Admin().GetConfiguration(context.Background(), "smtp.password")
		require.NoError(t, err)
		require.Equal(t, secret, stored.Value, "PUT still sets the secret")
		// A row an admin wrote with plain SQL under any secret-looking name.
		require.NoError(t, st.Admin().SetConfiguration(context.Background(), &models.Configuration{Name: "api.token", Value: "tok-in-table"}))
		require.NotContains(t, b.call("GET", path, "").Body.String(), "tok-in-table")
		require.NotContains(t, b.call("GET", path+"/api.token", "").Body.String(), "tok-in-table")

		b.fails(400, "name", "did you mean taskengine.pool_size?", "PUT", path+"/taskengine.poolsize", `{"value":"8"}`)
		b.fails(400, "name", "taskengine.poolsize: not a configuration key", "PUT", path+"/taskengine.poolsize", `{"value":"8"}`)
		for _, k := range []string{"node.id", "api.token", "api.addr", "database.dsn", "database.driver"} {
			b.fails(400, "name", "only in the configuration file or by "+configs.EnvName(k), "PUT", path+"/"+k, `{"value":"x"}`)
		}
		b.fails(400, "value", "between 0 and 36500", "PUT", path+"/retention_days", `{"value":"200000"}`)
		rec := b.call("PUT", path+"/smtp.password", `{"value":"bad
secret-with-newline"}`)
		require.Equal(t, 400, rec.Code)
		require.NotContains(t, rec.Body.String(), "secret-with-newline")
		// Checked with the other rows: smtp.host needs smtp.from, set first.
		b.fails(400, "value", "smtp.from: required", "PUT", path+"/smtp.host", `{"value":"mail.example.com"}`)
		b.ok(200, "PUT", path+"/smtp.from", `{"value":"chime@example.com"}`)
		b.ok(200, "PUT", path+"/smtp.host", `{"value":"mail.example.com"}`)
	})
}

func TestStartStop(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.SQLite)
	log, _ := test.NewNullLogger()
	srv, err := New(Config{Store: st, Addr: "127.0.0.1:0", Token: "t", Logger: log})
	require.NoError(t, err)
	require.NoError(t, srv.Stop(context.Background()), "stop before start is harmless")
	ctx := context.Background()
	require.NoError(t, srv.Start(ctx))
	require.NoError(t, srv.Start(ctx), "start twice is a no-op")
	resp, err := http.Get("http://" + srv.Addr() + "/healthz")
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.NoError(t, srv.Stop(ctx))
	require.NoError(t, srv.Stop(ctx))
	require.Empty(t, srv.Addr())
}

func TestTokenRequiredOffLoopback(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.SQLite)
	log, hook := test.NewNullLogger()
	for _, addr := range []string{":8080", "0.0.0.0:8080", "192.0.2.1:8080", "example.com:80"} {
		_, err := New(Config{Store: st, Addr: addr, Logger: log})
		require.ErrorContains(t, err, "api.token is empty", addr)
		_, err = New(Config{Store: st, Addr: addr, Token: "t", Logger: log})
		require.NoError(t, err, addr)
	}
	for _, addr := range []string{"127.0.0.1:8080", "[::1]:8080", "localhost:8080", ""} {
		hook.Reset()
		srv, err := New(Config{Store: st, Addr: addr, Logger: log})
		require.NoError(t, err, addr)
		require.Equal(t, logrus.WarnLevel, hook.LastEntry().Level)
		// Without a token the API is open, on loopback only.
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/nodes", nil))
		require.Equal(t, 200, rec.Code)
	}
	_, err := New(Config{Store: st, Addr: "no-port"})
	require.ErrorContains(t, err, "api.addr")
	_, err = New(Config{})
	require.ErrorContains(t, err, "Store is required")
}
