package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/strictjson"
)

// maxBody bounds a request body; no admin request comes near it.
const maxBody = 1 << 20

// Error is the body of every error answer.
type Error struct {
	// Error says what is wrong, in words an admin can act on.
	Error string `json:"error"`
	// Field names the request field at fault (a JSON key, a query
	// parameter or a path segment), when there is one.
	Field string `json:"field,omitempty"`
}

// apiError is an error with its HTTP status, returned by handlers.
type apiError struct {
	status int
	Error
}

func badRequest(field, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, Error: Error{Error: fmt.Sprintf(format, args...), Field: field}}
}

func notFound(format string, args ...any) *apiError {
	return &apiError{status: http.StatusNotFound, Error: Error{Error: fmt.Sprintf(format, args...)}}
}

func conflict(field, format string, args ...any) *apiError {
	return &apiError{status: http.StatusConflict, Error: Error{Error: fmt.Sprintf(format, args...), Field: field}}
}

// fromStore maps a store error to an answer: ErrNotFound is 404, a
// ErrConflict, ErrInUse and ErrJobState are 409, anything else is a 500
// whose detail goes to the log, not to the client.
func (s *Server) fromStore(r *http.Request, err error, what string) *apiError {
	switch {
	case errors.Is(err, chimedb.ErrNotFound):
		return notFound("%s", trimSentinel(err))
	case errors.Is(err, chimedb.ErrConflict):
		return conflict("name", "%s already exists with that name", what)
	case errors.Is(err, chimedb.ErrInUse), errors.Is(err, chimedb.ErrJobState):
		return conflict("", "%s", trimSentinel(err))
	}
	s.log.WithError(err).WithField("path", r.URL.Path).Error("api: database error")
	return &apiError{status: http.StatusInternalServerError, Error: Error{Error: "internal error while accessing the database; see the server log"}}
}

// trimSentinel drops the ": not found" style suffix the store wraps in, as
// the message before it already says it in full.
func trimSentinel(err error) string {
	msg := err.Error()
	for _, e := range []error{chimedb.ErrInUse, chimedb.ErrJobState} {
		if m, ok := strings.CutSuffix(msg, ": "+e.Error()); ok {
			return m
		}
	}
	if m, ok := strings.CutSuffix(msg, ": "+chimedb.ErrNotFound.Error()); ok {
		return m + " does not exist"
	}
	return msg
}

// writeJSON is the one way an answer is written. It encodes v before
// anything goes out, so a value that cannot be encoded is a 500 whose cause
// is logged, never a 200 cut short; nothing a row holds can still do that
// (see shown), so such a 500 is a bug to report.
func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		s.log.WithError(err).WithFields(logrus.Fields{"method": r.Method, "path": r.URL.Path, "status": status}).
			Error("api: cannot encode the answer; answering 500 instead")
		b.Reset()
		status = http.StatusInternalServerError
		_ = enc.Encode(Error{Error: "internal error: the answer could not be encoded; see the server log"})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, e *apiError) {
	s.writeJSON(w, r, e.status, e.Error)
}

// decodeBody decodes a JSON object strictly into v: unknown fields, wrong
// types, trailing data and an empty body are 400s naming the field.
// v may be pre-filled; keys absent from the body keep their values, which
// is how defaults (create) and partial updates (PATCH) work.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) *apiError {
	body, e := readBody(w, r)
	if e != nil {
		return e
	}
	return decodeJSON(body, v)
}

// readBody reads a request body up to maxBody.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, &apiError{status: http.StatusRequestEntityTooLarge, Error: Error{Error: fmt.Sprintf("request body is larger than %d bytes", maxBody)}}
		}
		return nil, badRequest("", "read request body: %v", err)
	}
	if e := mayReferSecrets(r, body); e != nil {
		return nil, e
	}
	return body, nil
}

// decodeOptionalBody is decodeBody for requests whose body may be empty,
// which leaves v as it is.
func decodeOptionalBody(w http.ResponseWriter, r *http.Request, v any) *apiError {
	body, e := readBody(w, r)
	if e != nil {
		return e
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	return decodeJSON(body, v)
}

// decodeJSON is decodeBody without the HTTP: the fuzz target calls it.
func decodeJSON(body []byte, v any) *apiError {
	data := bytes.TrimSpace(body)
	if len(data) == 0 {
		return badRequest("", "request body is empty; send a JSON object")
	}
	if data[0] != '{' {
		if !json.Valid(data) {
			return badRequest("", "malformed JSON: %v", syntaxError(data))
		}
		return badRequest("", "request body must be a JSON object")
	}
	if err := strictjson.Decode(data, v); err != nil {
		return decodeError(data, v, err)
	}
	return checkText(v)
}

func syntaxError(data []byte) error {
	var x any
	return json.Unmarshal(data, &x)
}

func decodeError(data []byte, v any, err error) *apiError {
	var (
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
	)
	var keyErr *strictjson.KeyError
	switch {
	case errors.As(err, &keyErr):
		return badRequest(keyErr.Path, "%v", keyErr)
	case errors.Is(err, strictjson.ErrTrailing), errors.Is(err, strictjson.ErrTooDeep):
		return badRequest("", "malformed JSON: %v", err)
	case errors.As(err, &syntaxErr):
		return badRequest("", "malformed JSON at offset %d: %v", syntaxErr.Offset, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("", "malformed JSON: the body ends in the middle of a value")
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return badRequest(typeErr.Field, "field %s: expected %s, got JSON %s", typeErr.Field, strictjson.TypeName(typeErr.Type), typeErr.Value)
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		field := strings.Trim(rest, `"`)
		return badRequest(field, "unknown field %s; see /api/v1/openapi.json for the accepted fields", rest)
	}
	// An error from a field's own UnmarshalJSON (time.Time, say) names no
	// field; find it by decoding the top-level keys one at a time.
	field := strictjson.FailingField(data, v)
	msg = strings.TrimPrefix(msg, "json: ")
	if field != "" {
		if strings.Contains(msg, "parsing time") || strings.Contains(msg, "Time.UnmarshalJSON") {
			return badRequest(field, "field %s: expected an RFC 3339 time string such as \"2025-01-02T15:04:05Z\" (%s)", field, msg)
		}
		return badRequest(field, "field %s: %s", field, msg)
	}
	return badRequest("", "malformed request: %s", msg)
}
