package api

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// openServer is the tokenless loopback server of a default install before
// auth became the default: the setting a browser on the same host can reach.
func openServer(t *testing.T, st *store.Store) http.Handler {
	t.Helper()
	log := logrus.New()
	log.SetOutput(io.Discard)
	srv, err := New(st, &Config{Registry: testRegistry(), Addr: "127.0.0.1:8080", Logger: log})
	require.NoError(t, err)
	return srv.Handler()
}

func send(h http.Handler, method, host, path, body string, header map[string]string) *httptest.ResponseRecorder {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	req.Host = host
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func errorOf(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	var e Error
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e), rec.Body.String())
	require.NotEmpty(t, e.Error)
	return e.Error
}

// TestCrossSitePostRefused is finding 1 of the hardening issue: a page on
// another site made the admin's browser create a shell definition and run
// it, with a text/plain body (a "simple" request, sent without preflight).
func TestCrossSitePostRefused(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.SQLite)
	h := openServer(t, st)
	const def = `{"name":"pwn","task_type":"shell","default_params":{"command":"id"}}`
	for _, hdr := range []map[string]string{
		{"Content-Type": "text/plain", "Origin": "https://evil.example"},
		{"Content-Type": "text/plain", "Sec-Fetch-Site": "cross-site"},
		{"Content-Type": "application/json", "Origin": "https://evil.example"},
		{"Content-Type": "application/x-www-form-urlencoded", "Sec-Fetch-Site": "same-site"},
	} {
		rec := send(h, "POST", "127.0.0.1:8080", "/api/v1/definitions", def, hdr)
		require.Equal(t, http.StatusForbidden, rec.Code, "%v: %s", hdr, rec.Body.String())
		require.Contains(t, errorOf(t, rec), "cross-origin")
		rec = send(h, "POST", "127.0.0.1:8080", "/api/v1/jobs", `{"job_definition_id":1}`, hdr)
		require.Equal(t, http.StatusForbidden, rec.Code, "%v", hdr)
		rec = send(h, "POST", "127.0.0.1:8080", "/api/v1/jobs/1/stop", "", hdr)
		require.Equal(t, http.StatusForbidden, rec.Code, "an empty POST is state-changing too")
	}
	var n int64
	require.NoError(t, st.DB().Model(&models.JobDefinition{}).Count(&n).Error)
	require.Zero(t, n, "nothing was written")

	// A body that is not declared JSON is refused even without browser
	// headers: it is what a form or a text/plain fetch sends.
	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx"} {
		rec := send(h, "POST", "127.0.0.1:8080", "/api/v1/definitions", def, map[string]string{"Content-Type": ct})
		require.Equal(t, http.StatusUnsupportedMediaType, rec.Code, "%q", ct)
		require.Contains(t, errorOf(t, rec), "Content-Type: application/json")
	}
	// What the CLI and curl send still works, same-origin browser requests too.
	rec := send(h, "POST", "127.0.0.1:8080", "/api/v1/definitions", def, map[string]string{"Content-Type": "application/json; charset=utf-8"})
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	rec = send(h, "PATCH", "localhost:8080", "/api/v1/definitions/1", `{"description":"x"}`,
		map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "same-origin", "Origin": "http://localhost:8080"})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	// Reads stay open to safe methods, and every answer forbids sniffing.
	rec = send(h, "GET", "127.0.0.1:8080", "/api/v1/definitions", "", map[string]string{"Sec-Fetch-Site": "cross-site"})
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"))
}

// TestRebindingHostRefused is the DNS rebinding half of finding 1: a page
// whose name now resolves to 127.0.0.1 talks to the API same-origin, so
// only the Host header tells it apart.
func TestRebindingHostRefused(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.SQLite)
	h := openServer(t, st)
	for _, host := range []string{"rebind.evil.example", "rebind.evil.example:8080", "127.0.0.1.evil.example", "localhost.evil.example:8080", "10.0.0.1:8080", ""} {
		for _, path := range []string{"/api/v1/nodes", "/metrics", "/readyz"} {
			rec := send(h, "GET", host, path, "", nil)
			require.Equal(t, http.StatusMisdirectedRequest, rec.Code, "Host %q %s", host, path)
			require.Contains(t, errorOf(t, rec), "Host")
			require.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"))
		}
	}
	for _, host := range []string{"127.0.0.1:8080", "localhost:8080", "LOCALHOST", "[::1]:8080", "::1", "127.0.0.1", "127.1.2.3:8080"} {
		rec := send(h, "GET", host, "/api/v1/nodes", "", nil)
		require.Equal(t, http.StatusOK, rec.Code, "Host %q: %s", host, rec.Body.String())
	}
	// With a token the Host is not the defence (a proxy may send any), the token is.
	b := setup(t, st)
	rec := send(b.h, "GET", "chime.example.com", "/api/v1/nodes", "", map[string]string{"Authorization": "Bearer " + testToken})
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"))
}

// TestAmbiguousKeysRefused: a body with a key twice, or a field name in
// another case, means one thing to encoding/json (last one wins, any case
// matches) and maybe another to a proxy or a reviewer; it is refused.
func TestAmbiguousKeysRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, testdb.Open(t, store.SQLite))
	const path = "/api/v1/definitions"
	b.fails(400, "name", `duplicate key "name"`, "POST", path, `{"name":"ok","task_type":"sleep","name":"other"}`)
	b.fails(400, "Name", `differs only in case from field "name"`, "POST", path, `{"Name":"ok","task_type":"sleep"}`)
	b.fails(400, "default_params.command", `duplicate key "default_params.command"`, "POST", path,
		`{"name":"ok","task_type":"shell","default_params":{"command":"echo hi","command":"rm -rf ~"}}`)
	def := itoa(b.definition("d"))
	b.fails(400, "params.duration", "duplicate key", "POST", "/api/v1/jobs", `{"job_definition_id":`+def+`,"params":{"duration":"1s","duration":"2s"}}`)
	b.fails(400, "job_definition_ID", "differs only in case", "POST", "/api/v1/jobs", `{"job_definition_ID":`+def+`}`)
	b.fails(400, "cron_expr", "duplicate key", "POST", "/api/v1/schedules",
		`{"name":"s","job_definition_id":`+def+`,"schedule_type":"cron","cron_expr":"@daily","cron_expr":"* * * * *"}`)
}
