package api

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/tasks/shell"
	"github.com/chimesched/chime/tasks/sleep"
)

const testToken = "s3cret-token"

// bundle is one test's server over one fresh database.
type bundle struct {
	t   *testing.T
	st  *store.Store
	srv *Server
	h   http.Handler

	mu      sync.Mutex
	changed []int64
	added   int
}

func testRegistry() *tasks.Registry {
	reg := tasks.NewRegistry()
	reg.MustRegister(sleep.Kind, sleep.New)
	reg.MustRegister(shell.Kind, shell.New)
	return reg
}

func setup(t *testing.T, st *store.Store) *bundle {
	t.Helper()
	return setupWith(t, st, nil)
}

// setupWith is setup with a chance to change the configuration.
func setupWith(t *testing.T, st *store.Store, change func(*Config)) *bundle {
	t.Helper()
	log := logrus.New()
	log.SetOutput(io.Discard)
	b := &bundle{t: t, st: st}
	cfg := Config{
		Registry: testRegistry(), Token: testToken, Addr: "127.0.0.1:0", Logger: log, NodeID: "test-node",
		OnSchedulesChanged: func(id int64) { b.mu.Lock(); b.changed = append(b.changed, id); b.mu.Unlock() },
		OnJobsAdded:        func() { b.mu.Lock(); b.added++; b.mu.Unlock() },
		Secrets:            testKeyring(t),
	}
	if change != nil {
		change(&cfg)
	}
	srv, err := New(st, &cfg)
	require.NoError(t, err)
	b.srv, b.h = srv, srv.Handler()
	return b
}

// call sends a request with the test token; body is sent as is.
func (b *bundle) call(method, path, body string) *httptest.ResponseRecorder {
	b.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	req.Header.Set("Authorization", "Bearer "+testToken)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	b.h.ServeHTTP(rec, req)
	return rec
}

// ok sends a request, requires the status, and decodes the body into a map.
func (b *bundle) ok(status int, method, path, body string) map[string]any {
	b.t.Helper()
	rec := b.call(method, path, body)
	require.Equal(b.t, status, rec.Code, "%s %s: %s", method, path, rec.Body.String())
	if rec.Body.Len() == 0 {
		return nil
	}
	var m map[string]any
	require.NoError(b.t, json.Unmarshal(rec.Body.Bytes(), &m), rec.Body.String())
	return m
}

// fails sends a request and requires an error answer with that status and
// field, and a message containing want.
func (b *bundle) fails(status int, field, want, method, path, body string) {
	b.t.Helper()
	rec := b.call(method, path, body)
	require.Equal(b.t, status, rec.Code, "%s %s %s: %s", method, path, body, rec.Body.String())
	var e Error
	require.NoError(b.t, json.Unmarshal(rec.Body.Bytes(), &e), rec.Body.String())
	require.Equal(b.t, field, e.Field, "field of %s", rec.Body.String())
	require.Contains(b.t, e.Error, want)
}

func id(m map[string]any) int64 { return int64(m["id"].(float64)) }

func items(m map[string]any) []any { return m["items"].([]any) }

// definition creates a sleep definition and returns its id.
func (b *bundle) definition(name string) int64 {
	b.t.Helper()
	return id(b.ok(201, "POST", "/api/v1/definitions", `{"name":"`+name+`","task_type":"sleep","default_params":{"duration":"10ms"}}`))
}
