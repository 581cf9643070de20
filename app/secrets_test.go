package app

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/chimesched/chime/internal/syncbuf"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/notify/smtptest"
	"github.com/chimesched/chime/store"
)

// TestSecretsAppearNowhere runs a shell job whose env comes from a secret
// and an httpcall job whose Authorization header does (against a loopback
// server that checks it got the value and echoes it back), and a job
// whose secret is missing, on a real node; then it reads everything chime
// wrote or answered: every table, the API's answers, the console's pages,
// the node's log at debug level and the emails (a real SMTP server). The
// values appear in none of them, and each job got its value.
func TestSecretsAppearNowhere(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		nonce := make([]byte, 6)
		_, _ = rand.Read(nonce)
		tag := hex.EncodeToString(nonce)
		shellValue := "grep-pw-" + tag + "\nsecond-line-" + tag
		token := "grep-token-" + tag
		needles := []string{shellValue, "grep-pw-" + tag, "second-line-" + tag, token}

		smtp := smtptest.New(t)
		e := newNodeEnv(t, d, smtp.Port)
		var nodeLog syncbuf.Buffer
		e.log.SetOutput(&nodeLog)
		e.log.SetFormatter(&logrus.JSONFormatter{})
		e.log.SetLevel(logrus.DebugLevel)
		e.cfg.API.Addr = freeAddr(t)
		e.cfg.API.Token = "grep-test-bootstrap-token"
		e.cfg.Secrets.Key = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{42}, 32))
		var received atomic.Bool
		target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got := r.Header.Get("Authorization")
			received.Store(got == "Bearer "+token)
			fmt.Fprintf(w, "you sent %s", got) // an echo the job's result must mask
		}))
		t.Cleanup(target.Close)
		e.serve()

		c := &apiClient{t: t, base: "http://" + e.cfg.API.Addr, token: e.cfg.API.Token}
		c.do(201, "POST", "/api/v1/secrets", map[string]any{"name": "shell-pw", "value": shellValue})
		c.do(201, "POST", "/api/v1/secrets", map[string]any{"name": "api-token", "value": "Bearer " + token})
		out := filepath.Join(t.TempDir(), "env")
		def := func(name, taskType string, params any, attempts int) int64 {
			m := c.do(201, "POST", "/api/v1/definitions", map[string]any{"name": name, "task_type": taskType, "default_params": params,
				"max_attempts": attempts, "notify_on": "always", "notify_emails": "ops@example.com"})
			return int64(m["id"].(float64))
		}
		shellDef := def("grep-shell", "shell", map[string]any{
			"command": `printf '%s\n' "$PW"; printf '%s' "$PW" >&2; printf '%s' "$PW" > "$OUT"`,
			"env":     map[string]any{"PW": map[string]any{"$secret": "shell-pw"}, "OUT": out}}, 1)
		httpDef := def("grep-http", "httpcall", map[string]any{"url": target.URL,
			"headers": map[string]any{"Authorization": map[string]any{"$secret": "api-token"}}}, 1)
		missingDef := def("grep-missing", "shell", map[string]any{"command": "true",
			"env": map[string]any{"X": map[string]any{"$secret": "no-such-secret"}}}, 5)
		var jobs []int64
		for _, id := range []int64{shellDef, httpDef, missingDef} {
			jobs = append(jobs, int64(c.do(201, "POST", "/api/v1/jobs", map[string]any{"job_definition_id": id})["id"].(float64)))
		}
		final := map[int64]map[string]any{}
		waitFor(t, 60*time.Second, "the three jobs to finish", func() bool {
			for _, id := range jobs {
				j := c.do(200, "GET", fmt.Sprintf("/api/v1/jobs/%d", id), nil)
				if s := j["status"]; s != "succeeded" && s != "failed" {
					return false
				}
				final[id] = j
			}
			return true
		})
		require.Equal(t, "succeeded", final[jobs[0]]["status"], final[jobs[0]])
		require.Equal(t, "succeeded", final[jobs[1]]["status"], final[jobs[1]])
		require.Equal(t, "failed", final[jobs[2]]["status"])
		require.EqualValues(t, 1, final[jobs[2]]["attempt"], "a missing secret is not retried")
		require.Contains(t, final[jobs[2]]["error"], `secret does not exist: "no-such-secret"`)
		got, err := os.ReadFile(out)
		require.NoError(t, err)
		require.Equal(t, shellValue, string(got), "the shell job's env had the value")
		require.True(t, received.Load(), "the loopback server got the Authorization header")
		require.Contains(t, final[jobs[1]]["result"], "you sent ********")
		require.True(t, smtp.WaitAttempts(3, 30*time.Second), "three emails")

		hay := map[string]string{}
		for _, p := range []string{"/api/v1/jobs", "/api/v1/definitions", "/api/v1/notifications", "/api/v1/secrets", "/api/v1/schedules"} {
			hay["api "+p] = c.raw("GET", p)
		}
		for _, id := range jobs {
			hay[fmt.Sprintf("api job %d", id)] = c.raw("GET", fmt.Sprintf("/api/v1/jobs/%d", id))
			hay[fmt.Sprintf("api logs %d", id)] = c.raw("GET", fmt.Sprintf("/api/v1/jobs/%d/logs", id))
		}
		for _, id := range []int64{shellDef, httpDef, missingDef} {
			hay[fmt.Sprintf("api definition %d", id)] = c.raw("GET", fmt.Sprintf("/api/v1/definitions/%d", id))
		}
		require.Contains(t, hay[fmt.Sprintf("api logs %d", jobs[0])], "********", "the shell job's echo is in its log, masked")
		for path, page := range consolePages(t, c.base, e.cfg.API.Token, jobs, []int64{shellDef, httpDef, missingDef}) {
			hay["console "+path] = page
		}
		for table, rows := range dumpTables(t, e.st.DB()) {
			hay["table "+table] = rows
		}
		for i, m := range smtp.Messages() {
			hay[fmt.Sprintf("email %d", i)] = string(m.Raw) + "\n" + m.Text()
		}
		hay["node log"] = nodeLog.String()
		require.Contains(t, hay["node log"], `"level":"debug"`, "the node logged at debug level")
		for where, text := range hay {
			for _, n := range needles {
				require.NotContains(t, text, n, "a secret's value in %s", where)
			}
		}
		t.Logf("%d places read, %d bytes", len(hay), len(strings.Join(mapValues(hay), "")))
	})
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

