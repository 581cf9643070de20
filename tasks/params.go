package tasks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"time"
)

// DecodeParams is Job.Bind for raw params; Validators use it to decode
// exactly as Execute will.
func DecodeParams(params json.RawMessage, v any) error {
	data := bytes.TrimSpace(params)
	if len(data) == 0 || bytes.Equal(data, []byte("null")) {
		data = []byte("{}")
	}
	if err := decodeStrict(data, v); err != nil {
		return paramsError(data, v, err)
	}
	return nil
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errTrailing
	}
	return nil
}

var errTrailing = errors.New("params: unexpected data after the JSON object")

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
	case errors.Is(err, errTrailing):
		return err
	case errors.As(err, &syntaxErr):
		return fmt.Errorf("params: invalid JSON at offset %d: %w", syntaxErr.Offset, err)
	case errors.As(err, &typeErr) && typeErr.Field == "":
		return fmt.Errorf("params: must be a JSON object, got %s", typeErr.Value)
	case errors.As(err, &typeErr):
		return &ParamError{Field: typeErr.Field, Err: fmt.Errorf("expected %s, got JSON %s", typeName(typeErr.Type), typeErr.Value)}
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return fmt.Errorf("params: unknown field %s", rest)
	}
	// An error from a custom UnmarshalJSON (Duration, say) carries no field
	// name; find it by decoding the top-level fields one at a time.
	if field := failingField(data, v); field != "" {
		return &ParamError{Field: field, Err: errors.New(strings.TrimPrefix(msg, "json: "))}
	}
	return fmt.Errorf("params: %w", err)
}

func failingField(data []byte, v any) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(data, &fields) != nil {
		return ""
	}
	rt := reflect.TypeOf(v)
	if rt == nil || rt.Kind() != reflect.Pointer {
		return ""
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		one, err := json.Marshal(map[string]json.RawMessage{k: fields[k]})
		if err != nil {
			continue
		}
		if decodeStrict(one, reflect.New(rt.Elem()).Interface()) != nil {
			return k
		}
	}
	return ""
}

func typeName(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
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
