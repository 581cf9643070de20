package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// Failed authentications are limited per client address with a token
// bucket: an address may fail authFailBurst times in a row, then once per
// authFailEvery. An address whose bucket is empty is answered 429 before
// its token is looked at, so guessing runs at one try a second at most.
// IPv6 addresses count by /64, which one attacker usually holds whole.
// Behind a proxy every client has the proxy's address: one client's
// failures then hold the others back too.
const (
	authFailBurst = 10
	authFailEvery = time.Second
	// Log lines about failures are limited across all addresses too, so
	// a flood from many addresses cannot flood the log.
	authLogBurst = 20
	authLogEvery = time.Second
	// maxAuthClients bounds the buckets kept; past it, addresses without
	// a bucket share one.
	maxAuthClients = 10_000
)

// bucket is a token bucket.
type bucket struct {
	tokens float64
	at     time.Time
	// blockedLogged: the line saying this address is refused was written
	// since its bucket last ran dry.
	blockedLogged bool
}

// refill adds the tokens earned since b.at, up to burst.
func (b *bucket) refill(now time.Time, burst float64, every time.Duration) {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(burst, b.tokens+float64(d)/float64(every))
	}
	b.at = now
}

// authLimiter holds the failure buckets of client addresses and the log's.
type authLimiter struct {
	mu         sync.Mutex
	clients    map[string]*bucket
	pruned     time.Time
	log        bucket
	suppressed int // log lines left out since the last one written
}

func newAuthLimiter(now time.Time) *authLimiter {
	return &authLimiter{clients: map[string]*bucket{}, log: bucket{tokens: authLogBurst, at: now}}
}

// overflowClient is the bucket every address shares once maxAuthClients
// addresses have one.
const overflowClient = "*"

// admit takes a token from client's bucket before its token is checked;
// a request that then authenticates gives it back (refund). With an empty
// bucket it returns how long until the next try, and whether to log that
// the address is refused (once each time its bucket runs dry).
func (l *authLimiter) admit(client string, now time.Time) (wait time.Duration, logBlocked bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.clients[client]
	if b == nil {
		if len(l.clients) >= maxAuthClients {
			l.prune(now)
		}
		if len(l.clients) >= maxAuthClients {
			client = overflowClient
			b = l.clients[client]
		}
		if b == nil {
			b = &bucket{tokens: authFailBurst, at: now}
			l.clients[client] = b
		}
	}
	b.refill(now, authFailBurst, authFailEvery)
	if b.tokens < 1 {
		first := !b.blockedLogged
		b.blockedLogged = true
		return time.Duration((1 - b.tokens) * float64(authFailEvery)), first
	}
	b.tokens--
	b.blockedLogged = false
	return 0, false
}

// refund gives back the token admit took from a client that authenticated.
func (l *authLimiter) refund(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.clients[client]; b != nil {
		b.tokens = min(authFailBurst, b.tokens+1)
	}
}

// prune drops the buckets that are full again, which say nothing a missing
// bucket does not; at most once per authFailEvery, so a map full of
// attackers is not scanned on every request.
func (l *authLimiter) prune(now time.Time) {
	if now.Sub(l.pruned) < authFailEvery {
		return
	}
	l.pruned = now
	for k, b := range l.clients {
		b.refill(now, authFailBurst, authFailEvery)
		if b.tokens >= authFailBurst {
			delete(l.clients, k)
		}
	}
}

// logLine says whether a line about a failure may be written now, and
// how many were left out before it.
func (l *authLimiter) logLine(now time.Time) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log.refill(now, authLogBurst, authLogEvery)
	if l.log.tokens < 1 {
		l.suppressed++
		return false, 0
	}
	l.log.tokens--
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}

// clientOf is the address a request is limited by (the IPv6 /64), and the
// address to log.
func clientOf(r *http.Request) (key, addr string) {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr, r.RemoteAddr
	}
	a := ap.Addr().Unmap()
	if a.Is4() {
		return a.String(), a.String()
	}
	p, _ := a.Prefix(64)
	return p.String(), a.String()
}

