package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/api"
	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

const (
	sessionCookie    = "chime_session"
	loginCSRFCookie  = "chime_login_csrf"
	csrfField        = "csrf"
	sessionNonceSize = 16
)

// session is a logged-in browser.
type session struct {
	nonce   string
	expires time.Time // the cookie's
	// CSRF is the token every form of this session posts back.
	CSRF string
	// Who logged in: every API call of the session is made as this
	// principal, so the API's rules apply to the console as they do to
	// the token itself.
	Who *api.Principal
}

// Can says whether the session's role may take a kind of action, so a
// page offers only those: "operate" (run, pause, resume, stop, reset),
// "edit" (create, change, delete definitions and schedules) or "admin".
// The API refuses the others anyway.
func (s *session) Can(action string) bool {
	if s == nil || s.Who == nil {
		return false
	}
	need := map[string]models.Role{"operate": models.RoleOperator, "edit": models.RoleEditor, "admin": models.RoleAdmin}[action]
	return need != "" && s.Who.Role.Rank() >= need.Rank()
}

// sessionKey derives the cookie signing key from the token, so every node
// sharing the token accepts the same sessions and a new token ends them
// all. Without a token a random key serves this process only.
func sessionKey(token string) ([]byte, error) {
	if token == "" {
		k := make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			return nil, err
		}
		return k, nil
	}
	m := hmac.New(sha256.New, []byte("chime console session key v1"))
	m.Write([]byte(token))
	return m.Sum(nil), nil
}

func (c *Console) mac(parts ...[]byte) []byte {
	m := hmac.New(sha256.New, c.key)
	for _, p := range parts {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(p)))
		m.Write(n[:])
		m.Write(p)
	}
	return m.Sum(nil)
}

var b64 = base64.RawURLEncoding

// newSession makes a cookie value with a fresh nonce: a login never reuses
// a session id an attacker could have planted. The cookie carries the
// SHA-256 of the token that logged in (never the token), by which every
// request finds who it is, and whether the token still lives.
func (c *Console) newSession(tokenHash [sha256.Size]byte, who *api.Principal) (string, *session, error) {
	nonce := make([]byte, sessionNonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return "", nil, err
	}
	expires := time.Unix(c.cfg.Now().Add(c.cfg.SessionTTL).Unix(), 0)
	var exp [8]byte
	binary.BigEndian.PutUint64(exp[:], uint64(expires.Unix()))
	payload := append(append(nonce, exp[:]...), tokenHash[:]...)
	value := b64.EncodeToString(payload) + "." + b64.EncodeToString(c.mac([]byte("session"), payload))
	return value, c.sessionOf(nonce, expires, who), nil
}

func (c *Console) sessionOf(nonce []byte, expires time.Time, who *api.Principal) *session {
	return &session{nonce: string(nonce), expires: expires, CSRF: b64.EncodeToString(c.mac([]byte("csrf"), nonce)), Who: who}
}

