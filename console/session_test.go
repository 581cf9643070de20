package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/api"
	"github.com/chimesched/chime/console"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/tasks/builtin"
)

// node is one console process on the database cfg names: its own store,
// console and API, as a node of the cluster has them.
func node(t *testing.T, cfg store.Config, now func() time.Time) (*site, func()) {
	t.Helper()
	st, err := store.Open(context.Background(), cfg)
	require.NoError(t, err)
	reg := tasks.NewRegistry()
	require.NoError(t, builtin.Register(reg))
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	con, err := console.New(st, &console.Config{Registry: reg, Token: testToken, Logger: log,
		FailedLoginDelay: 10 * time.Millisecond, Now: now})
	require.NoError(t, err)
	a, err := api.New(st, &api.Config{Registry: reg, Token: testToken, Logger: log, Console: con.Handler})
	require.NoError(t, err)
	s := &site{t: t, st: st}
	s.srv, s.h = httptest.NewServer(a.Handler()), a.Handler()
	stop := func() { s.srv.Close(); _ = st.Close() }
	t.Cleanup(stop)
	return s, stop
}

// withSession is a fresh browser that carries only the cookie value.
func (s *site) withSession(value string) *http.Client {
	c := s.client()
	c.Jar.SetCookies(mustURL(s.srv.URL), []*http.Cookie{{Name: "chime_session", Value: value}})
	return c
}

func sessionCookie(t *testing.T, s *site, c *http.Client) string {
	t.Helper()
	for _, ck := range c.Jar.Cookies(mustURL(s.srv.URL)) {
		if ck.Name == "chime_session" {
			return ck.Value
		}
	}
	t.Fatal("no session cookie")
	return ""
}

// forEachDatabase runs fn once per dialect with a fresh, migrated
// database that fn's nodes open themselves.
func forEachDatabase(t *testing.T, fn func(t *testing.T, cfg store.Config)) {
	for _, d := range testdb.Dialects {
		t.Run(string(d), func(t *testing.T) { fn(t, testdb.MigratedConfig(t, d)) })
	}
}

// TestLogoutSurvivesRestartAndReachesEveryNode is finding 8 of issue 22:
// a logged-out cookie was refused only by the node that logged it out,
// and by that node only until it restarted.
func TestLogoutSurvivesRestartAndReachesEveryNode(t *testing.T) {
	forEachDatabase(t, func(t *testing.T, cfg store.Config) {
		mig, err := store.Open(context.Background(), cfg)
		require.NoError(t, err)
		_, err = mig.Migrate(context.Background())
		require.NoError(t, err)
		require.NoError(t, mig.Close())

		clk := clockwork.NewFakeClock()
		a, stopA := node(t, cfg, clk.Now)
		b, _ := node(t, cfg, clk.Now)
		c := a.client()
		csrf := a.login(c)
		value := sessionCookie(t, a, c)
		resp, _ := b.get(b.withSession(value), "/schedules")
		require.Equal(t, http.StatusOK, resp.StatusCode, "the other node accepts the session")
		other := a.client()
		a.login(other) // a session that stays logged in
		otherValue := sessionCookie(t, a, other)

		resp, _ = a.post(c, "/logout", url.Values{"csrf": {csrf}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		resp, _ = b.get(b.withSession(value), "/schedules")
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, "the other node still accepts the logged-out cookie")

		// A restart of the node that logged it out forgets nothing.
		stopA()
		a, _ = node(t, cfg, clk.Now)
		resp, _ = a.get(a.withSession(value), "/schedules")
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, "the restarted node accepts the logged-out cookie")
		require.Equal(t, "/login?next=%2Fschedules", resp.Header.Get("Location"))
		resp, _ = a.get(a.withSession(otherValue), "/schedules")
		require.Equal(t, http.StatusOK, resp.StatusCode, "a session not logged out survives the restart")

		// Revocations go once their cookies have expired.
		var n int64
		require.NoError(t, a.st.DB().Raw(`SELECT COUNT(*) FROM console_revocations`).Scan(&n).Error)
		require.EqualValues(t, 1, n)
		clk.Advance(console.DefaultSessionTTL + time.Minute)
		c = a.client()
		csrf = a.login(c)
		resp, _ = a.post(c, "/logout", url.Values{"csrf": {csrf}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.NoError(t, a.st.DB().Raw(`SELECT COUNT(*) FROM console_revocations`).Scan(&n).Error)
		require.EqualValues(t, 1, n, "one revocation, the new one")
		require.NoError(t, a.st.DB().Raw(`SELECT COUNT(*) FROM console_revocations WHERE expires_at < ?`, clk.Now().Unix()).Scan(&n).Error)
		require.Zero(t, n, "the expired revocation is still there")
	})
}

// TestSecureCookiesBehindTLSProxy is finding 11 of issue 22: behind a
// proxy that terminates TLS the session cookie had no Secure flag, and
// there was no way to ask for it.
func TestSecureCookiesBehindTLSProxy(t *testing.T) {
	st := testdb.Open(t, store.SQLite)
	reg := tasks.NewRegistry()
	require.NoError(t, builtin.Register(reg))
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	con, err := console.New(st, &console.Config{Registry: reg, Token: testToken, Logger: log, Secure: true})
	require.NoError(t, err)
	a, err := api.New(st, &api.Config{Registry: reg, Token: testToken, Logger: log, Console: con.Handler, HSTS: true})
	require.NoError(t, err)
	// The proxy's side: HTTPS to the browser.
	srv := httptest.NewTLSServer(a.Handler())
	t.Cleanup(srv.Close)
	s := &site{t: t, st: st, srv: srv, h: a.Handler()}
	c := srv.Client()
	c.Jar = s.client().Jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	resp, body := s.get(c, "/login")
	require.Equal(t, "max-age=31536000", resp.Header.Get("Strict-Transport-Security"))
	for _, ck := range resp.Cookies() {
		require.Equal(t, "__Host-chime_login_csrf", ck.Name)
		require.True(t, ck.Secure)
	}
	resp, _ = s.post(c, "/login", url.Values{"csrf": {csrfOf(t, body)}, "token": {testToken}, "next": {"/"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	var names []string
	for _, ck := range resp.Cookies() {
		names = append(names, ck.Name)
		if ck.Name == "__Host-chime_session" {
			// What the __Host- prefix demands, or browsers drop the cookie.
			require.True(t, ck.Secure)
			require.Equal(t, "/", ck.Path)
			require.Empty(t, ck.Domain)
			require.True(t, ck.HttpOnly)
		}
	}
	require.Contains(t, names, "__Host-chime_session")
	resp, body = s.get(c, "/schedules")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "max-age=31536000", resp.Header.Get("Strict-Transport-Security"))
	resp, _ = s.post(c, "/logout", url.Values{"csrf": {csrfOf(t, body)}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp, _ = s.get(c, "/schedules")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	// The API's answers carry HSTS too.
	resp, _ = s.get(c, "/healthz")
	require.Equal(t, "max-age=31536000", resp.Header.Get("Strict-Transport-Security"))

	// Off (plain HTTP, the default): no prefix, no Secure, no HSTS.
	plain := newSite(t, st, testToken)
	pc := plain.client()
	resp, _ = plain.get(pc, "/login")
	require.Empty(t, resp.Header.Get("Strict-Transport-Security"))
	for _, ck := range resp.Cookies() {
		require.Equal(t, "chime_login_csrf", ck.Name)
		require.False(t, ck.Secure)
	}
}
