package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/secrets"
)

// MaxSecretBytes bounds a secret's value.
const MaxSecretBytes = 64 << 10

// SecretView is a secret as the API shows it: its name and dates, never
// its value, nor its ciphertext.
type SecretView struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// SecretRequest sets a secret: its value as a JSON string (newlines and
// \u0000 allowed), or as base64 for bytes that are not UTF-8; one of the two.
type SecretRequest struct {
	Name        string          `json:"name"`
	Value       json.RawMessage `json:"value,omitempty"`
	ValueBase64 string          `json:"value_base64,omitempty"`
}

// RotateResult is the answer of POST /secrets/rotate.
type RotateResult struct {
	// KeyID is the current key, which every row rotated is sealed with.
	KeyID string `json:"key_id"`
	// Rotated were sealed with an old key and now with KeyID; Current
	// were already; Changed were set meanwhile (with KeyID).
	Rotated int `json:"rotated"`
	Current int `json:"current"`
	Changed int `json:"changed"`
}

func secretView(s *models.Secret) SecretView {
	return SecretView{Name: s.Name, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
}

// noKey is the answer of a node without a key: the request is sound, the
// node cannot serve it, and nothing was stored.
func noKey(err error) *apiError {
	return &apiError{status: http.StatusServiceUnavailable, Error: Error{Error: err.Error()}}
}

func (s *Server) listSecrets(w http.ResponseWriter, r *http.Request) *apiError {
	rows, err := s.st.Admin().ListSecrets(r.Context())
	if err != nil {
		return s.fromStore(r, err, "a secret")
	}
	out := make([]SecretView, len(rows))
	for i := range rows {
		out[i] = secretView(&rows[i])
	}
	s.writeJSON(w, r, http.StatusOK, List[SecretView]{Items: out})
	return nil
}

// secretValue reads the value of req; the error never quotes it.
func secretValue(req *SecretRequest) ([]byte, *apiError) {
	hasValue := len(bytes.TrimSpace(req.Value)) > 0 && string(bytes.TrimSpace(req.Value)) != "null"
	if hasValue == (req.ValueBase64 != "") {
		return nil, badRequest("value", "give the value as value (a JSON string) or value_base64, one of the two")
	}
	var v []byte
	if hasValue {
		var str string
		if err := json.Unmarshal(req.Value, &str); err != nil {
			return nil, badRequest("value", "value must be a JSON string")
		}
		v = []byte(str)
	} else {
		var err error
		if v, err = base64.StdEncoding.DecodeString(req.ValueBase64); err != nil {
			return nil, badRequest("value_base64", "value_base64 is not standard base64")
		}
	}
	if len(v) > MaxSecretBytes {
		return nil, badRequest("value", "the value has %d bytes; at most %d", len(v), MaxSecretBytes)
	}
	return v, nil
}

func (s *Server) setSecret(w http.ResponseWriter, r *http.Request) *apiError {
	var req SecretRequest
	if e := decodeBody(w, r, &req); e != nil {
		return e
	}
	if err := secrets.CheckName(req.Name); err != nil {
		return badRequest("name", "%v", err)
	}
	v, e := secretValue(&req)
	if e != nil {
		return e
	}
	sealed, err := s.cfg.Secrets.Seal(req.Name, v)
	clear(v)
	if err != nil {
		return noKey(err)
	}
	row := &models.Secret{Name: req.Name, Ciphertext: sealed.Ciphertext, Nonce: sealed.Nonce, KeyID: sealed.KeyID}
	created, err := s.st.Admin().PutSecret(r.Context(), row)
	if err != nil {
		return s.fromStore(r, err, "a secret")
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	s.changed(r, "secret set", logrus.Fields{"secret": row.Name, "created": created, "key_id": row.KeyID})
	s.writeJSON(w, r, status, secretView(row))
	return nil
}

func (s *Server) deleteSecret(w http.ResponseWriter, r *http.Request) *apiError {
	name := r.PathValue("name")
	if err := secrets.CheckName(name); err != nil {
		return badRequest("name", "%v", err)
	}
	if err := s.st.Admin().DeleteSecret(r.Context(), name); err != nil {
		return s.fromStore(r, err, "a secret")
	}
	s.changed(r, "secret deleted", logrus.Fields{"secret": name})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) rotateSecrets(w http.ResponseWriter, r *http.Request) *apiError {
	res, err := secrets.Rotate(r.Context(), s.st.Admin(), s.cfg.Secrets)
	switch {
	case errors.Is(err, secrets.ErrNoKey):
		return noKey(err)
	case secrets.IsPermanent(err):
		return conflict("", "%v; rotated %d before it: configure the key that row names, as an old key, and rotate again", err, res.Rotated)
	case err != nil:
		return s.fromStore(r, err, "a secret")
	}
	s.changed(r, "secrets rotated", logrus.Fields{"key_id": res.KeyID, "rotated": res.Rotated, "current": res.Current, "changed": res.Changed})
	s.writeJSON(w, r, http.StatusOK, RotateResult{KeyID: res.KeyID, Rotated: res.Rotated, Current: res.Current, Changed: res.Changed})
	return nil
}

// mayReferSecrets refuses a body that refers to a secret ({"$secret": …}
// anywhere, escaped or not) from a principal below admin: a task that
// echoes its params would hand the value to whoever wrote them. Only
// bodies that may hold such a key are decoded.
func mayReferSecrets(r *http.Request, body []byte) *apiError {
	p := PrincipalOf(r.Context())
	if p == nil || p.Role.Rank() >= models.RoleAdmin.Rank() || strings.HasPrefix(r.URL.Path, Prefix+"/secrets") {
		return nil
	}
	if !bytes.Contains(body, []byte(secrets.RefKey)) && !bytes.Contains(body, []byte(`\u`)) {
		return nil
	}
	var v any
	if json.Unmarshal(body, &v) != nil || !hasRefKey(v) {
		return nil // the handler answers malformed JSON
	}
	return forbidden("role %s may not refer to secrets in params; that needs role admin", p.Role)
}

func hasRefKey(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == secrets.RefKey || hasRefKey(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasRefKey(e) {
				return true
			}
		}
	}
	return false
}
