package api

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/models"
)

// TokenPrefix starts every token chime makes, so a leaked one is easy to
// recognise (by secret scanners too).
const TokenPrefix = "chime_"

// Bounds of a token's name and scope: the columns' VARCHAR(191).
const maxTokenName = 191

// WhoAmI is the answer of GET /whoami: the principal of the request.
type WhoAmI struct {
	Name  string      `json:"name"`
	Role  models.Role `json:"role"`
	Scope string      `json:"scope"`
}

// TokenView is an api_tokens row as the API shows it: never the hash.
type TokenView struct {
	ID        int64       `json:"id"`
	Name      string      `json:"name"`
	Role      models.Role `json:"role"`
	Scope     string      `json:"scope"`
	ExpiresAt *time.Time  `json:"expires_at"`
	RevokedAt *time.Time  `json:"revoked_at"`
	CreatedAt time.Time   `json:"created_at"`
	// Live is false once the token is revoked or expired, or when the
	// row's role is none chime knows.
	Live bool `json:"live"`
}

// NewToken is the answer of POST /tokens: the row and, this once, the
// token itself.
type NewToken struct {
	TokenView
	Token string `json:"token"`
}

type tokenRequest struct {
	Name      string      `json:"name"`
	Role      models.Role `json:"role"`
	Scope     string      `json:"scope"`
	ExpiresAt *time.Time  `json:"expires_at"`
}

func (s *Server) tokenView(t *models.APIToken) TokenView {
	return TokenView{ID: t.ID, Name: t.Name, Role: t.Role, Scope: t.Scope, ExpiresAt: t.ExpiresAt, RevokedAt: t.RevokedAt,
		CreatedAt: t.CreatedAt, Live: t.Live(s.now())}
}

func (s *Server) whoami(w http.ResponseWriter, r *http.Request) *apiError {
	p := PrincipalOf(r.Context())
	s.writeJSON(w, r, http.StatusOK, WhoAmI{Name: p.Name, Role: p.Role, Scope: p.Scope})
	return nil
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) *apiError {
	rows, err := s.st.Admin().ListTokens(r.Context())
	if err != nil {
		return s.fromStore(r, err, "an API token")
	}
	out := make([]TokenView, len(rows))
	for i := range rows {
		out[i] = s.tokenView(&rows[i])
	}
	s.writeJSON(w, r, http.StatusOK, List[TokenView]{Items: out})
	return nil
}

// checkTokenName refuses a name that is empty, too long, not UTF-8 or
// holds control characters or spaces: it is shown in logs and audit rows.
func checkTokenName(field, v string, empty bool) *apiError {
	switch {
	case v == "" && !empty:
		return badRequest(field, "%s is required", field)
	case len(v) > maxTokenName:
		return badRequest(field, "%s has %d bytes; at most %d", field, len(v), maxTokenName)
	case !utf8.ValidString(v) || strings.IndexFunc(v, func(c rune) bool { return unicode.IsControl(c) || unicode.IsSpace(c) }) >= 0:
		return badRequest(field, "%s must be UTF-8 without spaces or control characters", field)
	}
	return nil
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) *apiError {
	var req tokenRequest
	if e := decodeBody(w, r, &req); e != nil {
		return e
	}
	if e := checkTokenName("name", req.Name, false); e != nil {
		return e
	}
	if e := checkTokenName("scope", req.Scope, true); e != nil {
		return e
	}
	if req.Role.Rank() == 0 {
		return badRequest("role", "role must be one of viewer, operator, editor, admin; got %q", req.Role)
	}
	if req.Role == models.RoleAdmin && req.Scope != "" {
		return badRequest("scope", "an admin token cannot be scoped: it manages tokens and configurations, which every team shares")
	}
	if req.ExpiresAt != nil {
		if !req.ExpiresAt.After(s.now()) {
			return badRequest("expires_at", "expires_at must be in the future")
		}
		if err := models.CheckTime("expires_at", *req.ExpiresAt); err != nil {
			return badRequest("expires_at", "%v", err)
		}
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return &apiError{status: http.StatusInternalServerError, Error: Error{Error: "cannot make a random token"}}
	}
	token := TokenPrefix + base64.RawURLEncoding.EncodeToString(raw)
	t := &models.APIToken{Name: req.Name, TokenSHA256: HashToken(token), Role: req.Role, Scope: req.Scope, ExpiresAt: req.ExpiresAt}
	if err := s.st.Admin().CreateToken(r.Context(), t); err != nil {
		return s.fromStore(r, err, "an API token")
	}
	s.writeJSON(w, r, http.StatusCreated, NewToken{TokenView: s.tokenView(t), Token: token})
	return nil
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) *apiError {
	name := r.PathValue("name")
	if e := checkTokenName("name", name, false); e != nil {
		return e
	}
	t, err := s.st.Admin().RevokeToken(r.Context(), name, s.now())
	if err != nil {
		return s.fromStore(r, err, "an API token")
	}
	s.writeJSON(w, r, http.StatusOK, s.tokenView(t))
	return nil
}

// changed logs a change at info with who made it and through what door.
func (s *Server) changed(r *http.Request, msg string, f logrus.Fields) {
	if p := PrincipalOf(r.Context()); p != nil {
		f["by"], f["via"] = p.Name, p.Via
	}
	s.log.WithFields(f).Info("api: " + msg)
}

// refused logs a request its principal's role or scope does not allow,
// at info: who, what route, never the object or the body.
func (s *Server) refused(r *http.Request, e *apiError) {
	f := logrus.Fields{"method": r.Method, "route": r.Pattern}
	if p := PrincipalOf(r.Context()); p != nil {
		f["by"], f["role"], f["via"] = p.Name, string(p.Role), p.Via
		if p.Scope != "" {
			f["scope"] = p.Scope
		}
	}
	s.log.WithFields(f).Info("api: request refused by role or scope")
}
