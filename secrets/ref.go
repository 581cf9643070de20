package secrets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// RefKey is the one key of a reference object: {"$secret": "NAME"}.
const RefKey = "$secret"

// Placeholder stands for a reference's value when params are checked at
// the API's door, where the value is neither known nor wanted: a task's
// Validator sees a string where the reference is.
const Placeholder = "(secret)"

// MaxNameLen bounds a secret's name: the column is VARCHAR(191).
const MaxNameLen = 191

// CheckName refuses a name that is empty, too long, or has anything but
// ASCII letters, digits and - _ . / : it is shown in logs, URLs and on
// the console.
func CheckName(name string) error {
	switch {
	case name == "":
		return errors.New("a secret's name is required")
	case len(name) > MaxNameLen:
		return fmt.Errorf("a secret's name has %d bytes; at most %d", len(name), MaxNameLen)
	case !utf8.ValidString(name) || strings.IndexFunc(name, func(r rune) bool {
		return r > unicode.MaxASCII || !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("-_./", r)
	}) >= 0:
		return fmt.Errorf("a secret's name may hold only ASCII letters, digits, '-', '_', '.' and '/'; got %q", name)
	}
	return nil
}

// errBadRef marks a malformed reference.
var errBadRef = errors.New("bad secret reference")

// HasRefs is a cheap test for params that may hold a reference; Refs
// says for sure. A key may be spelt with escapes ("\u0024secret"), so
// params with any escape are looked at too.
func HasRefs(params []byte) bool {
	return bytes.Contains(params, []byte(`"$secret"`)) || bytes.Contains(params, []byte(`\u`))
}

// Refs lists the names params refer to, sorted and once each. An object
// with a "$secret" key that is not a reference ({"$secret": 5}, or other
// keys beside it) is an error: a typo there would otherwise send the
// object to the task as it is.
func Refs(params []byte) ([]string, error) {
	if !HasRefs(params) {
		return nil, nil
	}
	var names []string
	_, _, err := walk(params, func(name string) (any, error) {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
		return Placeholder, nil
	})
	slices.Sort(names)
	return names, err
}

// WithPlaceholders returns params with every reference replaced by
// Placeholder, for a task's Validator; params themselves when they hold
// none.
func WithPlaceholders(params []byte) ([]byte, error) {
	if !HasRefs(params) {
		return params, nil
	}
	out, _, err := walk(params, func(string) (any, error) { return Placeholder, nil })
	return out, err
}

// Resolve returns params with every reference replaced by the value
// lookup gives for its name, as a JSON string, and the values it put in
// (for masking). Params without references come back as they are.
func Resolve(params []byte, lookup func(name string) (string, error)) ([]byte, []string, error) {
	if !HasRefs(params) {
		return params, nil, nil
	}
	var values []string
	out, _, err := walk(params, func(name string) (any, error) {
		v, err := lookup(name)
		if err != nil {
			return nil, err
		}
		values = append(values, v)
		return v, nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, values, nil
}

// walk decodes params, replaces each reference by what fn returns and
// encodes the result; numbers keep their text.
func walk(params []byte, fn func(name string) (any, error)) ([]byte, bool, error) {
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false, fmt.Errorf("params: %w (%w)", err, errBadRef)
	}
	found := false
	v, err := replace(v, "", fn, &found)
	if err != nil {
		return nil, found, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	// A value is kept byte for byte: <, > and & are not escaped.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, found, fmt.Errorf("params: %w", err)
	}
	return bytes.TrimRight(b.Bytes(), "\n"), found, nil
}

func replace(v any, path string, fn func(string) (any, error), found *bool) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if raw, ok := x[RefKey]; ok {
			name, isString := raw.(string)
			if !isString || len(x) != 1 {
				return nil, fmt.Errorf("params%s: a secret reference is an object with the one key %q and a secret's name as a string: %w", path, RefKey, errBadRef)
			}
			if err := CheckName(name); err != nil {
				return nil, fmt.Errorf("params%s: %w (%w)", path, err, errBadRef)
			}
			*found = true
			return fn(name)
		}
		for k, e := range x {
			r, err := replace(e, path+"."+k, fn, found)
			if err != nil {
				return nil, err
			}
			x[k] = r
		}
	case []any:
		for i, e := range x {
			r, err := replace(e, fmt.Sprintf("%s[%d]", path, i), fn, found)
			if err != nil {
				return nil, err
			}
			x[i] = r
		}
	}
	return v, nil
}
