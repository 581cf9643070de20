package tasks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chimesched/chime/internal/strictjson"
)

// DecodeParams is Job.Bind for raw params; Validators use it to decode
// exactly as Execute will.
func DecodeParams(params json.RawMessage, v any) error {
	data := bytes.TrimSpace(params)
	if len(data) == 0 || bytes.Equal(data, []byte("null")) {
		data = []byte("{}")
	}
	if err := strictjson.Decode(data, v); err != nil {
		return paramsError(data, v, err)
	}
	return nil
}

// ParamError is a params error tied to one field.
type ParamError struct {
	Field string // JSON name, dotted for nested fields; "" for the whole document
	Err   error
}

func (e *ParamError) Error() string {
	if e.Field == "" {
		return "params: " + e.Err.Error()
	}
	return fmt.Sprintf("params: field %q: %v", e.Field, e.Err)
}

func (e *ParamError) Unwrap() error { return e.Err }

// FieldError builds the error a Validator returns for a bad field, worded
// like Bind's own.
func FieldError(field, format string, args ...any) error {
	return &ParamError{Field: field, Err: fmt.Errorf(format, args...)}
}

func paramsError(data []byte, v any, err error) error {
	var (
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
	)
	switch {
	case errors.Is(err, strictjson.ErrTrailing):
		return fmt.Errorf("params: %w", err)
	case errors.As(err, &syntaxErr):
		return fmt.Errorf("params: invalid JSON at offset %d: %w", syntaxErr.Offset, err)
	case errors.As(err, &typeErr) && typeErr.Field == "":
		return fmt.Errorf("params: must be a JSON object, got %s", typeErr.Value)
	case errors.As(err, &typeErr):
		return &ParamError{Field: typeErr.Field, Err: fmt.Errorf("expected %s, got JSON %s", strictjson.TypeName(typeErr.Type), typeErr.Value)}
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return fmt.Errorf("params: unknown field %s", rest)
	}
	// An error from a custom UnmarshalJSON (Duration, say) carries no field
	// name; find it by decoding the top-level fields one at a time.
	if field := strictjson.FailingField(data, v); field != "" {
		return &ParamError{Field: field, Err: errors.New(strings.TrimPrefix(msg, "json: "))}
	}
	return fmt.Errorf("params: %w", err)
}

// Duration is a params field written as a Go duration string ("250ms",
// "1m30s"). Negative values are rejected; "" and null mean zero.
type Duration time.Duration

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf(`expected a duration string such as "250ms" or "1m30s", got %s`, b)
	}
	if s == "" {
		*d = 0
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf(`invalid duration %q: expected e.g. "250ms" or "1m30s"`, s)
	}
	if v < 0 {
		return fmt.Errorf("duration %q must not be negative", s)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}
