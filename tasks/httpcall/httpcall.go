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
// body; an unexpected status is the job's error. The job logs a line only
// when redirects were followed (where the request ended up is said
// nowhere else). Stop cancels the request in flight. Pause holds the task
// only before the request goes out; while it is in flight Pause refuses.
//
// The jobs of a process share idle keep-alive connections (transport.go):
// a job calling a host another job called recently skips the TCP and TLS
// handshakes, and one client, which has no cookie jar. They share nothing
// of a request: each sends its own, with its own header map and URL. What
// they share is read only: params decoded once per document, with the
// request they make as a template each job copies (parsed, never for
// params holding secrets), and the buffers bodies are read into
// (excerptBufs).
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
	"sync"
	"time"
	"unicode/utf8"

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

// Bounds of the params cache: a node keeps at most maxParsed documents
// of up to maxParsedBytes each (a few MiB at most); past maxParsed it
// starts over.
const (
	maxParsed      = 4096
	maxParsedBytes = 1024
)

// parsed caches parse's answer by params document. A schedule's jobs
// carry the same params every run, and their strict decode (a walk of
// the document for duplicate keys, then encoding/json refusing unknown
// fields), URL checks and the request built from them cost each job about
// as much CPU as its exchange (issue 25's profile: 15 µs a job), at the
// instant a herd of them fires. A document is the whole key, so two jobs
// share an entry only when their params are the same bytes, and what they
// share is read only: each job's request is a clone of the entry's
// (call.request), with a header map and URL of its own. Params holding
// secret values (tasks.Job.SecretParams) are never kept: a secret lives in
// its run's memory only.
var parsed = &paramsCache{m: make(map[string]*call)}

type paramsCache struct {
	mu sync.RWMutex
	m  map[string]*call
}

// call is a params document read: the params, and the request they make,
// which no job sends: each sends a copy (request).
type call struct {
	Params
	tmpl *http.Request // without a header: each request makes its own
	// keys and values are the header's, keys canonical, in pairs.
	keys, values []string
}

// prepare reads raw and builds the request it makes.
func prepare(raw json.RawMessage) (*call, error) {
	p, err := parse(raw)
	if err != nil {
		return nil, err
	}
	tmpl, err := http.NewRequest(p.Method, p.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	for k, v := range p.Headers {
		tmpl.Header.Set(k, v)
	}
	// net/http ignores a Host entry in Header; honour it as users expect.
	if h := tmpl.Header.Get("Host"); h != "" {
		tmpl.Host = h
	}
	k := &call{Params: p, tmpl: tmpl}
	for name, v := range tmpl.Header {
		k.keys = append(k.keys, name)
		k.values = append(k.values, v[0])
	}
	tmpl.Header = nil
	return k, nil
}

// request is the job's own request: a copy of the template whose URL,
// userinfo and header map are the job's alone, with the body, bound to
// ctx.
func (k *call) request(ctx context.Context) *http.Request {
	req := k.tmpl.Clone(ctx)
	req.Header = make(http.Header, len(k.keys))
	if len(k.keys) > 0 {
		// One backing array for the job's values, each entry a full
		// slice of one, so that an append to one value cannot reach
		// the next.
		vals := slices.Clone(k.values)
		for i, name := range k.keys {
			req.Header[name] = vals[i : i+1 : i+1]
		}
	}
	if k.Body != "" {
		// As http.NewRequest sets them for a *strings.Reader: the length,
		// and a fresh reader for a redirect that resends the body.
		body := k.Body
		req.ContentLength = int64(len(body))
		req.Body = io.NopCloser(strings.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(body)), nil }
	}
	return req
}

// get returns job's params as prepare reads them, from the cache when
// they were read before.
func (c *paramsCache) get(job *tasks.Job) (*call, error) {
	raw := job.Params
	keep := !job.SecretParams && len(raw) <= maxParsedBytes
	if keep {
		c.mu.RLock()
		k, ok := c.m[string(raw)]
		c.mu.RUnlock()
		if ok {
			return k, nil
		}
	}
	k, err := prepare(raw)
	if err != nil || !keep {
		return k, err
	}
	c.mu.Lock()
	if len(c.m) >= maxParsed {
		clear(c.m)
	}
	c.m[string(raw)] = k
	c.mu.Unlock()
	return k, nil
}

