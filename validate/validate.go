package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/secrets"
	"github.com/chimesched/chime/tasks"
)

// Column sizes from sql/mysql/00001_init.sql: a longer value would be cut
// or refused by MySQL, so it is refused here with a clear message first.
const (
	MaxName        = 191
	MaxDescription = 2048
	MaxEmails      = 2048
	MaxCronExpr    = 255
	MaxTimezone    = 64
	MaxConfigValue = 65535 // TEXT
)

// Error is a value a door refuses: Field names the field at fault by its
// JSON key, as the API's 400 answers do ("" when no one field is).
type Error struct {
	Field, Message string
}

func (e *Error) Error() string { return e.Message }

func errorf(field, format string, args ...any) *Error {
	return &Error{Field: field, Message: fmt.Sprintf(format, args...)}
}

// asError keeps a nil *Error a nil error.
func asError(e *Error) error {
	if e == nil {
		return nil
	}
	return e
}

// Text refuses a NUL in any text field of v, whatever the field:
// PostgreSQL cannot store one in text (SQLSTATE 22021) where SQLite and
// MySQL do, and no field has a use for it. v is what a request body was
// decoded into (or a row as a request would carry it); the field named is
// its JSON path. JSON documents (params) are raw bytes, where a NUL stays
// the escape \u0000, which every database stores.
func Text(v any) error {
	if f, ok := nulField(reflect.ValueOf(v), ""); ok {
		return errorf(f, "%s must not contain the NUL character (\\u0000)", f)
	}
	return nil
}

func nulField(v reflect.Value, path string) (string, bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return nulField(v.Elem(), path)
		}
	case reflect.String:
		return path, strings.IndexByte(v.String(), 0) >= 0
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			// encoding/json promotes the fields of an embedded struct
			// even when its type is unexported.
			promoted := f.Anonymous && f.Type.Kind() == reflect.Struct
			if (!f.IsExported() && !promoted) || name == "-" {
				continue
			}
			sub := path
			if !f.Anonymous || name != "" {
				if name == "" {
					name = f.Name
				}
				sub = joinPath(path, name)
			}
			if p, ok := nulField(v.Field(i), sub); ok {
				return p, true
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return "", false // json.RawMessage, []byte
		}
		for i := range v.Len() {
			if p, ok := nulField(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); ok {
				return p, true
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			k := fmt.Sprint(it.Key())
			if strings.IndexByte(k, 0) >= 0 {
				return path, true
			}
			if p, ok := nulField(it.Value(), joinPath(path, k)); ok {
				return p, true
			}
		}
	}
	return "", false
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// checkName applies the rules shared by definition, schedule and calendar
// names.
func checkName(name string) *Error {
	switch {
	case strings.TrimSpace(name) == "":
		return errorf("name", "name is required")
	case strings.TrimSpace(name) != name:
		return errorf("name", "name must not start or end with white space")
	case utf8.RuneCountInString(name) > MaxName:
		return errorf("name", "name is longer than %d characters", MaxName)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return errorf("name", "name must not contain control characters")
	case strings.Trim(name, "0123456789") == "":
		// The CLI reads an all-digit argument as an id.
		return errorf("name", "name must not be all digits; the CLI would read it as an id")
	}
	return nil
}

// checkInt32 checks an INT column: MySQL's INT is 32 bits.
func checkInt32(field string, v, minimum int64) *Error {
	if v < minimum || v > math.MaxInt32 {
		return errorf(field, "%s must be from %d to %d, got %d", field, minimum, math.MaxInt32, v)
	}
	return nil
}

// Priority checks a priority against the range the schema's CHECK
// constraints allow.
func Priority(v int64) error { return asError(checkPriority(v)) }

func checkPriority(v int64) *Error {
	if !models.ValidPriority(v) {
		return errorf("priority", "priority must be from %d (lowest) to %d (highest; the default is %d), got %d",
			models.PriorityMin, models.PriorityMax, models.PriorityDefault, v)
	}
	return nil
}

