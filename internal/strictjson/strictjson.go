// Package strictjson decodes JSON the way chime's inputs must be read:
// unknown fields, trailing data, duplicate keys (at any depth) and keys
// that match a struct field only when case is ignored are errors, and when
// a field's own decoder fails without naming it, FailingField finds which
// field it was.
// Task params and API requests both go through it, so a typo is refused
// with the same message wherever it is made.
//
// strictjson imports only the standard library.
package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// ErrTrailing is returned when data holds more than one JSON value.
var ErrTrailing = errors.New("unexpected data after the JSON object")

// ErrTooDeep is returned for JSON nested deeper than maxDepth levels.
var ErrTooDeep = fmt.Errorf("JSON is nested deeper than %d levels", maxDepth)

// KeyError is a key Decode refuses before decoding: a duplicate, or one
// that names a struct field in another case. encoding/json would keep the
// last duplicate and match the other case, so the document would mean one
// thing to chime and maybe another to whatever else reads it.
type KeyError struct {
	// Path is the key with its position, e.g. "params.command" or "list[1].name".
	Path string
	// Field is the struct field's JSON name a case variant was taken for.
	Field string
}

func (e *KeyError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("key %q differs only in case from field %q; keys are case-sensitive", e.Path, e.Field)
	}
	return fmt.Sprintf("duplicate key %q", e.Path)
}

// maxDepth bounds the key check's recursion; encoding/json itself refuses
// nesting deeper than 10000, and no chime input comes near either.
const maxDepth = 1000

// Decode decodes data into v, refusing unknown fields, trailing data,
// duplicate keys and case variants of field names (a *KeyError).
func Decode(data []byte, v any) error {
	if err := checkKeys(data, reflect.TypeOf(v)); err != nil {
		return err
	}
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

// checkKeys walks the first JSON value of data alongside t (the target's
// type, nil when unknown) and returns a *KeyError for the first duplicate
// key or case variant of a field name. Malformed JSON is left for the
// decoder to report, with its offset.
func checkKeys(data []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	err := walk(dec, t, "", 0)
	var ke *KeyError
	switch {
	case errors.As(err, &ke):
		return ke
	case errors.Is(err, ErrTooDeep):
		return err
	}
	return nil
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// shape is structure's answer for one type.
type shape struct {
	fields   map[string]reflect.Type // read only once stored
	elem     reflect.Type
	isStruct bool
}

// shapes caches structure by type: every job's params are checked against
// the same few types, and working a struct's fields out again by
// reflection for each document cost a map and a walk of its fields per
// object decoded.
var shapes sync.Map // reflect.Type → shape

// structure is what walk needs to know of t: a struct's fields by JSON
// name, or the element type of a map, slice or array. A type with its own
// decoder is opaque: only duplicates are checked inside it.
func structure(t reflect.Type) (fields map[string]reflect.Type, elem reflect.Type, isStruct bool) {
	if t == nil {
		return nil, nil, false
	}
	if v, ok := shapes.Load(t); ok {
		s := v.(shape)
		return s.fields, s.elem, s.isStruct
	}
	fields, elem, isStruct = structureOf(t)
	shapes.Store(t, shape{fields: fields, elem: elem, isStruct: isStruct})
	return fields, elem, isStruct
}

func structureOf(t reflect.Type) (fields map[string]reflect.Type, elem reflect.Type, isStruct bool) {
	for t != nil && t.Kind() == reflect.Pointer {
		if t.Implements(unmarshalerType) || t.Implements(textUnmarshalerType) {
			return nil, nil, false
		}
		t = t.Elem()
	}
	if t == nil || reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return nil, nil, false
	}
	switch t.Kind() {
	case reflect.Struct:
		fields = map[string]reflect.Type{}
		addFields(t, fields, 0)
		return fields, nil, true
	case reflect.Map, reflect.Slice, reflect.Array:
		return nil, t.Elem(), false
	}
	return nil, nil, false
}

// addFields lists a struct's JSON names the way encoding/json does for the
// common cases: the tag's name or the Go name, "-" skipped, unexported
// fields skipped, untagged embedded structs flattened.
func addFields(t reflect.Type, out map[string]reflect.Type, depth int) {
	if depth > 10 {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				addFields(et, out, depth+1)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, ok := out[name]; !ok {
			out[name] = ft
		}
	}
}

func walk(dec *json.Decoder, t reflect.Type, path string, depth int) error {
	if depth > maxDepth {
		return ErrTooDeep
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	fields, elem, isStruct := structure(t)
	switch d {
	case '[':
		for i := 0; dec.More(); i++ {
			if err := walk(dec, elem, path+"["+strconv.Itoa(i)+"]", depth+1); err != nil {
				return err
			}
		}
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := kt.(string)
			kp := key
			if path != "" {
				kp = path + "." + key
			}
			if seen[key] {
				return &KeyError{Path: kp}
			}
			seen[key] = true
			next := elem
			if isStruct {
				ft, exact := fields[key]
				if !exact {
					for name := range fields {
						if strings.EqualFold(name, key) {
							return &KeyError{Path: kp, Field: name}
						}
					}
				}
				next = ft
			}
			if err := walk(dec, next, kp, depth+1); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}
