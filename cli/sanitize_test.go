package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// hostileAPI answers like a chime API whose rows were written by someone
// who wants to rewrite the admin's terminal: a job's error, a log line or
// a node id may hold any bytes a task or plain SQL put there.
func hostileAPI(t *testing.T) string {
	t.Helper()
	const esc = `\u001b]0;owned\u0007\u001b[2J\u001b[31m\r\u009b1A\u007f`
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/jobs/1", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"id":1,"status":"failed","error":"boom` + esc + `","result":{"k":"` + esc + `"}}`))
	})
	mux.HandleFunc("GET /api/v1/jobs/2", func(w http.ResponseWriter, _ *http.Request) {
		// Not even JSON: raw escape bytes, which the printers fall back to showing as is.
		_, _ = w.Write([]byte("{\"error\":\"\x1b[2J\x1b]52;c;Y3VybCBldmlsfHNo\x07\"\x9b"))
	})
	mux.HandleFunc("GET /api/v1/jobs/1/logs", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"items":[{"id":1,"job_id":1,"level":"info` + esc + `","message":"line` + esc + `\ttab","created_at":"2030-01-01T00:00:00Z"}],"next_cursor":"` + esc + `"}`))
	})
	mux.HandleFunc("GET /api/v1/jobs", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"items":[{"id":1,"status":"running` + esc + `","node_id":"n1` + esc + `","scheduled_at":"2030-01-01T00:00:00Z"}],"next_cursor":"c` + esc + `"}`))
	})
	mux.HandleFunc("GET /api/v1/nodes", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"error":"database` + esc + `","field":"f` + esc + `"}`))
	})
	mux.HandleFunc("GET /api/v1/definitions", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte("<html>\x1b[2Jproxy error\x9b</html>"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// requireInert fails when s holds a byte a terminal would act on: C0
// controls other than newline and tab, DEL, or C1 controls (U+0080-U+009F
// encoded, or raw 0x9b, which some terminals take for CSI).
func requireInert(t *testing.T, s string) {
	t.Helper()
	for i, r := range s {
		require.False(t, (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == utf8.RuneError,
			"control %U at %d in %q", r, i, s)
	}
}

func TestCLIOutputStripsControlCharacters(t *testing.T) {
	t.Parallel()
	url := hostileAPI(t)
	for _, args := range [][]string{
		{"job", "show", "1"}, {"job", "show", "1", "-o", "json"}, {"job", "show", "2"}, {"job", "show", "2", "-o", "json"},
		{"job", "logs", "1"}, {"job", "list"}, {"nodes"}, {"definition", "list"},
	} {
		cmd := NewRootCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append(args, "--api-url", url, "--token", cliToken))
		err := cmd.ExecuteContext(context.Background())
		requireInert(t, out.String())
		if err != nil {
			requireInert(t, err.Error())
		}
	}
	// What was stripped stays visible, as an escape, so an admin can tell.
	cmd := NewRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"job", "show", "1", "--api-url", url, "--token", cliToken})
	require.NoError(t, cmd.ExecuteContext(context.Background()))
	require.Contains(t, out.String(), `boom\x1b]0;owned\x07`)
}
