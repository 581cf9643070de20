package api

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

// authServer is a server with testToken whose log lines land in the hook.
func authServer(t *testing.T, st *store.Store) (*Server, *test.Hook, *clockwork.FakeClock) {
	t.Helper()
	log, hook := test.NewNullLogger()
	log.SetLevel(logrus.InfoLevel)
	srv, err := New(st, &Config{Registry: testRegistry(), Token: testToken, Addr: "127.0.0.1:0", Logger: log})
	require.NoError(t, err)
	clock := clockwork.NewFakeClockAt(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	srv.now = clock.Now
	return srv, hook, clock
}

func authCall(h http.Handler, remote, auth string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", "/api/v1/jobs", nil)
	req.RemoteAddr = remote
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func authLines(hook *test.Hook) []*logrus.Entry {
	var out []*logrus.Entry
	for _, e := range hook.AllEntries() {
		if strings.Contains(e.Message, "authentication") {
			out = append(out, e)
		}
	}
	return out
}

// TestFailedAuthLoggedAndLimited is finding 9 of issue 22: 300 wrong
// bearer tokens on one connection were all answered 401 at once, and
// logged only at debug level.
func TestFailedAuthLoggedAndLimited(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.SQLite)
	srv, hook, clock := authServer(t, st)
	h := srv.Handler()
	const attacker = "203.0.113.7:40000"
	codes := map[int]int{}
	for i := range 300 {
		rec := authCall(h, attacker, fmt.Sprintf("Bearer guess-%03d", i))
		codes[rec.Code]++
		if rec.Code == http.StatusTooManyRequests {
			require.Equal(t, "1", rec.Header().Get("Retry-After"))
		}
	}
	require.Equal(t, map[int]int{http.StatusUnauthorized: authFailBurst, http.StatusTooManyRequests: 300 - authFailBurst}, codes)
	lines := authLines(hook)
	require.NotEmpty(t, lines)
	require.LessOrEqual(t, len(lines), authFailBurst+1, "a flood floods the log")
	for _, e := range lines {
		require.LessOrEqual(t, e.Level, logrus.InfoLevel, "info or more urgent, not debug")
		require.Equal(t, "203.0.113.7", e.Data["remote"])
		require.Equal(t, "GET /api/v1/jobs", e.Data["route"])
		s, err := e.String()
		require.NoError(t, err)
		require.NotContains(t, s, "guess-", "no token material in the log")
	}

	// Blocked, the address is not even asked for its token; another
	// address is not affected.
	require.Equal(t, http.StatusTooManyRequests, authCall(h, attacker, "Bearer "+testToken).Code)
	require.Equal(t, http.StatusOK, authCall(h, "198.51.100.2:1234", "Bearer "+testToken).Code)
	// One more try a second later, and no more.
	clock.Advance(authFailEvery)
	require.Equal(t, http.StatusUnauthorized, authCall(h, attacker, "Bearer guess-again").Code)
	require.Equal(t, http.StatusTooManyRequests, authCall(h, attacker, "Bearer guess-again").Code)
	clock.Advance(authFailEvery)
	require.Equal(t, http.StatusOK, authCall(h, attacker, "Bearer "+testToken).Code)

	// An IPv6 attacker does not get a bucket per address of its /64.
	for i := range 3 * authFailBurst {
		authCall(h, fmt.Sprintf("[2001:db8::%x]:443", i+1), "Bearer x")
	}
	require.Equal(t, http.StatusTooManyRequests, authCall(h, "[2001:db8::ffff]:443", "Bearer "+testToken).Code)
	require.Equal(t, http.StatusOK, authCall(h, "[2001:db8:0:1::1]:443", "Bearer "+testToken).Code)
}

// Many addresses failing at once cannot flood the log either: the lines
// are limited across addresses, and the next line says how many it left out.
func TestFailedAuthLogLimitedAcrossAddresses(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.SQLite)
	srv, hook, clock := authServer(t, st)
	h := srv.Handler()
	for i := range 1000 {
		require.Equal(t, http.StatusUnauthorized, authCall(h, fmt.Sprintf("10.0.%d.%d:1", i/250, i%250+1), "Bearer x").Code)
	}
	require.LessOrEqual(t, len(authLines(hook)), authLogBurst)
	hook.Reset()
	clock.Advance(time.Minute)
	require.Equal(t, http.StatusUnauthorized, authCall(h, "10.9.9.9:1", "").Code)
	lines := authLines(hook)
	require.Len(t, lines, 1)
	require.Equal(t, 1000-authLogBurst, lines[0].Data["suppressed"])
	require.Equal(t, "missing bearer token", lines[0].Data["reason"])
}

// A short token is accepted on loopback, but not silently.
func TestShortTokenWarnedOnLoopback(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.SQLite)
	log, hook := test.NewNullLogger()
	_, err := New(st, &Config{Addr: "127.0.0.1:0", Token: "abc", Logger: log})
	require.NoError(t, err)
	var warned bool
	for _, e := range hook.AllEntries() {
		s, _ := e.String()
		require.NotContains(t, s, "abc")
		if e.Level == logrus.WarnLevel && strings.Contains(e.Message, "api.token is 3 characters long") {
			warned = true
		}
	}
	require.True(t, warned, "no warning about a 3-character token")
	hook.Reset()
	_, err = New(st, &Config{Addr: "127.0.0.1:0", Token: testToken + "-long-enough", Logger: log})
	require.NoError(t, err)
	require.Empty(t, hook.AllEntries())
}
