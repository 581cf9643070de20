package app

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

const consoleTestToken = "app-console-test-token-0123456789"

// apiURL waits for the node's "api listening" line and returns its URL.
func (e *nodeEnv) apiURL(skip int) string {
	e.t.Helper()
	var addr string
	waitFor(e.t, 30*time.Second, "the API to listen", func() bool {
		seen := 0
		for _, en := range e.hook.AllEntries() {
			if en.Message == "api listening" {
				if seen == skip {
					addr, _ = en.Data["addr"].(string)
					return true
				}
				seen++
			}
		}
		return false
	})
	return "http://" + addr
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// browser is a console client that follows no redirects.
func browser(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func fetch(t *testing.T, c *http.Client, method, u string, form url.Values) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	require.NoError(t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

func csrfIn(t *testing.T, body string) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(body)
	require.NotNil(t, m, "no CSRF field in %s", body)
	return m[1]
}

// TestConsoleLogoutSurvivesRestart is finding 8 of issue 22 on real
// nodes: a cookie logged out before a restart was accepted after it,
// until its 12 h expiry.
func TestConsoleLogoutSurvivesRestart(t *testing.T) {
	t.Parallel()
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			if d == store.Postgres {
				testdb.PostgresServerDSN(t)
			}
			e := newNodeEnv(t, d, 0)
			e.cfg.API.Token = consoleTestToken
			e.cfg.TaskEngine.Enabled = false
			stop := e.serve()
			base := e.apiURL(0)
			c := browser(t)
			_, body := fetch(t, c, "GET", base+"/login", nil)
			resp, _ := fetch(t, c, "POST", base+"/login", url.Values{"csrf": {csrfIn(t, body)}, "token": {consoleTestToken}, "next": {"/"}})
			require.Equal(t, http.StatusSeeOther, resp.StatusCode)
			cookies := c.Jar.Cookies(mustParse(t, base))
			require.Len(t, cookies, 1)
			resp, body = fetch(t, c, "GET", base+"/schedules", nil)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			resp, _ = fetch(t, c, "POST", base+"/logout", url.Values{"csrf": {csrfIn(t, body)}})
			require.Equal(t, http.StatusSeeOther, resp.StatusCode)
			stop()

			e.cfg.Node.ID += "-2"
			e.serve()
			base = e.apiURL(1)
			stolen := browser(t)
			stolen.Jar.SetCookies(mustParse(t, base), cookies)
			resp, _ = fetch(t, stolen, "GET", base+"/schedules", nil)
			require.Equal(t, http.StatusSeeOther, resp.StatusCode, "the logged-out cookie is accepted after the restart")
			require.True(t, strings.HasPrefix(resp.Header.Get("Location"), "/login"))
		})
	}
}

func mustParse(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}

// CHIME_API_TLS_PROXY reaches the console and the API: behind a proxy
// that terminates TLS, the cookies are Secure __Host- ones and answers
// carry HSTS (issue 22, finding 11).
func TestTLSProxySecuresTheConsole(t *testing.T) {
	t.Parallel()
	for _, proxy := range []bool{false, true} {
		e := newNodeEnv(t, store.SQLite, 0)
		e.cfg.API.Token = consoleTestToken
		e.cfg.TaskEngine.Enabled, e.cfg.API.TLSProxy = false, proxy
		stop := e.serve()
		resp, _ := fetch(t, browser(t), "GET", e.apiURL(0)+"/login", nil)
		stop()
		require.Len(t, resp.Cookies(), 1)
		ck := resp.Cookies()[0]
		if proxy {
			require.Equal(t, "max-age=31536000", resp.Header.Get("Strict-Transport-Security"))
			require.Equal(t, "__Host-chime_login_csrf", ck.Name)
			require.True(t, ck.Secure)
		} else {
			require.Empty(t, resp.Header.Get("Strict-Transport-Security"))
			require.Equal(t, "chime_login_csrf", ck.Name)
			require.False(t, ck.Secure)
		}
	}
}