type apiClient struct {
	t           *testing.T
	base, token string
}

func (c *apiClient) send(method, path string, body any) (int, []byte) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(c.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	require.NoError(c.t, err)
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	return resp.StatusCode, b
}

func (c *apiClient) do(want int, method, path string, body any) map[string]any {
	c.t.Helper()
	code, b := c.send(method, path, body)
	require.Equal(c.t, want, code, "%s %s: %s", method, path, b)
	var m map[string]any
	require.NoError(c.t, json.Unmarshal(b, &m))
	return m
}

func (c *apiClient) raw(method, path string) string {
	c.t.Helper()
	code, b := c.send(method, path, nil)
	require.Equal(c.t, http.StatusOK, code, "%s %s: %s", method, path, b)
	return string(b)
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// consolePages logs in to the console as the bootstrap admin and returns
// the pages that show jobs, their logs, definitions and secrets.
func consolePages(t *testing.T, base, token string, jobs, defs []int64) map[string]string {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	hc := &http.Client{Jar: jar}
	get := func(path string) string {
		resp, err := hc.Get(base + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, b)
		return string(b)
	}
	m := csrfInput.FindStringSubmatch(get("/login"))
	require.Len(t, m, 2)
	resp, err := hc.PostForm(base+"/login", url.Values{"csrf": {m[1]}, "token": {token}})
	require.NoError(t, err)
	resp.Body.Close()
	pages := map[string]string{}
	paths := []string{"/", "/jobs", "/definitions", "/secrets", "/nodes"}
	for _, id := range jobs {
		paths = append(paths, fmt.Sprintf("/jobs/%d", id), fmt.Sprintf("/jobs/%d/log", id))
	}
	for _, id := range defs {
		paths = append(paths, fmt.Sprintf("/definitions/%d", id))
	}
	for _, p := range paths {
		pages[p] = get(p)
	}
	require.Contains(t, pages["/secrets"], "shell-pw", "logged in: the secrets page lists the names")
	return pages
}

// dumpTables reads every row of every table of the schema, as text.
func dumpTables(t *testing.T, db *gorm.DB) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range models.All() {
		stmt := &gorm.Statement{DB: db}
		require.NoError(t, stmt.Parse(m))
		rows, err := db.Raw("SELECT * FROM " + stmt.Schema.Table).Rows()
		require.NoError(t, err)
		cols, err := rows.Columns()
		require.NoError(t, err)
		var b strings.Builder
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			require.NoError(t, rows.Scan(ptrs...))
			for i, v := range vals {
				if bs, ok := v.([]byte); ok {
					v = string(bs)
				}
				fmt.Fprintf(&b, "%s=%v\t", cols[i], v)
			}
			b.WriteString("\n")
		}
		require.NoError(t, rows.Err())
		require.NoError(t, rows.Close())
		out[stmt.Schema.Table] = b.String()
	}
	require.Contains(t, out["secrets"], "shell-pw")
	require.Contains(t, out["job_logs"]+out["jobs"], "********")
	return out
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// TestSecretsBadKeyStopsStart: a key that does not parse stops the node
// at start with an error that names the setting and not the key.
func TestSecretsBadKeyStopsStart(t *testing.T) {
	t.Parallel()
	e := newNodeEnv(t, store.SQLite, 0)
	cfg := e.cfg
	cfg.Secrets.Key = "not-a-key-at-all"
	err := Serve(t.Context(), &cfg, Options{NoMigrate: true, Logger: e.log})
	require.ErrorContains(t, err, "CHIME_SECRETS_KEY")
	require.NotContains(t, err.Error(), "not-a-key-at-all")
}
