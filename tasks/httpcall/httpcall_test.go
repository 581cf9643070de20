package httpcall_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/tasks/httpcall"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(closeIdle{m}) }

// closeIdle closes the shared transport's idle connections after the
// tests, before goleak looks for goroutines left behind.
type closeIdle struct{ m *testing.M }

func (c closeIdle) Run() int {
	code := c.m.Run()
	httpcall.CloseIdleConnections()
	return code
}

type bundle struct {
	task tasks.Task
	job  *tasks.Job
	ctx  context.Context
}

func setup(t *testing.T, params map[string]any) *bundle {
	t.Helper()
	raw, err := json.Marshal(params)
	require.NoError(t, err)
	task := httpcall.New()
	logger, _ := logtest.NewNullLogger()
	job := &tasks.Job{ID: 3, TaskType: httpcall.Kind, Params: raw, Logger: logrus.NewEntry(logger)}
	ctx, cancel := tasks.Prepare(context.Background(), task, job)
	t.Cleanup(cancel)
	return &bundle{task: task, job: job, ctx: ctx}
}

func server(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPCall(t *testing.T) {
	t.Parallel()

	t.Run("Success", func(t *testing.T) {
		t.Parallel()
		type seen struct {
			method, path, header, body, host string
		}
		got := make(chan seen, 1)
		srv := server(t, func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			got <- seen{r.Method, r.URL.Path, r.Header.Get("X-Token"), string(b), r.Host}
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"ok":true}`)
		})
		b := setup(t, map[string]any{
			"method":  "post",
			"url":     srv.URL + "/hook",
			"headers": map[string]string{"X-Token": "s3cret", "Host": "chime.example"},
			"body":    `{"n":1}`,
		})
		require.NoError(t, b.task.Execute(b.ctx, b.job))
		require.Equal(t, seen{"POST", "/hook", "s3cret", `{"n":1}`, "chime.example"}, <-got)
		require.Equal(t, "HTTP 201 Created\n{\"ok\":true}", b.job.Result())
	})

	t.Run("UnexpectedStatus", func(t *testing.T) {
		t.Parallel()
		srv := server(t, func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "database is down", http.StatusServiceUnavailable)
		})
		b := setup(t, map[string]any{"url": srv.URL})
		err := b.task.Execute(b.ctx, b.job)
		require.ErrorContains(t, err, "unexpected status 503 Service Unavailable (expected 2xx)")
		require.Contains(t, b.job.Result(), "HTTP 503 Service Unavailable\ndatabase is down")
	})

	t.Run("ExpectStatus", func(t *testing.T) {
		t.Parallel()
		srv := server(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotFound) })
		b := setup(t, map[string]any{"url": srv.URL, "expect_status": []int{404, 410}})
		require.NoError(t, b.task.Execute(b.ctx, b.job))
		require.Equal(t, "HTTP 404 Not Found", b.job.Result())

		b = setup(t, map[string]any{"url": srv.URL, "expect_status": []int{200}})
		require.ErrorContains(t, b.task.Execute(b.ctx, b.job), "unexpected status 404 Not Found (expected 200)")
	})

	t.Run("BodyExcerpt", func(t *testing.T) {
		t.Parallel()
		srv := server(t, func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, strings.Repeat("a", httpcall.ExcerptBytes)+"TAIL")
		})
		b := setup(t, map[string]any{"url": srv.URL})
		require.NoError(t, b.task.Execute(b.ctx, b.job))
		res := b.job.Result()
		require.NotContains(t, res, "TAIL")
		body, ok := strings.CutSuffix(strings.TrimPrefix(res, "HTTP 200 OK\n"), "\n[... body truncated ...]")
		require.True(t, ok, res[len(res)-40:])
		require.Equal(t, strings.Repeat("a", httpcall.ExcerptBytes), body)
	})

	t.Run("StopCancelsSlowRequest", func(t *testing.T) {
		t.Parallel()
		arrived := make(chan struct{})
		srv := server(t, func(w http.ResponseWriter, r *http.Request) {
			close(arrived)
			<-r.Context().Done() // hangs until the client goes away
		})
		b := setup(t, map[string]any{"url": srv.URL})
		done := make(chan error, 1)
		go func() { done <- b.task.Execute(b.ctx, b.job) }()
		<-arrived
		require.True(t, b.task.Stop())
		select {
		case err := <-done:
			require.ErrorIs(t, err, tasks.ErrStopped)
			require.ErrorIs(t, err, context.Canceled)
		case <-time.After(5 * time.Second):
			t.Fatal("Stop did not cancel the request")
		}
	})

	// Pause is honest: a request in flight cannot be held, so Pause says
	// no instead of reporting a pause while the request goes on.
	t.Run("PauseRefusedInFlight", func(t *testing.T) {
		t.Parallel()
		arrived, release := make(chan struct{}), make(chan struct{})
		srv := server(t, func(w http.ResponseWriter, _ *http.Request) {
			close(arrived)
			<-release
			w.WriteHeader(http.StatusNoContent)
		})
		b := setup(t, map[string]any{"url": srv.URL})
		done := make(chan error, 1)
		go func() { done <- b.task.Execute(b.ctx, b.job) }()
		<-arrived
		paused := b.task.Pause()
		close(release)
		require.False(t, paused, "the request goes on: Pause must refuse")
		require.False(t, b.job.Paused())
		require.NoError(t, <-done)
		require.False(t, b.task.Pause(), "the request is over: nothing left to pause")
	})

	// Before the request starts, a pause holds it.
	t.Run("PauseBeforeRequestHolds", func(t *testing.T) {
		t.Parallel()
		hit := make(chan struct{}, 1)
		srv := server(t, func(w http.ResponseWriter, _ *http.Request) { hit <- struct{}{} })
		b := setup(t, map[string]any{"url": srv.URL})
		require.True(t, b.task.Pause())
		done := make(chan error, 1)
		go func() { done <- b.task.Execute(b.ctx, b.job) }()
		select {
		case <-hit:
			t.Fatal("the request went out while paused")
		case <-time.After(30 * time.Millisecond): // nothing to wait on for "did not happen"
		}
		require.True(t, b.task.Resume())
		require.NoError(t, <-done)
		<-hit
	})

	t.Run("ParamTimeout", func(t *testing.T) {
		t.Parallel()
		srv := server(t, func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		b := setup(t, map[string]any{"url": srv.URL, "timeout": "20ms"})
		require.ErrorIs(t, b.task.Execute(b.ctx, b.job), context.DeadlineExceeded)
	})

	t.Run("CredentialsRedacted", func(t *testing.T) {
		t.Parallel()
		srv := server(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
		b := setup(t, map[string]any{"url": strings.Replace(srv.URL, "http://", "http://user:hunter2@", 1)})
		err := b.task.Execute(b.ctx, b.job)
		require.Error(t, err)
		require.NotContains(t, err.Error(), "hunter2")
	})
}

func TestHTTPCallParams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		params  string
		wantErr string
	}{
		{"MissingURL", `{}`, `httpcall: params: field "url": is required`},
		{"RelativeURL", `{"url":"/hook"}`, `httpcall: params: field "url": must be an absolute http or https URL, got "/hook"`},
		{"FileURL", `{"url":"file:///etc/passwd"}`, `field "url": must be an absolute http or https URL`},
		{"NoHost", `{"url":"http://"}`, `field "url": must be an absolute`},
		{"Garbage", `{"url":"::not a url"}`, `field "url"`},
		{"BadMethod", `{"url":"http://x","method":"GE T"}`, `field "method": invalid HTTP method "GE T"`},
		{"BadStatus", `{"url":"http://x","expect_status":[99]}`, `field "expect_status": 99 is not an HTTP status code`},
		{"BadTimeout", `{"url":"http://x","timeout":"1 fortnight"}`, `field "timeout"`},
		{"Unknown", `{"url":"http://x","header":{}}`, `httpcall: params: unknown field "header"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			task := httpcall.New()
			require.ErrorContains(t, task.(tasks.Validator).Validate(json.RawMessage(tt.params)), tt.wantErr)
			job := &tasks.Job{Params: json.RawMessage(tt.params)}
			ctx, cancel := tasks.Prepare(context.Background(), task, job)
			defer cancel()
			require.ErrorContains(t, task.Execute(ctx, job), tt.wantErr)
		})
	}
}

