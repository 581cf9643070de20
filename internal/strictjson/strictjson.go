// Package strictjson decodes JSON the way chime's inputs must be read:
// unknown fields and trailing data are errors, and when a field's own
// decoder fails without naming it, FailingField finds which field it was.
// Task params and API requests both go through it, so a typo is refused
// with the same message wherever it is made.
//
// strictjson imports only the standard library.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
)

// ErrTrailing is returned when data holds more than one JSON value.
var ErrTrailing = errors.New("unexpected data after the JSON object")

// Decode decodes data into v, refusing unknown fields and trailing data.
func Decode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return ErrTrailing
	}
	return nil
}

// FailingField returns the top-level field of the JSON object data that
// does not decode into a fresh value of v's type, or "" when none alone
// fails. It is for errors from a custom UnmarshalJSON, which carry no field
// name: decoding the fields one at a time finds it.
func FailingField(data []byte, v any) string {
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
		if Decode(one, reflect.New(rt.Elem()).Interface()) != nil {
			return k
		}
	}
	return ""
}

// TypeName says in words what JSON a Go type expects ("a string", "a list").
func TypeName(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return TypeName(t.Elem())
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
