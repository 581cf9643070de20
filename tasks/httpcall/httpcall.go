// Package httpcall is the built-in "httpcall" task: one HTTP request whose
// status decides success. It imports only tasks and the standard library.
//
// Params:
//
//	"url": "https://example.com/hook"   required, absolute http or https
//	"method": "POST"                    default GET
//	"headers": {"Authorization": "..."}
//	"body": "..."                       sent as is
//	"expect_status": [200, 204]         default: any 2xx
//	"timeout": "2m"                     for the whole request, body included;
//	                                    default (also "0s") DefaultTimeout, 30s;
//	                                    the job's own timeout still applies
//
// The result records the status line and the first 4 KiB of the response
// body. Stop cancels the request in flight. Pause holds the task only
// before the request goes out; while it is in flight Pause refuses.
//
// The jobs of a process share idle keep-alive connections (transport.go):
// a job calling a host another job called recently skips the TCP and TLS
// handshakes. They share nothing else: each has its own request and client,
// with no cookie jar.
package httpcall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chimesched/chime/tasks"
)

// Kind is the task_type of this task.
const Kind = "httpcall"

// ExcerptBytes is how much of the response body the result keeps.
const ExcerptBytes = 4 << 10

// DefaultTimeout bounds a request whose params set no timeout (or "0s"): a
// server that never answers must not hold a pool worker for good.
const DefaultTimeout = 30 * time.Second

// defaultTimeout is DefaultTimeout; tests shorten it.
var defaultTimeout = DefaultTimeout

// Params are the task's params.
type Params struct {
	Method       string            `json:"method"`
	URL          string            `json:"url"`
	Headers      map[string]string `json:"headers"`
	Body         string            `json:"body"`
	ExpectStatus []int             `json:"expect_status"`
	Timeout      tasks.Duration    `json:"timeout"` // 0: DefaultTimeout
}

func (p Params) timeout() time.Duration {
	if p.Timeout > 0 {
		return p.Timeout.Std()
	}
	return defaultTimeout
}

func parse(raw json.RawMessage) (Params, error) {
	var p Params
	if err := tasks.DecodeParams(raw, &p); err != nil {
		return p, err
	}
	if p.URL == "" {
		return p, tasks.FieldError("url", "is required")
	}
	u, err := url.Parse(p.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return p, tasks.FieldError("url", "must be an absolute http or https URL, got %q", p.URL)
	}
	if p.Method == "" {
		p.Method = http.MethodGet
	}
	p.Method = strings.ToUpper(p.Method)
	if !validToken(p.Method) {
		return p, tasks.FieldError("method", "invalid HTTP method %q", p.Method)
	}
	for k := range p.Headers {
		if !validToken(k) {
			return p, tasks.FieldError("headers", "invalid header name %q", k)
		}
	}
	for _, s := range p.ExpectStatus {
		if s < 100 || s > 599 {
			return p, tasks.FieldError("expect_status", "%d is not an HTTP status code", s)
		}
	}
	return p, nil
}

func validToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r <= ' ' || r >= 0x7f || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}

func (p Params) expected(code int) bool {
	if len(p.ExpectStatus) == 0 {
		return code >= 200 && code < 300
	}
	return slices.Contains(p.ExpectStatus, code)
}

func (p Params) expectation() string {
	if len(p.ExpectStatus) == 0 {
		return "2xx"
	}
	s := make([]string, len(p.ExpectStatus))
	for i, c := range p.ExpectStatus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ", ")
}

// Task makes one request.
type Task struct {
	tasks.Base
}

// refusal is what Pause logs once the request is in flight (or Execute is
// over): an HTTP exchange cannot be held midway, and a job shown as paused
// must really be held. Stop still cancels the request.
const refusal = "httpcall: cannot pause: the request is already in flight (stop cancels it)"

// New returns an httpcall task.
func New() tasks.Task { return &Task{} }

