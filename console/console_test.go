package console_test

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/api"
	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/console"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/tasks/builtin"
)

const testToken = "console-test-token-0123456789"

// site is a console and its API on a test server, on a real database.
type site struct {
	t   testing.TB
	st  *store.Store
	srv *httptest.Server
	h   http.Handler
}

func newSite(t testing.TB, st *store.Store, token string) *site {
	t.Helper()
	return newSiteWith(t, st, token, "")
}

// newSiteWith is newSite whose server read its token from tokenFile.
func newSiteWith(t testing.TB, st *store.Store, token, tokenFile string) *site {
	t.Helper()
	reg := tasks.NewRegistry()
	require.NoError(t, builtin.Register(reg))
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	con, err := console.New(st, &console.Config{Registry: reg, Token: token, TokenFile: tokenFile, Logger: log,
		FailedLoginDelay: 10 * time.Millisecond, Version: "test"})
	require.NoError(t, err)
	a, err := api.New(st, &api.Config{Registry: reg, Token: token, Logger: log, Console: con.Handler})
	require.NoError(t, err)
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	return &site{t: t, st: st, srv: srv, h: a.Handler()}
}

// client is a browser without JavaScript: cookies, no redirects followed.
func (s *site) client() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (s *site) get(c *http.Client, path string) (*http.Response, string) {
	s.t.Helper()
	resp, err := c.Get(s.srv.URL + path)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = ioCopy(&b, resp)
	return resp, b.String()
}

func (s *site) post(c *http.Client, path string, form url.Values) (*http.Response, string) {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.srv.URL+path, strings.NewReader(form.Encode()))
	require.NoError(s.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	// What a browser sends on a same-origin form post.
	req.Header.Set("Origin", s.srv.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := c.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = ioCopy(&b, resp)
	return resp, b.String()
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t testing.TB, body string) string {
	t.Helper()
	m := csrfRe.FindStringSubmatch(body)
	require.NotNil(t, m, "page has no CSRF field")
	return m[1]
}

// login logs c in and returns the session's CSRF token.
func (s *site) login(c *http.Client) string {
	s.t.Helper()
	_, body := s.get(c, "/login")
	resp, _ := s.post(c, "/login", url.Values{"csrf": {csrfOf(s.t, body)}, "token": {testToken}, "next": {"/"}})
	require.Equal(s.t, http.StatusSeeOther, resp.StatusCode)
	_, body = s.get(c, "/")
	return csrfOf(s.t, body)
}

// seed writes a definition and a schedule with plain SQL, as an admin
// might, and returns the schedule's id.
func seed(t *testing.T, st *store.Store, name string) (defID, schID int64) {
	t.Helper()
	db := st.DB()
	now := store.DBTime(time.Now())
	require.NoError(t, db.Exec(`INSERT INTO job_definitions (name, task_type, description, default_params, timeout_seconds,
		max_attempts, retry_backoff_seconds, notify_on, notify_emails, created_at, updated_at)
		VALUES (?, 'sleep', '', '{"duration": "10ms"}', 0, 1, 10, 'never', '', ?, ?)`, name+"-def", now, now).Error)
	require.NoError(t, db.Raw(`SELECT id FROM job_definitions WHERE name = ?`, name+"-def").Scan(&defID).Error)
	require.NoError(t, db.Exec(`INSERT INTO schedules (name, job_definition_id, schedule_type, cron_expr, timezone,
		misfire_policy, concurrency, status, status_reason, created_at, updated_at)
		VALUES (?, ?, 'cron', '*/5 * * * *', 'UTC', 'fire_once', 'allow', 'active', '', ?, ?)`, name, defID, now, now).Error)
	require.NoError(t, db.Raw(`SELECT id FROM schedules WHERE name = ?`, name).Scan(&schID).Error)
	return defID, schID
}

func TestNothingButLoginBeforeLogin(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, testToken)
		_, schID := seed(t, st, "secret-nightly")
		c := s.client()
		for _, p := range []string{"/", "/schedules", "/jobs", "/definitions", "/nodes", "/schedules/1", "/jobs/1/log", "/nope"} {
			resp, body := s.get(c, p)
			require.Equal(t, http.StatusSeeOther, resp.StatusCode, p)
			require.True(t, strings.HasPrefix(resp.Header.Get("Location"), "/login?next="), p)
			require.NotContains(t, body, "secret-nightly", p)
		}
		resp, body := s.get(c, "/login")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.NotContains(t, body, "secret-nightly")
		require.Contains(t, body, `type="password"`)
		// A POST without a session changes nothing, CSRF token or not.
		resp, _ = s.post(c, "/schedules/1/pause", url.Values{"csrf": {"x"}})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		sch, err := st.Admin().GetSchedule(context.Background(), schID)
		require.NoError(t, err)
		require.Equal(t, models.ScheduleActive, sch.Status)
	})
}