// len is how many documents the cache holds.
func (c *paramsCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
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
	if _, err := prepare(params); err != nil {
		return fmt.Errorf("httpcall: %w", err)
	}
	return nil
}

// Execute implements tasks.Task.
func (t *Task) Execute(ctx context.Context, job *tasks.Job) error {
	defer t.RefusePauses(refusal)
	k, err := parsed.get(job)
	if err != nil {
		return fmt.Errorf("httpcall: %w", err)
	}
	p := &k.Params
	if err := t.BeginUnpausable(ctx, job, refusal); err != nil {
		return fmt.Errorf("httpcall: before the request: %w", tasks.ContextError(ctx))
	}
	timeout := p.timeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req := k.request(ctx)

	// The jobs share connections (see shared), never a request, and
	// their client has no cookie jar; net/http's redirect policy applies
	// per request.
	client := shared.get()

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
	buf := excerptBufs.Get().(*[]byte)
	n, readErr := readExcerpt(resp.Body, *buf)
	job.SetResult(result(resp.Status, (*buf)[:n]))
	excerptBufs.Put(buf)

	// The row tells the rest: the result starts with the status line, an
	// unexpected status or a failed read is the job's error, and its
	// started_at and finished_at bound the exchange. A line per call
	// would cost a job_logs row per job, for nothing the row does not
	// say; only where a redirect took the request is said nowhere else.
	if hops := redirects(resp); hops > 0 {
		s := "s"
		if hops == 1 {
			s = ""
		}
		job.Log().WithField("status", resp.StatusCode).Infof("httpcall: %s %s -> %s after %d redirect%s, the last to %s in %v",
			p.Method, redact(req.URL), resp.Status, hops, s, redact(resp.Request.URL), time.Since(start).Round(time.Millisecond))
	}
	if !p.expected(resp.StatusCode) {
		return fmt.Errorf("httpcall: %s %s: unexpected status %s (expected %s)", p.Method, redact(req.URL), resp.Status, p.expectation())
	}
	if readErr != nil {
		return fmt.Errorf("httpcall: %s %s: %s, reading the response body: %w", p.Method, redact(req.URL), resp.Status, readErr)
	}
	return nil
}

// redirects counts the redirects followed to resp: each request after
// the first carries the response that sent it there.
func redirects(resp *http.Response) int {
	n := 0
	for r := resp.Request; r != nil && r.Response != nil; r = r.Response.Request {
		n++
	}
	return n
}

// excerptBufs holds the buffers response bodies are read into, each
// ExcerptBytes+1 long: a herd of jobs would otherwise each allocate its
// own and leave it to the GC. A job reads into its buffer from the start
// and uses only the bytes this read filled, and its result is a copy, so
// nothing of one job's response reaches another's result.
var excerptBufs = sync.Pool{New: func() any { b := make([]byte, ExcerptBytes+1); return &b }}

// readExcerpt reads the start of body into buf, up to len(buf) bytes, and
// says how many it read; the body ending first is no error.
func readExcerpt(body io.Reader, buf []byte) (int, error) {
	n, err := io.ReadFull(body, buf)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = nil
	}
	return n, err
}

// result is the job's result: the status line, then the first
// ExcerptBytes of the body read (excerpt, one byte more when the body was
// longer), with invalid UTF-8 replaced.
func result(status string, excerpt []byte) string {
	const head, cut = "HTTP ", "\n[... body truncated ...]"
	truncated := len(excerpt) > ExcerptBytes
	if truncated {
		excerpt = excerpt[:ExcerptBytes]
	}
	var b strings.Builder
	b.Grow(len(head) + len(status) + 1 + len(excerpt) + len(cut))
	b.WriteString(head)
	b.WriteString(status)
	if len(excerpt) > 0 {
		b.WriteByte('\n')
		if utf8.Valid(excerpt) {
			b.Write(excerpt)
		} else {
			b.WriteString(strings.ToValidUTF8(string(excerpt), "\uFFFD"))
		}
		if truncated {
			b.WriteString(cut)
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