// A server that never answers cannot hold a pool worker forever: without a
// timeout param, or with "0s", the default timeout applies. Not parallel:
// it changes the package default (parallel tests resume only after it).
func TestHTTPCallDefaultTimeout(t *testing.T) {
	require.Equal(t, 30*time.Second, httpcall.DefaultTimeout)
	defer httpcall.SetDefaultTimeout(50 * time.Millisecond)()
	srv := server(t, func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	for _, params := range []map[string]any{{"url": srv.URL}, {"url": srv.URL, "timeout": "0s"}} {
		b := setup(t, params)
		done := make(chan error, 1)
		go func() { done <- b.task.Execute(b.ctx, b.job) }()
		select {
		case err := <-done:
			require.ErrorIs(t, err, context.DeadlineExceeded, "params %v", params)
			require.ErrorContains(t, err, "within the timeout 50ms")
		case <-time.After(5 * time.Second):
			b.task.Stop()
			if err := <-done; err != nil {
				t.Logf("the hung request ended with: %v", err)
			}
			t.Fatalf("params %v: the request hung past the default timeout", params)
		}
	}
}

// TestHTTPCallQueryRedacted is finding 12 of issue 22: a URL's userinfo
// was redacted from the log line, its query (?token=...) was not.
func TestHTTPCallQueryRedacted(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-value"
	var status atomic.Int32
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hop" {
			http.Redirect(w, r, "/hook?token="+secret+"&page=2&flag", http.StatusFound)
			return
		}
		w.WriteHeader(int(status.Load()))
	})
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for _, c := range []struct {
		name, url string
		status    int
	}{
		{"redirected, logged", srv.URL + "/hop?token=" + secret + "&page=2&flag#" + secret, http.StatusOK},
		{"unexpected status", srv.URL + "/hook?token=" + secret + "&page=2&flag", http.StatusTeapot},
		{"no answer", closed.URL + "/hook?token=" + secret + "&page=2&flag", 0},
	} {
		status.Store(int32(c.status))
		raw, err := json.Marshal(map[string]any{"url": c.url})
		require.NoError(t, err)
		logger, hook := logtest.NewNullLogger()
		task := httpcall.New()
		job := &tasks.Job{ID: 3, TaskType: httpcall.Kind, Params: raw, Logger: logrus.NewEntry(logger)}
		ctx, cancel := tasks.Prepare(context.Background(), task, job)
		err = task.Execute(ctx, job)
		cancel()
		var said []string
		for _, e := range hook.AllEntries() {
			said = append(said, e.Message)
		}
		if err != nil {
			said = append(said, err.Error())
		}
		require.Equal(t, c.status == http.StatusOK, err == nil, "%s: %v", c.name, err)
		require.NotEmpty(t, said, c.name)
		for _, line := range said {
			require.NotContains(t, line, secret, c.name)
			require.Contains(t, line, "/hook?token=REDACTED&page=REDACTED&flag", "%s: the keys stay", c.name)
		}
	}
}