// Timezone checks the time zone a schedule or a calendar reads wall time
// in, and loads it: an IANA name every node resolves alike, so not
// "Local", and not "".
func Timezone(name string) (*time.Location, error) {
	loc, e := checkTimezone(name)
	return loc, asError(e)
}

func checkTimezone(name string) (*time.Location, *Error) {
	switch {
	case name == "":
		return nil, errorf("timezone", `timezone must not be empty; use "UTC" or an IANA name such as "Europe/Paris"`)
	case len(name) > MaxTimezone:
		return nil, errorf("timezone", "timezone is longer than %d characters", MaxTimezone)
	case name == "Local":
		// Local differs from node to node, and all nodes must agree on fire times.
		return nil, errorf("timezone", `timezone "Local" is not allowed: nodes may differ; use an IANA name such as "Europe/Paris"`)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, errorf("timezone", "unknown timezone %q: use an IANA name such as \"Europe/Paris\" or \"UTC\"", name)
	}
	return loc, nil
}

// Object checks that a params document is a JSON object (or absent, nil)
// and returns it compacted. Engines merge params key by key and tasks
// decode them into structs; any other JSON value fails every job.
func Object(field string, raw json.RawMessage) (models.JSON, error) {
	v, e := checkObject(field, raw)
	return v, asError(e)
}

func checkObject(field string, raw json.RawMessage) (models.JSON, *Error) {
	data := bytes.TrimSpace(raw)
	if len(data) == 0 || bytes.Equal(data, []byte("null")) {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, errorf(field, "%s must be a JSON object", field)
	}
	// Compact, so the column holds one canonical spelling.
	var b bytes.Buffer
	if err := json.Compact(&b, data); err != nil {
		return nil, errorf(field, "%s: %v", field, err)
	}
	return models.JSON(b.Bytes()), nil
}

// MergeParams is models.MergeParams for the doors. Both sides were
// checked to be objects at the door (or come from the table, which only
// the doors write), so a failure here is the row's fault, blamed on params.
func MergeParams(defaults, params models.JSON) (models.JSON, error) {
	v, e := mergeParams(defaults, params)
	return v, asError(e)
}

func mergeParams(defaults, params models.JSON) (models.JSON, *Error) {
	m, err := models.MergeParams(defaults, params)
	if err != nil {
		return nil, errorf("params", "%v", err)
	}
	return m, nil
}

// TaskParams runs the Validator of task type kind, if it has one, on
// params. field is the request field blamed ("default_params" or
// "params"); a task type reg does not register is blamed on task_type
// (a definition's own) or job_definition_id (the definition a run names).
func TaskParams(reg *tasks.Registry, kind, field string, params models.JSON) error {
	return asError(checkTaskParams(reg, kind, field, params))
}

func checkTaskParams(reg *tasks.Registry, kind, field string, params models.JSON) *Error {
	t, err := reg.New(kind)
	if err != nil {
		if field == "default_params" {
			return errorf("task_type", "%v", err)
		}
		// The definition names a task type this node does not register
		// (a plugin missing here, or a row written by SQL).
		return errorf("job_definition_id", "the job definition's task_type %q is not registered on this node (registered: %s)",
			kind, strings.Join(reg.Kinds(), ", "))
	}
	// A secret's reference is checked here for its form only; its value is
	// a worker's to read, at run time.
	checked, err := secrets.WithPlaceholders(params)
	if err != nil {
		return errorf(field, "%s: %v", field, err)
	}
	v, ok := t.(tasks.Validator)
	if !ok {
		return nil
	}
	if err := v.Validate(json.RawMessage(checked)); err != nil {
		var pe *tasks.ParamError
		if errors.As(err, &pe) && pe.Field != "" {
			field += "." + pe.Field
		}
		return errorf(field, "%s: %v", field, err)
	}
	return nil
}

func int64p(v *int) *int64 {
	if v == nil {
		return nil
	}
	n := int64(*v)
	return &n
}

func intp(v *int64) *int {
	if v == nil {
		return nil
	}
	n := int(*v)
	return &n
}

func utcp(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC().Truncate(time.Microsecond)
	return &u
}
