package httpcall_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/tasks/httpcall"
)

// countingServer is an httptest server that counts the connections it
// accepted and signals each one closed.
type countingServer struct {
	*httptest.Server
	opened atomic.Int32
	closed chan struct{}
}

func newCountingServer(t *testing.T, h http.HandlerFunc) *countingServer {
	t.Helper()
	s := &countingServer{Server: httptest.NewUnstartedServer(h), closed: make(chan struct{}, 64)}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			s.opened.Add(1)
		case http.StateClosed, http.StateHijacked:
			s.closed <- struct{}{}
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// run executes one httpcall job with params.
func run(t *testing.T, params map[string]any) error {
	t.Helper()
	b := setup(t, params)
	return b.task.Execute(b.ctx, b.job)
}

// Jobs share connections, not requests: the second job goes out on the
// first one's connection and carries none of its credentials, headers or
// cookies. Not parallel: it counts the connections of a transport of its
// own.
func TestJobsShareConnections(t *testing.T) {
	defer httpcall.UseTransport(httpcall.MaxIdleConnsPerHost, nil)()
	type seen struct{ auth, token, cookie string }
	got := make(chan seen, 3)
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Header.Get("Authorization"), r.Header.Get("X-Token"), r.Header.Get("Cookie")}
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "job-a", Path: "/"})
		_, _ = io.WriteString(w, "ok")
	})

	withUser := strings.Replace(srv.URL, "http://", "http://job-a:hunter2@", 1)
	require.NoError(t, run(t, map[string]any{"url": withUser + "/a", "headers": map[string]string{"X-Token": "a"}}))
	require.Equal(t, seen{"Basic " + base64.StdEncoding.EncodeToString([]byte("job-a:hunter2")), "a", ""}, <-got)
	require.NoError(t, run(t, map[string]any{"url": srv.URL + "/a", "headers": map[string]string{"Authorization": "Bearer job-b"}}))
	require.Equal(t, seen{"Bearer job-b", "", ""}, <-got, "job B sends its own header, no cookie job A was given")
	require.NoError(t, run(t, map[string]any{"url": srv.URL + "/a"}))
	require.Equal(t, seen{}, <-got, "job C carries nothing of the jobs before it")
	require.EqualValues(t, 1, srv.opened.Load(), "the jobs reused the first job's connection")
}

// Idle connections per host are bounded: past the bound a connection
// closes when its request ends, and the next herd dials the difference.
func TestIdleConnectionsBounded(t *testing.T) {
	const bound, herd = 3, 5
	defer httpcall.UseTransport(bound, nil)()
	var mu sync.Mutex
	release := make(chan struct{})
	in := make(chan struct{}, herd)
	srv := newCountingServer(t, func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		rel := release
		mu.Unlock()
		in <- struct{}{}
		<-rel // every request of the herd is in flight at once
		_, _ = io.WriteString(w, "ok")
	})
	round := func() {
		t.Helper()
		errs := make(chan error, herd)
		for range herd {
			b := setup(t, map[string]any{"url": srv.URL})
			go func() { errs <- b.task.Execute(b.ctx, b.job) }()
		}
		for range herd {
			<-in
		}
		mu.Lock()
		close(release)
		release = make(chan struct{})
		mu.Unlock()
		for range herd {
			require.NoError(t, <-errs)
		}
	}

	round()
	require.EqualValues(t, herd, srv.opened.Load())
	for range herd - bound {
		select {
		case <-srv.closed:
		case <-time.After(10 * time.Second):
			t.Fatalf("the connections past the bound of %d idle were not closed", bound)
		}
	}
	round()
	require.EqualValues(t, herd+(herd-bound), srv.opened.Load(), "the second herd reused the %d idle connections", bound)
}

// However busy, every idle connection is dropped once idleConnMaxAge has
// passed, so a moved host name is looked up again.
func TestIdleConnectionsDroppedAfterMaxAge(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	defer httpcall.UseTransport(httpcall.MaxIdleConnsPerHost, func() time.Time { return now })()
	srv := newCountingServer(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })

	require.NoError(t, run(t, map[string]any{"url": srv.URL}))
	now = now.Add(httpcall.IdleConnMaxAge - time.Second)
	require.NoError(t, run(t, map[string]any{"url": srv.URL}))
	require.EqualValues(t, 1, srv.opened.Load())
	now = now.Add(time.Second)
	require.NoError(t, run(t, map[string]any{"url": srv.URL}))
	require.EqualValues(t, 2, srv.opened.Load(), "the idle connection was dropped at the max age")
	now = now.Add(time.Second)
	require.NoError(t, run(t, map[string]any{"url": srv.URL}))
	require.EqualValues(t, 2, srv.opened.Load(), "and the new one is reused")
}

