package httpcall

import (
	"context"
	"net/http"
	"time"

	"github.com/chimesched/chime/tasks"
)

// SetDefaultTimeout lets a test shorten the default rather than wait for
// it; it returns the function that restores it.
func SetDefaultTimeout(d time.Duration) (restore func()) {
	old := defaultTimeout
	defaultTimeout = d
	return func() { defaultTimeout = old }
}

// IdleConnMaxAge is idleConnMaxAge, for a test that moves a clock past it.
const IdleConnMaxAge = idleConnMaxAge

// UseTransport gives the jobs a fresh shared transport that keeps perHost
// idle connections per host and reads the clock now (nil: time.Now), so a
// test counts the connections its own jobs made. Only a test that does not
// run in parallel may call it. restore closes that transport's idle
// connections and puts the previous one back.
func UseTransport(perHost int, now func() time.Time) (restore func()) {
	if now == nil {
		now = time.Now
	}
	old := shared
	shared = newShared(perHost, now)
	return func() {
		shared.closeIdle()
		shared = old
	}
}

// MaxIdleConnsPerHost is the bound a node's jobs run with.
const MaxIdleConnsPerHost = maxIdleConnsPerHost

// CloseIdleConnections closes the shared transport's idle connections, so
// that goleak sees no connection goroutines left.
func CloseIdleConnections() { shared.closeIdle() }

// ParsedLen is how many params documents the cache holds.
func ParsedLen() int { return parsed.len() }

// Bounds of the params cache.
const (
	MaxParsed      = maxParsed
	MaxParsedBytes = maxParsedBytes
)

// ParseCached reads raw through the cache as Execute does, for a job
// whose params do or do not hold secrets; it returns the URL, the method
// and the headers read.
func ParseCached(raw string, secret bool) (url, method string, headers map[string]string, err error) {
	k, err := parsed.get(&tasks.Job{Params: []byte(raw), SecretParams: secret})
	if err != nil {
		return "", "", nil, err
	}
	return k.URL, k.Method, k.Headers, nil
}

// Request is the request a job with params raw (not secret) sends, built
// as Execute builds it.
func Request(raw string) (*http.Request, error) {
	k, err := parsed.get(&tasks.Job{Params: []byte(raw)})
	if err != nil {
		return nil, err
	}
	return k.request(context.Background()), nil
}