// QueueFree implements tasks.QueueFree: OnQueue is Base's, which does
// nothing, so the engine may claim the job straight into running.
func (*Task) QueueFree() {}

// Validate implements tasks.Validator.
func (*Task) Validate(params json.RawMessage) error {
	if _, err := parse(params); err != nil {
		return fmt.Errorf("httpcall: %w", err)
	}
	return nil
}

// Execute implements tasks.Task.
func (t *Task) Execute(ctx context.Context, job *tasks.Job) error {
	defer t.RefusePauses(refusal)
	p, err := parse(job.Params)
	if err != nil {
		return fmt.Errorf("httpcall: %w", err)
	}
	if err := t.BeginUnpausable(ctx, job, refusal); err != nil {
		return fmt.Errorf("httpcall: before the request: %w", tasks.ContextError(ctx))
	}
	timeout := p.timeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var body io.Reader
	if p.Body != "" {
		body = strings.NewReader(p.Body)
	}
	req, err := http.NewRequestWithContext(ctx, p.Method, p.URL, body)
	if err != nil {
		return fmt.Errorf("httpcall: build request: %w", err)
	}
	for k, v := range p.Headers {
		req.Header.Set(k, v)
	}
	// net/http ignores a Host entry in Header; honour it as users expect.
	if h := req.Header.Get("Host"); h != "" {
		req.Host = h
	}

	// The jobs share connections (see shared), never a client: no cookie
	// jar, and net/http's redirect policy per request.
	client := &http.Client{Transport: shared.get()}

	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("httpcall: %s %s: no answer within the timeout %v: %w", p.Method, redact(req.URL), timeout, ctx.Err())
		}
		if ctx.Err() != nil {
			return fmt.Errorf("httpcall: %s %s: %w", p.Method, redact(req.URL), tasks.ContextError(ctx))
		}
		return fmt.Errorf("httpcall: %s %s: %w", p.Method, redact(req.URL), transportError(err))
	}
	defer func() { _ = resp.Body.Close() }()
	excerpt, readErr := io.ReadAll(io.LimitReader(resp.Body, ExcerptBytes+1))
	elapsed := time.Since(start)

	job.SetResult(result(resp, excerpt))
	job.Log().WithField("status", resp.StatusCode).
		Infof("httpcall: %s %s -> %s in %v", p.Method, redact(req.URL), resp.Status, elapsed.Round(time.Millisecond))

	if !p.expected(resp.StatusCode) {
		return fmt.Errorf("httpcall: %s %s: unexpected status %s (expected %s)", p.Method, redact(req.URL), resp.Status, p.expectation())
	}
	if readErr != nil {
		return fmt.Errorf("httpcall: read response body: %w", readErr)
	}
	return nil
}

func result(resp *http.Response, excerpt []byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %s", resp.Status)
	if len(excerpt) > 0 {
		truncated := len(excerpt) > ExcerptBytes
		if truncated {
			excerpt = excerpt[:ExcerptBytes]
		}
		b.WriteString("\n")
		b.WriteString(strings.ToValidUTF8(string(excerpt), "\uFFFD"))
		if truncated {
			b.WriteString("\n[... body truncated ...]")
		}
	}
	return b.String()
}

// redact keeps credentials in a URL out of logs and errors: the
// userinfo's password, every query value (webhooks and APIs take tokens as
// ?token=...; the keys stay, to tell calls apart) and the fragment. A
// secret in the path itself is not recognised.
func redact(u *url.URL) string {
	c := *u
	if c.RawQuery != "" {
		parts := strings.Split(c.RawQuery, "&")
		for i, p := range parts {
			if k, _, ok := strings.Cut(p, "="); ok {
				parts[i] = k + "=REDACTED"
			}
		}
		c.RawQuery = strings.Join(parts, "&")
	}
	if c.Fragment != "" {
		c.Fragment, c.RawFragment = "REDACTED", ""
	}
	return c.Redacted()
}

// transportError is err without the *url.Error around it, whose text
// repeats the URL with its query.
func transportError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