// A call is said by the job's row, not by a log line: its result starts
// with the status line, an unexpected status is its error. Only a
// redirect, which the row does not show, is logged, with where it ended.
// Before, every call wrote a line, and a job_logs row per job.
func TestLogLineOnlyForRedirects(t *testing.T) {
	t.Parallel()
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/a":
			http.Redirect(w, r, "/b", http.StatusFound)
		case "/b":
			http.Redirect(w, r, "/c", http.StatusMovedPermanently)
		case "/c":
			w.WriteHeader(http.StatusNoContent)
		default:
			http.Error(w, "no", http.StatusBadGateway)
		}
	})
	for _, c := range []struct {
		path, line, err string
	}{
		{path: "/c"},
		{path: "/x", err: "httpcall: GET " + srv.URL + "/x: unexpected status 502 Bad Gateway (expected 2xx)"},
		{path: "/a", line: "httpcall: GET " + srv.URL + "/a -> 204 No Content after 2 redirects, the last to " + srv.URL + "/c in "},
	} {
		raw, err := json.Marshal(map[string]any{"url": srv.URL + c.path})
		require.NoError(t, err)
		logger, hook := logtest.NewNullLogger()
		logger.SetLevel(logrus.DebugLevel)
		task := httpcall.New()
		job := &tasks.Job{ID: 3, TaskType: httpcall.Kind, Params: raw, Logger: logrus.NewEntry(logger)}
		ctx, cancel := tasks.Prepare(context.Background(), task, job)
		err = task.Execute(ctx, job)
		cancel()
		if c.err == "" {
			require.NoError(t, err, c.path)
		} else {
			require.EqualError(t, err, c.err)
		}
		entries := hook.AllEntries()
		if c.line == "" {
			require.Empty(t, entries, c.path)
			continue
		}
		require.Len(t, entries, 1, c.path)
		require.Equal(t, logrus.InfoLevel, entries[0].Level)
		require.True(t, strings.HasPrefix(entries[0].Message, c.line), entries[0].Message)
		require.Equal(t, "HTTP 204 No Content", job.Result())
	}
}