// principalOf finds who holds the token of hash: the bootstrap admin, a
// live named token, or nobody (nil: unknown, revoked, expired). Scoped
// tokens are nobody here: the console's pages read the database without
// a scope, so a scoped token uses the API and the CLI.
func (c *Console) principalOf(ctx context.Context, hash [sha256.Size]byte) (*api.Principal, error) {
	if c.cfg.Token == "" {
		return &api.Principal{Name: api.OpenName, Role: models.RoleAdmin, Via: "console"}, nil
	}
	want := sha256.Sum256([]byte(c.cfg.Token))
	if subtle.ConstantTimeCompare(hash[:], want[:]) == 1 {
		return &api.Principal{Name: api.BootstrapName, Role: models.RoleAdmin, Via: "console"}, nil
	}
	t, err := c.st.Admin().TokenByHash(ctx, hex.EncodeToString(hash[:]))
	if errors.Is(err, chimedb.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !t.Live(c.cfg.Now()) || t.Scope != "" {
		return nil, nil
	}
	return &api.Principal{Name: t.Name, Role: t.Role, Via: "console"}, nil
}

// readSession checks the session cookie: signature, expiry, logout. The
// error is the database's, when it cannot say whether the session was
// logged out.
func (c *Console) readSession(r *http.Request) (*session, error) {
	ck, err := r.Cookie(c.cookieName(sessionCookie))
	if err != nil || len(ck.Value) > 200 {
		return nil, nil
	}
	p, sig, ok := strings.Cut(ck.Value, ".")
	if !ok {
		return nil, nil
	}
	payload, err1 := b64.DecodeString(p)
	mac, err2 := b64.DecodeString(sig)
	if err1 != nil || err2 != nil || len(payload) != sessionNonceSize+8+sha256.Size {
		return nil, nil
	}
	if !hmac.Equal(mac, c.mac([]byte("session"), payload)) {
		return nil, nil
	}
	exp := time.Unix(int64(binary.BigEndian.Uint64(payload[sessionNonceSize:])), 0)
	if !c.cfg.Now().Before(exp) {
		return nil, nil
	}
	nonce := payload[:sessionNonceSize]
	gone, err := c.st.SessionRevoked(r.Context(), hex.EncodeToString(nonce))
	if err != nil {
		return nil, err
	}
	if gone {
		return nil, nil
	}
	// A session lives no longer than its token: revoked or expired on
	// any node, it ends on every node at its next request.
	who, err := c.principalOf(r.Context(), [sha256.Size]byte(payload[sessionNonceSize+8:]))
	if err != nil || who == nil {
		return nil, err
	}
	return c.sessionOf(nonce, exp, who), nil
}

// cookieName is name, with the __Host- prefix when cookies are Secure:
// a browser then takes the cookie only from an HTTPS answer of this very
// host, with Path=/ and no Domain, so neither a page on plain HTTP nor a
// sibling subdomain can plant or overwrite it.
func (c *Console) cookieName(name string) string {
	if c.cfg.Secure {
		return "__Host-" + name
	}
	return name
}

func (c *Console) setCookie(w http.ResponseWriter, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: c.cookieName(name), Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: c.cfg.Secure, SameSite: http.SameSiteStrictMode,
	})
}

type authedHandler func(w http.ResponseWriter, r *http.Request, s *session)

// authed serves h to a valid session only, and checks the CSRF token of
// every POST. Without a session a GET goes to the login page and anything
// else is refused: before login nothing but the login page is shown.
func (c *Console) authed(h authedHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := c.readSession(r)
		if err != nil {
			c.dbFail(w, r, nil, err)
			return
		}
		if s == nil && c.cfg.Token == "" && r.Method == http.MethodGet {
			// No token: the API is open on loopback, so is the console;
			// the session only carries the CSRF token.
			who, _ := c.principalOf(r.Context(), [sha256.Size]byte{})
			value, ns, err := c.newSession([sha256.Size]byte{}, who)
			if err != nil {
				http.Error(w, "cannot make a session", http.StatusInternalServerError)
				return
			}
			c.setCookie(w, sessionCookie, value, int(c.cfg.SessionTTL.Seconds()))
			s = ns
		}
		if s == nil {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			http.Error(w, "log in first", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
			if subtle.ConstantTimeCompare([]byte(r.PostFormValue(csrfField)), []byte(s.CSRF)) != 1 {
				c.log.WithField("path", r.URL.Path).Warn("console: form without a valid CSRF token refused")
				c.fail(w, r, s, http.StatusForbidden, "This form has expired or did not come from this console. Reload the page and try again.")
				return
			}
		}
		h(w, r.WithContext(api.WithPrincipal(r.Context(), s.Who)), s)
	})
}

type loginData struct {
	CSRF, Next, Error string
	NoToken           bool
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	s, err := c.readSession(r)
	if err != nil {
		c.dbFail(w, r, nil, err)
		return
	}
	if s != nil || c.cfg.Token == "" {
		redirectAfterLogin(w, r, r.URL.Query().Get("next"))
		return
	}
	c.renderLogin(w, r, http.StatusOK, "")
}

