package httpcall

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of the connections the jobs share. Idle connections to a host
// never outnumber the requests once in flight to it together, so these
// only cap what a node's whole pool calling one host leaves behind.
const (
	// maxIdleConnsPerHost is the most idle connections kept to one host
	// (scheme, host and port); the others close as their requests end.
	// A herd of jobs calling one host at the same instant reuses at most
	// this many and dials the rest.
	maxIdleConnsPerHost = 1024
	// maxIdleConns is the most idle connections kept in all.
	maxIdleConns = 1024
	// idleConnTimeout closes a connection left idle this long.
	idleConnTimeout = 90 * time.Second
	// idleConnMaxAge is how often every idle connection is dropped, so
	// that a host name is looked up again at least this often even when
	// its jobs keep the connections busy (a DNS name moved to another
	// address while the old server still answers).
	idleConnMaxAge = 5 * time.Minute
)

// shared is the transport of every httpcall job. A transport of its own
// per job cost each run a new connection (a TCP handshake, on https a TLS
// one too), and under a herd of jobs those added up to most of their
// lateness. Sharing connections shares nothing of a request: each job's
// headers, body and URL credentials go on its own request, the jobs'
// clients have no cookie jar, and redirects follow net/http's policy per
// request (Authorization and Cookie are not sent on to another domain).
//
// All jobs share one transport because no param changes how a
// connection is made: the TLS trust and the proxy are the process's
// (system roots, HTTPS_PROXY and friends). A param that changes them (a
// CA, a client certificate, skipping verification, a proxy) must give
// its jobs a transport of their own, keyed by that setting: a connection
// verified under one job's trust must not carry another job's request.
var shared = newShared(maxIdleConnsPerHost, time.Now)

// sharedTransport holds the transport and the client every job sends
// with. A herd of jobs reaches get at once: it takes no lock once the
// transport exists, only the clock and atomic reads.
type sharedTransport struct {
	perHost int // idle connections kept per host
	now     func() time.Time

	mu sync.Mutex // makes the client, once
	c  atomic.Pointer[http.Client]
	// flushed is when the idle connections were last all dropped (Unix
	// nanoseconds); whoever moves it on drops them.
	flushed atomic.Int64
}

func newShared(perHost int, now func() time.Time) *sharedTransport {
	return &sharedTransport{perHost: perHost, now: now}
}

// get returns the jobs' client. It has no cookie jar, no timeout (each
// job's context has its own) and net/http's redirect policy, and sends
// through the shared transport: net/http's default one (the environment's
// proxy, its dial and TLS handshake timeouts, HTTP/2) with the bounds
// above. One client for all shares no more than the transport does: a
// client without a jar keeps nothing of a request. get drops the idle
// connections first if idleConnMaxAge has passed since they were last
// dropped.
func (s *sharedTransport) get() *http.Client {
	now := s.now().UnixNano()
	c := s.c.Load()
	if c == nil {
		s.mu.Lock()
		if c = s.c.Load(); c == nil {
			t := http.DefaultTransport.(*http.Transport).Clone()
			t.MaxIdleConns = maxIdleConns
			t.MaxIdleConnsPerHost = s.perHost
			t.IdleConnTimeout = idleConnTimeout
			c = &http.Client{Transport: t}
			s.flushed.Store(now)
			s.c.Store(c)
		}
		s.mu.Unlock()
	}
	if last := s.flushed.Load(); now-last >= int64(idleConnMaxAge) && s.flushed.CompareAndSwap(last, now) {
		c.CloseIdleConnections()
	}
	return c
}

// closeIdle closes the idle connections now.
func (s *sharedTransport) closeIdle() {
	if c := s.c.Load(); c != nil {
		c.CloseIdleConnections()
	}
}
