package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/chimesched/chime/api"
)

// apiResult is the API's answer to an in-process call.
type apiResult struct {
	Status int
	Body   []byte
	// Err and Field are the API's error body, for a status >= 400.
	Err, Field string
}

func (r *apiResult) ok() bool { return r.Status < 300 }

// decode reads a success body into v.
func (r *apiResult) decode(v any) error { return json.Unmarshal(r.Body, v) }

// callAPI sends one request to the API's routes in-process, as the
// session's principal (in ctx), so the console's writes take the API's validation, store calls,
// hooks and log lines, and nothing else.
func (c *Console) callAPI(ctx context.Context, method, path string, body any) *apiResult {
	var rd *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return &apiResult{Status: http.StatusBadRequest, Err: fmt.Sprintf("cannot encode the form: %v", err)}
		}
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req := httptest.NewRequestWithContext(ctx, method, "http://localhost"+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	// The session's principal, never the configured token: the API
	// applies the role of whoever logged in.
	if api.PrincipalOf(ctx) == nil {
		return &apiResult{Status: http.StatusUnauthorized, Err: "log in first"}
	}
	rec := httptest.NewRecorder()
	c.api.ServeHTTP(rec, req)
	out := &apiResult{Status: rec.Code, Body: rec.Body.Bytes()}
	if rec.Code >= 400 {
		var e struct {
			Error string `json:"error"`
			Field string `json:"field"`
		}
		if json.Unmarshal(out.Body, &e) == nil && e.Error != "" {
			out.Err, out.Field = e.Error, e.Field
		} else {
			out.Err = strings.TrimSpace(string(out.Body))
		}
		// A field of a nested document (params.seconds) is shown at its
		// form field (params).
		out.Field, _, _ = strings.Cut(out.Field, ".")
	}
	return out
}