// renderLogin shows the login form with a fresh login CSRF token, carried
// in a cookie as well (double submit): there is no session yet to tie it to.
func (c *Console) renderLogin(w http.ResponseWriter, r *http.Request, status int, msg string) {
	tok := make([]byte, 16)
	_, _ = rand.Read(tok)
	csrf := b64.EncodeToString(tok)
	c.setCookie(w, loginCSRFCookie, csrf, 3600)
	c.render(w, status, "login", &page{Title: "Log in", Data: loginData{CSRF: csrf, Next: localPath(r.FormValue("next")), Error: msg}})
}

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	ck, err := r.Cookie(c.cookieName(loginCSRFCookie))
	if err != nil || ck.Value == "" || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(r.PostFormValue(csrfField))) != 1 {
		c.renderLogin(w, r, http.StatusForbidden, "The login form expired. Try again.")
		return
	}
	if c.cfg.Token == "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	// Hashing first makes the comparison constant-time in the length too.
	got := sha256.Sum256([]byte(strings.TrimSpace(r.PostFormValue("token"))))
	who, err := c.principalOf(r.Context(), got)
	if err != nil {
		c.dbFail(w, r, nil, err)
		return
	}
	if who == nil {
		c.slowDown(r)
		c.log.WithField("remote", r.RemoteAddr).Info("console: failed login")
		c.renderLogin(w, r, http.StatusUnauthorized, "That is not the API token, nor a live named token (a scoped token cannot log in to the console: use the API or the CLI).")
		return
	}
	value, _, err := c.newSession(got, who)
	if err != nil {
		http.Error(w, "cannot make a session", http.StatusInternalServerError)
		return
	}
	c.setCookie(w, loginCSRFCookie, "", -1)
	c.setCookie(w, sessionCookie, value, int(c.cfg.SessionTTL.Seconds()))
	c.log.WithFields(logrus.Fields{"remote": r.RemoteAddr, "by": who.Name, "role": string(who.Role)}).Info("console: login")
	redirectAfterLogin(w, r, r.PostFormValue("next"))
}

// slowDown answers failed logins one at a time, each after the delay.
func (c *Console) slowDown(r *http.Request) {
	select {
	case c.failed <- struct{}{}:
	case <-r.Context().Done():
		return
	}
	defer func() { <-c.failed }()
	t := time.NewTimer(c.cfg.FailedLoginDelay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, s *session) {
	// The cookie dies in this browser, and a copy of it on every node of
	// the cluster, restarted or not, until it would have expired anyway.
	if err := c.st.RevokeSession(r.Context(), hex.EncodeToString([]byte(s.nonce)), s.expires, c.cfg.Now()); err != nil {
		// Not logged out: the browser keeps its cookie and can try again.
		c.dbFail(w, r, s, err)
		return
	}
	c.setCookie(w, sessionCookie, "", -1)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// redirectAfterLogin sends the browser to next, the page it asked for
// before logging in, when that is a page of this site; else to "/". Every
// redirect to a target the request chose goes through here.
func redirectAfterLogin(w http.ResponseWriter, r *http.Request, next string) {
	http.Redirect(w, r, localPath(next), http.StatusSeeOther)
}

// localPath returns p as a browser reads it in a Location header when that
// is a path of this site, else "/". A browser parses a URL after dropping
// leading and trailing C0 controls and spaces, and tab, CR and LF
// anywhere, and takes a backslash in the path for a slash: "/\t/evil"
// and "/\\evil" are "//evil", another host. So p is checked, and
// returned, in the form the browser will read, not the form it was sent in.
func localPath(p string) string {
	p = strings.TrimFunc(p, func(r rune) bool { return r <= ' ' })
	p = tabsAndNewlines.Replace(p)
	end := strings.IndexAny(p, "?#")
	if end < 0 {
		end = len(p)
	}
	p = strings.ReplaceAll(p[:end], `\`, "/") + p[end:]
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || !utf8.ValidString(p) ||
		strings.IndexFunc(p, func(r rune) bool { return r < ' ' || r == 0x7f }) >= 0 {
		return "/"
	}
	if u, err := url.Parse(p); err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return "/"
	}
	return p
}

var tabsAndNewlines = strings.NewReplacer("\t", "", "\n", "", "\r", "")
