package models

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
)

// The doors of the audit log: how a change reached the database.
const (
	AuditDoorAPI     = "api"
	AuditDoorConsole = "console"
	// AuditDoorCLI is an API request whose client said it is chime's CLI
	// (header X-Chime-Client: cli): claimed by the client, informational.
	AuditDoorCLI = "cli"
	// AuditDoorSQL is plain SQL: a session chime did not mark.
	AuditDoorSQL = "sql"
	// AuditDoorEngine is chime itself (a schedule completed or invalid).
	AuditDoorEngine = "engine"
)

// AuditEntry is one change of an admin object. Table audit_log, written by
// the database's triggers on the admin tables, whatever door the change
// came through (see sql/*/00027_audit_log.sql).
type AuditEntry struct {
	ID int64     `gorm:"column:id;primaryKey;autoIncrement" json:"id"`
	At time.Time `gorm:"column:at" json:"at"`
	// Actor is the token's name, or the database user for plain SQL.
	Actor string `gorm:"column:actor" json:"actor"`
	Door  string `gorm:"column:door" json:"door"`
	// Action is insert, update or delete.
	Action     string `gorm:"column:action" json:"action"`
	ObjectType string `gorm:"column:object_type" json:"object_type"`
	// ObjectID is the row's id, or its name for queues and configurations.
	ObjectID   string `gorm:"column:object_id" json:"object_id"`
	ObjectName string `gorm:"column:object_name" json:"object_name"`
	// Before and After are the row as JSON, secrets masked; nil for the
	// side an insert or a delete has not.
	Before *string `gorm:"column:before_json" json:"-"`
	After  *string `gorm:"column:after_json" json:"-"`
}

// TableName implements gorm's tabler.
func (AuditEntry) TableName() string { return "audit_log" }

// AuditMask stands for a secret in the audit log.
const AuditMask = "********"

// secretSettingWords are configs.IsSecret's words; the audit triggers
// carry the same list.
var secretSettingWords = []string{"password", "passwd", "secret", "token", "credential", "dsn"}

// MaskAuditRow applies the audit triggers' masking rules to row, the JSON
// of a row of the admin table of objectType: the values of params'
// "headers" and "env" objects, an alert channel's URL, signing key and
// header values, a token's hash and a secret setting's value are
// replaced by AuditMask. The API applies it again to what it reads, so a
// row written by an older or edited trigger shows no more. Text that is
// not a JSON object comes back as it is.
func MaskAuditRow(objectType string, row []byte) []byte {
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(row))
	d.UseNumber()
	if d.Decode(&m) != nil || m == nil {
		return row
	}
	set := func(k string) {
		if s, ok := m[k].(string); ok && s != "" {
			m[k] = AuditMask
		}
	}
	switch objectType {
	case "definition":
		m["default_params"] = maskParams(m["default_params"])
	case "schedule", "workflow_step":
		m["params"] = maskParams(m["params"])
	case "alert_channel":
		set("url")
		set("signing_key")
		switch h := m["headers"].(type) {
		case map[string]any:
			m["headers"] = maskValues(h)
		case string:
			var o map[string]any
			if json.Unmarshal([]byte(h), &o) == nil {
				m["headers"] = maskValues(o)
			} else {
				set("headers")
			}
		}
	case "api_token":
		set("token_sha256")
	case "secret":
		// Sealed already, but its length and nonce say nothing anyone
		// reading the log needs.
		set("ciphertext")
		set("nonce")
	case "configuration":
		name, _ := m["name"].(string)
		name = strings.ToLower(name)
		for _, w := range secretSettingWords {
			if strings.Contains(name, w) {
				set("value")
				break
			}
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return row
	}
	return out
}

func maskValues(o map[string]any) map[string]any {
	for k := range o {
		o[k] = AuditMask
	}
	return o
}

func maskParams(v any) any {
	p, ok := v.(map[string]any)
	if !ok {
		return v
	}
	for _, k := range []string{"headers", "env"} {
		if o, ok := p[k].(map[string]any); ok {
			p[k] = maskValues(o)
		}
	}
	return p
}