func TestLoginSessionAndLogout(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, testToken)
		seed(t, st, "nightly")
		c := s.client()
		_, body := s.get(c, "/login")
		csrf := csrfOf(t, body)
		resp, body := s.post(c, "/login", url.Values{"csrf": {csrf}, "token": {"wrong"}})
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		require.Contains(t, body, "not the API token")
		// The login form's CSRF token is checked too.
		resp, _ = s.post(c, "/login", url.Values{"csrf": {"forged"}, "token": {testToken}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode)

		_, body = s.get(c, "/login")
		resp, _ = s.post(c, "/login", url.Values{"csrf": {csrfOf(t, body)}, "token": {testToken}, "next": {"//evil.example/x"}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, "/", resp.Header.Get("Location"), "an off-site next is not followed")
		var sess *http.Cookie
		for _, ck := range resp.Cookies() {
			if ck.Name == "chime_session" {
				sess = ck
			}
		}
		require.NotNil(t, sess)
		require.True(t, sess.HttpOnly)
		require.Equal(t, http.SameSiteStrictMode, sess.SameSite)

		resp, body = s.get(c, "/schedules")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, body, "nightly")
		require.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'self'")
		require.Contains(t, resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'")
		require.NotContains(t, resp.Header.Get("Content-Security-Policy"), "unsafe-inline")
		require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"))
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))

		// Logging in again makes a new session, never the old one.
		c2 := s.client()
		s.login(c2)
		require.NotEqual(t, sess.Value, c2.Jar.Cookies(mustURL(s.srv.URL))[0].Value)

		resp, _ = s.post(c, "/logout", url.Values{"csrf": {csrfOf(t, body)}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		resp, body = s.get(c, "/schedules")
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.NotContains(t, body, "nightly")
		// A copy of the logged-out cookie is dead too.
		c3 := s.client()
		c3.Jar.SetCookies(mustURL(s.srv.URL), []*http.Cookie{{Name: "chime_session", Value: sess.Value}})
		resp, _ = s.get(c3, "/schedules")
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	})
}

func TestFormsNeedTheSessionsCSRFToken(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, testToken)
		_, schID := seed(t, st, "nightly")
		c := s.client()
		csrf := s.login(c)
		other := s.login(s.client())
		path := "/schedules/" + itoa(schID) + "/pause"
		for _, bad := range []string{"", "forged", other} {
			resp, _ := s.post(c, path, url.Values{"csrf": {bad}})
			require.Equal(t, http.StatusForbidden, resp.StatusCode, "csrf %q", bad)
		}
		// A cross-site post with the right token still fails: the API's
		// cross-origin protection covers the console.
		req, _ := http.NewRequest(http.MethodPost, s.srv.URL+path, strings.NewReader(url.Values{"csrf": {csrf}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		req.Header.Set("Origin", "https://evil.example")
		resp, err := c.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		sch, err := st.Admin().GetSchedule(context.Background(), schID)
		require.NoError(t, err)
		require.Equal(t, models.ScheduleActive, sch.Status)

		resp, _ = s.post(c, path, url.Values{"csrf": {csrf}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		sch, err = st.Admin().GetSchedule(context.Background(), schID)
		require.NoError(t, err)
		require.Equal(t, models.SchedulePaused, sch.Status)
	})
}

func TestHostileOutputIsEscaped(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, testToken)
		defID, _ := seed(t, st, "nightly")
		ctx := context.Background()
		j := &models.Job{JobDefinitionID: defID, ScheduledAt: time.Now(), RunAt: time.Now(), MaxAttempts: 1}
		require.NoError(t, st.Admin().InsertJob(ctx, j, `<img src=x onerror=alert(1)>`))
		const evil = `<script>alert("pwned")</script>`
		require.NoError(t, st.DB().Exec(`UPDATE jobs SET status = 'failed', error = ?, result = ?, finished_at = ? WHERE id = ?`,
			evil, evil, store.DBTime(time.Now()), j.ID).Error)
		c := s.client()
		s.login(c)
		for _, p := range []string{"/jobs/" + itoa(j.ID), "/"} {
			resp, body := s.get(c, p)
			require.Equal(t, http.StatusOK, resp.StatusCode, p)
			require.NotContains(t, body, evil, p)
			require.NotContains(t, body, "<img src=x", p)
			require.Contains(t, body, "&lt;script&gt;", p)
		}
		resp, body := s.get(c, "/jobs/"+itoa(j.ID)+"/log")
		require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		require.NotContains(t, body, "<img")
	})
}

