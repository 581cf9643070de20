package models

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
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