// A job's timeout applies on a reused connection, and the connection it
// cut is not handed to the next job.
func TestTimeoutOnReusedConnection(t *testing.T) {
	defer httpcall.UseTransport(httpcall.MaxIdleConnsPerHost, nil)()
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-r.Context().Done()
			return
		}
		_, _ = io.WriteString(w, "ok")
	})

	require.NoError(t, run(t, map[string]any{"url": srv.URL + "/fast"}))
	err := run(t, map[string]any{"url": srv.URL + "/slow", "timeout": "20ms"})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "within the timeout 20ms")
	require.EqualValues(t, 1, srv.opened.Load(), "the slow job went out on the first job's connection")
	require.NoError(t, run(t, map[string]any{"url": srv.URL + "/fast"}))
	require.EqualValues(t, 2, srv.opened.Load(), "the cut connection was closed, not reused")
}

// A redirect to another host does not carry the job's Authorization or
// cookies there (net/http's policy, applied per request); one to
// the same host does.
func TestRedirectCredentials(t *testing.T) {
	t.Parallel()
	got := make(chan string, 2)
	target := server(t, func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Authorization") + "|" + r.Header.Get("Cookie")
		w.WriteHeader(http.StatusNoContent)
	})
	_, port, err := net.SplitHostPort(strings.TrimPrefix(target.URL, "http://"))
	require.NoError(t, err)
	origin := server(t, func(w http.ResponseWriter, r *http.Request) {
		to := target.URL // the same host, 127.0.0.1
		if r.URL.Path == "/away" {
			to = "http://localhost:" + port // another host name
		}
		http.Redirect(w, r, to, http.StatusFound)
	})
	headers := map[string]string{"Authorization": "Bearer s3cret", "Cookie": "session=s3cret"}

	require.NoError(t, run(t, map[string]any{"url": origin.URL + "/away", "headers": headers}))
	require.Equal(t, "|", <-got)
	require.NoError(t, run(t, map[string]any{"url": origin.URL + "/here", "headers": headers}))
	require.Equal(t, "Bearer s3cret|session=s3cret", <-got)
}

// Jobs read their responses into shared buffers: a herd answered with
// bodies of every length, the longest first, leaves each job with its own
// body and nothing of another's (a short body after a long one would show
// the long one's tail if a buffer were read past what this read filled).
func TestResponseBuffersShareNothing(t *testing.T) {
	t.Parallel()
	body := func(i int) string {
		return strings.Repeat(string(rune('a'+i%26)), (httpcall.ExcerptBytes+50)>>(i%14))
	}
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		var i int
		_, _ = fmt.Sscanf(r.URL.Path, "/%d", &i)
		_, _ = io.WriteString(w, body(i))
	})
	want := func(i int) string {
		b := body(i)
		if b == "" {
			return "HTTP 200 OK"
		}
		if len(b) > httpcall.ExcerptBytes {
			return "HTTP 200 OK\n" + b[:httpcall.ExcerptBytes] + "\n[... body truncated ...]"
		}
		return "HTTP 200 OK\n" + b
	}
	// One at a time, so each job takes the buffer the last one put back.
	for i := range 14 {
		b := setup(t, map[string]any{"url": fmt.Sprintf("%s/%d", srv.URL, i)})
		require.NoError(t, b.task.Execute(b.ctx, b.job))
		require.Equal(t, want(i), b.job.Result(), "job %d", i)
	}
	// And a herd at once.
	const herd = 60
	var wg sync.WaitGroup
	results := make([]string, herd)
	for i := range herd {
		b := setup(t, map[string]any{"url": fmt.Sprintf("%s/%d", srv.URL, i)})
		wg.Go(func() {
			if err := b.task.Execute(b.ctx, b.job); err != nil {
				results[i] = err.Error()
				return
			}
			results[i] = b.job.Result()
		})
	}
	wg.Wait()
	for i := range herd {
		require.Equal(t, want(i), results[i], "job %d", i)
	}
}