func TestScheduleFormShowsTheAPIsFieldError(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, testToken)
		defID, _ := seed(t, st, "nightly")
		c := s.client()
		csrf := s.login(c)
		form := url.Values{"csrf": {csrf}, "name": {"hourly"}, "job_definition_id": {itoa(defID)}, "schedule_type": {"cron"},
			"cron_expr": {"61 * * * *"}, "timezone": {"UTC"}, "misfire_policy": {"fire_once"}, "concurrency": {"allow"}, "status": {"active"}}
		resp, body := s.post(c, "/schedules/new", form)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
		require.Regexp(t, `(?s)data-field="cron_expr".*class="field-error" id="e-cron_expr">cron_expr: `, body)
		require.Contains(t, body, `value="hourly"`, "the form keeps what was typed")

		// The preview answers the same error, then the fire times.
		resp, body = s.post(c, "/schedules/preview", form)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, body, `"field":"cron_expr"`)
		form.Set("cron_expr", "0 * * * *")
		_, body = s.post(c, "/schedules/preview", form)
		require.Regexp(t, `"fires":\["[0-9-]+T[0-9:]+Z"`, body)

		resp, _ = s.post(c, "/schedules/new", form)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		rows, err := st.Admin().ListSchedules(context.Background(), &chimedb.AdminListParams{Name: "hourly", Limit: 1})
		require.NoError(t, err)
		require.Len(t, rows, 1)
		require.Equal(t, "0 * * * *", *rows[0].CronExpr)
	})
}

func TestEveryPageRenders(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, testToken)
		defID, schID := seed(t, st, "nightly")
		j := &models.Job{ScheduleID: &schID, JobDefinitionID: defID, ScheduledAt: time.Now(), RunAt: time.Now(), MaxAttempts: 1}
		require.NoError(t, st.Admin().InsertJob(context.Background(), j, "hello"))
		c := s.client()
		s.login(c)
		for _, p := range []string{"/", "/schedules", "/schedules?q=nig&status=active", "/schedules/" + itoa(schID),
			"/schedules/new", "/schedules/" + itoa(schID) + "/edit", "/schedules/" + itoa(schID) + "/delete",
			"/jobs", "/jobs?status=pending&definition=" + itoa(defID) + "&since=1h", "/jobs?schedule=" + itoa(schID), "/jobs/" + itoa(j.ID),
			"/definitions", "/definitions/new", "/definitions/" + itoa(defID) + "/edit", "/definitions/" + itoa(defID) + "/delete", "/nodes"} {
			resp, body := s.get(c, p)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", p, body)
		}
		resp, _ := s.get(c, "/schedules/999999")
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		resp, _ = s.get(c, "/static/app.css")
		require.Equal(t, http.StatusOK, resp.StatusCode)
	})
}

func TestNoTokenOpensOnLoopbackOnly(t *testing.T) {
	st := testdb.Open(t, store.SQLite)
	s := newSite(t, st, "")
	seed(t, st, "nightly")
	c := s.client()
	resp, body := s.get(c, "/schedules")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, "nightly")
	// The API's Host check guards the console too (DNS rebinding).
	req, _ := http.NewRequest(http.MethodGet, s.srv.URL+"/schedules", nil)
	req.Host = "evil.example"
	resp, err := c.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMisdirectedRequest, resp.StatusCode)
}

// TestLoginRedirectStaysOnSite is finding 5 of issue 22: logged in,
// /login?next=/%09/evil.example/typed answered Location "/\t/evil.example/typed",
// which a browser reads as //evil.example/typed.
func TestLoginRedirectStaysOnSite(t *testing.T) {
	st := testdb.Open(t, store.SQLite)
	s := newSite(t, st, testToken)
	c := s.client()
	s.login(c)
	for next, want := range map[string]string{
		"/%09/evil.example/typed": "/",
		"/%5C/evil.example":       "/",
		"%0D%0A//evil.example":    "/",
		"/jobs%3Fstatus%3Dfailed": "/jobs?status=failed",
	} {
		resp, _ := s.get(c, "/login?next="+next)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, next)
		require.Equal(t, want, resp.Header.Get("Location"), next)
	}
	// The login form's next goes through the same check.
	c = s.client()
	_, body := s.get(c, "/login")
	resp, _ := s.post(c, "/login", url.Values{"csrf": {csrfOf(t, body)}, "token": {testToken}, "next": {"/\t/evil.example/typed"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/", resp.Header.Get("Location"))
}