// authorize wraps the /api/v1 routes with the bearer token check and the
// limit on failures, and hands next the request's Principal (in its
// context). The configured token is the bootstrap admin; any other is
// looked up by its hash in api_tokens on every request, so a token
// revoked or expired on one node is refused by all at once. A request
// that carries a principal already comes from the console in-process,
// which authenticated its session itself.
func (s *Server) authorize(next http.Handler) http.Handler {
	if s.cfg.Token == "" {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if PrincipalOf(r.Context()) == nil {
				r = r.WithContext(WithPrincipal(r.Context(), &Principal{Name: OpenName, Role: models.RoleAdmin, Via: "api"}))
			}
			next.ServeHTTP(w, r)
		})
	}
	// Digests of equal length: the comparison's time says nothing about
	// the token's length either (as the console's login).
	want := sha256.Sum256([]byte(s.cfg.Token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if PrincipalOf(r.Context()) != nil {
			next.ServeHTTP(w, r)
			return
		}
		key, addr := clientOf(r)
		if wait, logBlocked := s.auth.admit(key, s.now()); wait > 0 {
			secs := int(math.Ceil(wait.Seconds()))
			if logBlocked {
				s.authLog(r, addr, logrus.WarnLevel, "api: too many failed authentications from this address; "+
					"refusing its requests until it waits", logrus.Fields{"retry_after": secs})
			}
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			s.writeJSON(w, r, http.StatusTooManyRequests, Error{Error: "too many failed authentications from this address: retry after " +
				strconv.Itoa(secs) + "s"})
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		got = strings.TrimSpace(got)
		sum := sha256.Sum256([]byte(got))
		var p *Principal
		reason := "missing bearer token"
		msg := "missing bearer token: send Authorization: Bearer <CHIME_API_TOKEN>"
		switch {
		case !ok:
		case subtle.ConstantTimeCompare(sum[:], want[:]) == 1:
			p = &Principal{Name: BootstrapName, Role: models.RoleAdmin, Via: "api"}
		default:
			msg, reason = "invalid bearer token", "wrong bearer token"
			t, err := s.st.Admin().TokenByHash(r.Context(), hex.EncodeToString(sum[:]))
			switch {
			case err == nil && t.Live(s.now()):
				p = &Principal{Name: t.Name, Role: t.Role, Scope: t.Scope, Via: "api"}
			case err == nil:
				// The same answer as a wrong token: whoever holds a dead
				// one learns nothing; the log says which it was.
				reason = tokenDeadReason(t, s.now())
			case !errors.Is(err, chimedb.ErrNotFound):
				s.auth.refund(key)
				s.writeError(w, r, s.fromStore(r, err, "an API token"))
				return
			}
		}
		if p == nil {
			s.authLog(r, addr, logrus.InfoLevel, "api: authentication failed", logrus.Fields{"reason": reason})
			w.Header().Set("WWW-Authenticate", `Bearer realm="chime"`)
			s.writeJSON(w, r, http.StatusUnauthorized, Error{Error: msg})
			return
		}
		s.auth.refund(key)
		next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
	})
}

// tokenDeadReason says, for the log, why a token of api_tokens was refused.
func tokenDeadReason(t *models.APIToken, now time.Time) string {
	switch {
	case t.RevokedAt != nil:
		return "token " + strconv.Quote(t.Name) + " is revoked"
	case t.ExpiresAt != nil && !now.Before(*t.ExpiresAt):
		return "token " + strconv.Quote(t.Name) + " expired"
	}
	return "token " + strconv.Quote(t.Name) + " has role " + strconv.Quote(string(t.Role)) + ", which chime does not know"
}

// authLog writes a line about a refused request, unless the log's limit
// leaves it out. It names the address and the route, never the token.
func (s *Server) authLog(r *http.Request, addr string, level logrus.Level, msg string, f logrus.Fields) {
	ok, suppressed := s.auth.logLine(s.now())
	if !ok {
		return
	}
	f["remote"], f["route"] = addr, r.Pattern
	if suppressed > 0 {
		f["suppressed"] = suppressed
	}
	s.log.WithFields(f).Log(level, msg)
}
