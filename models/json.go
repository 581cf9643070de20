package models

import (
	"bytes"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"maps"
)

// JSON is a JSON document column. NULL and the empty document both read as
// nil, which callers treat as "{}".
type JSON json.RawMessage

// Value implements driver.Valuer.
func (j JSON) Value() (driver.Value, error) {
	if len(j) == 0 {
		return nil, nil
	}
	return string(j), nil
}

// Scan implements sql.Scanner.
func (j *JSON) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*j = nil
	case []byte:
		*j = append((*j)[:0], v...)
	case string:
		*j = JSON(v)
	default:
		return fmt.Errorf("models.JSON: cannot scan %T", src)
	}
	return nil
}

// MarshalJSON keeps the document as it is; nil becomes null.
func (j JSON) MarshalJSON() ([]byte, error) {
	if len(j) == 0 {
		return []byte("null"), nil
	}
	return j, nil
}

// UnmarshalJSON stores the raw document.
func (j *JSON) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*j = nil
		return nil
	}
	*j = append((*j)[:0], b...)
	return nil
}

// GormDataType lets GORM's migrator and dialects treat the field as JSON.
func (JSON) GormDataType() string { return "json" }

// MergeParams lays params over defaults key by key at the top level: the
// paper's ParameterContext, how a job's params come from its definition's
// default_params and its schedule's (or ad-hoc run's) params. NULL or empty
// on either side is an empty object; anything but an object is an error.
func MergeParams(defaults, params JSON) (JSON, error) {
	d, err := object(defaults, "default_params")
	if err != nil {
		return nil, err
	}
	p, err := object(params, "params")
	if err != nil {
		return nil, err
	}
	if len(p) == 0 {
		return defaults, nil
	}
	if len(d) == 0 {
		return params, nil
	}
	maps.Copy(d, p)
	out, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("merge params: %w", err)
	}
	return out, nil
}

func object(j JSON, what string) (map[string]json.RawMessage, error) {
	t := bytes.TrimSpace(j)
	if len(t) == 0 || string(t) == "null" {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(t, &m); err != nil {
		return nil, fmt.Errorf("%s is not a JSON object", what)
	}
	return m, nil
}
