package sql

import (
	"fmt"
	"strings"
)

// Migration 00027's audit triggers repeat one rule per column of every
// admin table, for MySQL and SQLite (PostgreSQL has to_jsonb and needs no
// list). The rule is written once here.

func init() {
	generated["mysql/00027_audit_log.sql"] = mysqlAudit
	generated["sqlite/00027_audit_log.sql"] = sqliteAudit
}

// auditTable is an admin table whose every change the audit log keeps.
type auditTable struct {
	name       string
	objectType string
	key        string // the column naming a row: id, or name for queues and configurations
	hasName    bool
	cols       []string
}

// auditTables are the admin tables as of migration 00026; the audit
// migration is the last one that adds a column to any of them, and a
// later one that does must recreate their triggers
// (TestAuditTriggersCoverEveryColumn). jobs, job_logs,
// runs, alerts, notifications, nodes and leases are not among them: they
// are what chime does, not what someone set, and jobs is chime's hottest
// table.
var auditTables = []auditTable{
	{"job_definitions", "definition", "id", true, []string{"id", "name", "task_type", "description", "default_params", "timeout_seconds", "max_attempts", "retry_backoff_seconds", "notify_on", "notify_emails", "created_at", "updated_at", "requests_recovery", "priority", "queue", "max_running", "required_tags", "broadcast", "rate_limit", "rate_period_ms", "rate_tat_us"}},
	{"schedules", "schedule", "id", true, []string{"id", "name", "job_definition_id", "schedule_type", "cron_expr", "interval_seconds", "run_at", "timezone", "start_at", "end_at", "max_runs", "misfire_policy", "catchup_window_seconds", "concurrency", "params", "status", "status_reason", "created_at", "updated_at", "cron_syntax", "dst_policy", "calendar_id", "priority", "queue", "required_tags", "workflow_id"}},
	{"calendars", "calendar", "id", true, []string{"id", "name", "kind", "definition", "timezone", "description", "created_at", "updated_at"}},
	{"queues", "queue", "name", true, []string{"name", "description", "max_running", "rate_limit", "rate_period_ms", "rate_tat_us", "paused"}},
	{"workflows", "workflow", "id", true, []string{"id", "name", "description", "failure_policy", "created_at", "updated_at", "notify_on", "notify_emails"}},
	{"workflow_steps", "workflow_step", "id", true, []string{"id", "workflow_id", "name", "job_definition_id", "params", "timeout_seconds", "max_attempts", "wait_for", "created_at"}},
	{"workflow_edges", "workflow_edge", "id", false, []string{"id", "workflow_id", "from_step_id", "to_step_id", "condition"}},
	{"alert_channels", "alert_channel", "id", true, []string{"id", "name", "kind", "url", "recipients", "signing_key", "headers", "timeout_seconds", "enabled", "created_at", "updated_at"}},
	{"alert_rules", "alert_rule", "id", true, []string{"id", "name", "event", "scope", "definition_id", "schedule_id", "channel_id", "throttle_seconds", "params", "enabled", "created_at", "updated_at", "queue", "workflow_id"}},
	{"api_tokens", "api_token", "id", true, []string{"id", "name", "token_sha256", "role", "scope", "expires_at", "revoked_at", "created_at"}},
	{"configurations", "configuration", "name", true, []string{"name", "value", "description", "updated_at"}},
	{"secrets", "secret", "id", true, []string{"id", "name", "ciphertext", "nonce", "key_id", "created_at", "updated_at"}},
}

// auditMasks say how a column holding secrets is kept in the log
// (models.MaskAuditRow applies the same rules in Go):
//
//	params: a JSON object whose "headers" and "env" objects keep their
//	        keys, every value masked (an httpcall Authorization header, a
//	        shell job's password in its environment);
//	values: a JSON object of header values, every value masked;
//	set:    masked when not empty (a webhook URL is its token; a signing
//	        key; a token's hash);
//	config: masked when not empty and the setting's name is a secret's.
var auditMasks = map[string]string{
	"job_definitions.default_params": "params",
	"schedules.params":               "params",
	"workflow_steps.params":          "params",
	"alert_channels.url":             "set",
	"alert_channels.signing_key":     "set",
	"alert_channels.headers":         "values",
	"api_tokens.token_sha256":        "set",
	"configurations.value":           "config",
	"secrets.ciphertext":             "set",
	"secrets.nonce":                  "set",
}

// auditIgnored are columns whose change alone is no change: updated_at
// (a touch asks the engine to look again) and a queue's rate-limit clock,
// which claims move.
var auditIgnored = map[string]bool{"updated_at": true, "rate_tat_us": true}

// secretWords are configs.IsSecret's: a setting whose name holds one is a
// secret (smtp.password, api.token, database.dsn among them).
var secretWords = []string{"password", "passwd", "secret", "token", "credential", "dsn"}

const auditMask = "********"

const auditNote = `-- The audit log: one row per change of an admin object (job definitions,
-- schedules, calendars, queues, workflows and their steps and edges,
-- alert channels and rules, API tokens, configurations, secrets), whoever made it
-- and through whatever door. Triggers on those tables write the rows, in
-- the transaction of the change, so plain SQL is recorded as surely as the
-- API. chime marks its own transactions with who and which door (the
-- token's name; api, console, cli, or engine for chime's own changes):
-- PostgreSQL with set_config('chime.actor', ..., true) (transaction-local),
-- MySQL with the session variables @chime_actor and @chime_door, SQLite
-- with a row of audit_marker inserted and deleted inside the transaction
-- (SQLite has one writer at a time, so no other session can see it).
-- Without a mark the row says door 'sql' and the database user as actor.
-- before_json and after_json are the row as JSON with its secrets masked
-- (see docs/security.md); an update that changes only updated_at (or a
-- queue's rate-limit clock) writes no row. jobs and the other tables chime
-- writes as it works have no audit triggers: they are not admin objects,
-- and jobs is the hottest table. Retention deletes rows older than
-- retention_days, as for finished jobs. The triggers name each column: a
-- later migration that adds a column to one of these tables must create
-- its audit triggers again.
`

func mysqlAudit() string {
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }
	w(generatedNote)
	w("%s", auditNote)
	w(`
-- +goose Up
CREATE TABLE audit_log (
  id          BIGINT       NOT NULL AUTO_INCREMENT,
  at          DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  actor       VARCHAR(191) NOT NULL,
  door        VARCHAR(16)  NOT NULL,
  action      VARCHAR(16)  NOT NULL,
  object_type VARCHAR(32)  NOT NULL,
  object_id   VARCHAR(191) NOT NULL DEFAULT '',
  object_name VARCHAR(191) NOT NULL DEFAULT '',
  before_json LONGTEXT     NULL,
  after_json  LONGTEXT     NULL,
  PRIMARY KEY (id),
  KEY idx_audit_log_at (at),
  KEY idx_audit_log_object (object_type, object_id, id),
  KEY idx_audit_log_actor (actor, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
`)
	w("%s", mysqlTriggers(timeTable{"audit_log", []string{"at"}}))
	w(`
-- +goose StatementBegin
CREATE FUNCTION chime_audit_json(j LONGTEXT) RETURNS LONGTEXT
  DETERMINISTIC NO SQL
  COMMENT 'chime: j if it is JSON, else j as a JSON string'
BEGIN
  IF j IS NULL OR JSON_VALID(j) THEN
    RETURN j;
  END IF;
  RETURN JSON_QUOTE(j);
END
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION chime_audit_mask_values(j LONGTEXT) RETURNS LONGTEXT
  DETERMINISTIC NO SQL
  COMMENT 'chime: the JSON object j with every value masked'
BEGIN
  DECLARE ks LONGTEXT;
  DECLARE i INT DEFAULT 0;
  DECLARE masked LONGTEXT DEFAULT '{}';
  IF j IS NULL THEN
    RETURN j;
  END IF;
  IF j = '' OR NOT JSON_VALID(j) OR JSON_TYPE(j) <> 'OBJECT' THEN
    RETURN JSON_QUOTE(IF(j = '', '', '%[1]s'));
  END IF;
  SET ks = JSON_KEYS(j);
  WHILE i < JSON_LENGTH(ks) DO
    SET masked = JSON_MERGE_PATCH(masked, JSON_OBJECT(JSON_UNQUOTE(JSON_EXTRACT(ks, CONCAT('$[', i, ']'))), '%[1]s'));
    SET i = i + 1;
  END WHILE;
  RETURN masked;
END
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION chime_audit_mask_params(j LONGTEXT) RETURNS LONGTEXT
  DETERMINISTIC NO SQL
  COMMENT 'chime: params j with the values of its headers and env masked'
BEGIN
  IF j IS NULL OR NOT JSON_VALID(j) OR JSON_TYPE(j) <> 'OBJECT' THEN
    RETURN chime_audit_json(j);
  END IF;
  IF JSON_TYPE(JSON_EXTRACT(j, '$.headers')) = 'OBJECT' THEN
    SET j = JSON_REPLACE(j, '$.headers', JSON_EXTRACT(chime_audit_mask_values(JSON_EXTRACT(j, '$.headers')), '$'));
  END IF;
  IF JSON_TYPE(JSON_EXTRACT(j, '$.env')) = 'OBJECT' THEN
    SET j = JSON_REPLACE(j, '$.env', JSON_EXTRACT(chime_audit_mask_values(JSON_EXTRACT(j, '$.env')), '$'));
  END IF;
  RETURN j;
END
-- +goose StatementEnd
`, auditMask)
	for _, t := range auditTables {
		for _, op := range []string{"insert", "update", "delete"} {
			w("%s", mysqlAuditTrigger(t, op))
		}
	}
	w("\n-- +goose Down\n")
	for i := len(auditTables) - 1; i >= 0; i-- {
		for _, op := range []string{"delete", "update", "insert"} {
			w("DROP TRIGGER chime_audit_%s_%s;\n", auditTables[i].name, op)
		}
	}
	w("DROP FUNCTION chime_audit_mask_params;\nDROP FUNCTION chime_audit_mask_values;\nDROP FUNCTION chime_audit_json;\n")
	w("%s", mysqlDropTriggers("audit_log"))
	w("DROP TABLE audit_log;\n")
	return b.String()
}

// mysqlAuditValue is column c of row r (NEW or OLD) as the log keeps it.
func mysqlAuditValue(t auditTable, r, c string) string {
	v := r + ".`" + c + "`"
	switch auditMasks[t.name+"."+c] {
	case "params":
		return "JSON_EXTRACT(chime_audit_mask_params(" + v + "), '$')"
	case "values":
		return "JSON_EXTRACT(chime_audit_mask_values(" + v + "), '$')"
	case "set":
		return "IF(" + v + " <> '', '" + auditMask + "', " + v + ")"
	case "config":
		var likes []string
		for _, s := range secretWords {
			likes = append(likes, "LOWER("+r+".name) LIKE '%"+s+"%'")
		}
		return "IF(" + v + " <> '' AND (" + strings.Join(likes, " OR ") + "), '" + auditMask + "', " + v + ")"
	}
	if strings.HasSuffix(c, "params") || c == "definition" {
		// A JSON column: kept as JSON, not as a string of it.
		return "JSON_EXTRACT(chime_audit_json(" + v + "), '$')"
	}
	return v
}

func mysqlAuditRow(t auditTable, r string) string {
	var parts []string
	for _, c := range t.cols {
		parts = append(parts, "'"+c+"', "+mysqlAuditValue(t, r, c))
	}
	return "JSON_OBJECT(" + strings.Join(parts, ",\n      ") + ")"
}

func mysqlAuditTrigger(t auditTable, op string) string {
	r, before, after := "NEW", "NULL", mysqlAuditRow(t, "NEW")
	switch op {
	case "delete":
		r, before, after = "OLD", mysqlAuditRow(t, "OLD"), "NULL"
	case "update":
		before = mysqlAuditRow(t, "OLD")
	}
	name := "''"
	if t.hasName {
		name = "LEFT(" + r + ".name, 191)"
	}
	insert := fmt.Sprintf(`INSERT INTO audit_log (at, actor, door, action, object_type, object_id, object_name, before_json, after_json)
    VALUES (NOW(6), LEFT(IF(COALESCE(@chime_actor, '') = '', USER(), @chime_actor), 191),
      IF(COALESCE(@chime_actor, '') = '', 'sql', LEFT(@chime_door, 16)), '%s', '%s', LEFT(%s.%s, 191), %s,
      %s,
      %s);`, op, t.objectType, r, t.key, name, before, after)
	if op == "update" {
		var same []string
		for _, c := range t.cols {
			if !auditIgnored[c] {
				same = append(same, "OLD.`"+c+"` <=> NEW.`"+c+"`")
			}
		}
		insert = "IF NOT (" + strings.Join(same, " AND ") + ") THEN\n    " + insert + "\n  END IF;"
	}
	return fmt.Sprintf("\n-- +goose StatementBegin\nCREATE TRIGGER chime_audit_%s_%s AFTER %s ON %s FOR EACH ROW\nBEGIN\n  %s\nEND\n-- +goose StatementEnd\n",
		t.name, op, strings.ToUpper(op), t.name, insert)
}

func sqliteAudit() string {
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }
	w(generatedNote)
	w("%s", auditNote)
	w(`
-- +goose Up
CREATE TABLE audit_log (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  at          DATETIME NOT NULL DEFAULT (strftime('%%Y-%%m-%%d %%H:%%M:%%f+00:00','now')),
  actor       TEXT     NOT NULL,
  door        TEXT     NOT NULL,
  action      TEXT     NOT NULL,
  object_type TEXT     NOT NULL,
  object_id   TEXT     NOT NULL DEFAULT '',
  object_name TEXT     NOT NULL DEFAULT '',
  before_json TEXT     NULL,
  after_json  TEXT     NULL
);
CREATE INDEX idx_audit_log_at ON audit_log (at);
CREATE INDEX idx_audit_log_object ON audit_log (object_type, object_id, id);
CREATE INDEX idx_audit_log_actor ON audit_log (actor, id);

-- chime's mark: a row inserted at the start of its transaction and deleted
-- before the commit, so it is never there outside one.
CREATE TABLE audit_marker (
  actor TEXT NOT NULL,
  door  TEXT NOT NULL
);
`)
	for _, t := range auditTables {
		for _, op := range []string{"insert", "update", "delete"} {
			w("%s", sqliteAuditTrigger(t, op))
		}
	}
	w("\n-- +goose Down\n")
	for i := len(auditTables) - 1; i >= 0; i-- {
		for _, op := range []string{"delete", "update", "insert"} {
			w("DROP TRIGGER chime_audit_%s_%s;\n", auditTables[i].name, op)
		}
	}
	w("DROP TABLE audit_marker;\nDROP TABLE audit_log;\n")
	return b.String()
}

// sqliteMaskValues is the JSON object j with every value masked, as JSON.
func sqliteMaskValues(j string) string {
	return "(SELECT json_group_object(key, '" + auditMask + "') FROM json_each(" + j + "))"
}

// sqliteMaskParams masks the values of params p's headers and env.
func sqliteMaskParams(p string) string {
	m := p
	for _, k := range []string{"headers", "env"} {
		m = "CASE WHEN json_type(" + m + ", '$." + k + "') = 'object' THEN json_set(" + m + ", '$." + k + "', json(" +
			sqliteMaskValues("json_extract("+m+", '$."+k+"')") + ")) ELSE " + m + " END"
	}
	return m
}

func sqliteAuditValue(t auditTable, r, c string) string {
	v := r + `."` + c + `"`
	switch auditMasks[t.name+"."+c] {
	case "params":
		return "CASE WHEN json_valid(" + v + ") AND json_type(" + v + ") = 'object' THEN json(" + sqliteMaskParams(v) + ") ELSE " + v + " END"
	case "values":
		return "CASE WHEN " + v + " IS NULL OR " + v + " = '' THEN " + v + " WHEN json_valid(" + v + ") AND json_type(" + v + ") = 'object' THEN json(" +
			sqliteMaskValues(v) + ") ELSE '" + auditMask + "' END"
	case "set":
		return "CASE WHEN " + v + " <> '' THEN '" + auditMask + "' ELSE " + v + " END"
	case "config":
		var likes []string
		for _, s := range secretWords {
			likes = append(likes, "lower("+r+".name) LIKE '%"+s+"%'")
		}
		return "CASE WHEN " + v + " <> '' AND (" + strings.Join(likes, " OR ") + ") THEN '" + auditMask + "' ELSE " + v + " END"
	}
	if strings.HasSuffix(c, "params") || c == "definition" {
		return "CASE WHEN json_valid(" + v + ") THEN json(" + v + ") ELSE " + v + " END"
	}
	return v
}

func sqliteAuditRow(t auditTable, r string) string {
	var parts []string
	for _, c := range t.cols {
		parts = append(parts, "'"+c+"', "+sqliteAuditValue(t, r, c))
	}
	return "json_object(" + strings.Join(parts, ",\n      ") + ")"
}

func sqliteAuditTrigger(t auditTable, op string) string {
	r, before, after := "NEW", "NULL", sqliteAuditRow(t, "NEW")
	when := ""
	switch op {
	case "delete":
		r, before, after = "OLD", sqliteAuditRow(t, "OLD"), "NULL"
	case "update":
		before = sqliteAuditRow(t, "OLD")
		var same []string
		for _, c := range t.cols {
			if !auditIgnored[c] {
				same = append(same, `OLD."`+c+`" IS NEW."`+c+`"`)
			}
		}
		when = "\nWHEN NOT (" + strings.Join(same, " AND ") + ")"
	}
	name := "''"
	if t.hasName {
		name = "substr(" + r + ".name, 1, 191)"
	}
	event := strings.ToUpper(op)
	if op == "update" {
		// UPDATE OF: a statement that sets only ignored columns (a claim's
		// rate_tat_us, a touch of updated_at) is compiled without this
		// trigger, which SQLite compiles anew with every statement.
		var watched []string
		for _, c := range t.cols {
			if !auditIgnored[c] {
				watched = append(watched, `"`+c+`"`)
			}
		}
		event = "UPDATE OF " + strings.Join(watched, ", ")
	}
	return fmt.Sprintf(`
-- +goose StatementBegin
CREATE TRIGGER chime_audit_%[1]s_%[2]s AFTER %[3]s ON %[1]s FOR EACH ROW%[4]s
BEGIN
  INSERT INTO audit_log (actor, door, action, object_type, object_id, object_name, before_json, after_json)
  VALUES (COALESCE((SELECT actor FROM audit_marker ORDER BY rowid DESC LIMIT 1), 'sqlite'),
    COALESCE((SELECT door FROM audit_marker ORDER BY rowid DESC LIMIT 1), 'sql'),
    '%[2]s', '%[5]s', CAST(%[6]s.%[7]s AS TEXT), %[8]s,
    %[9]s,
    %[10]s);
END;
-- +goose StatementEnd
`, t.name, op, event, when, t.objectType, r, t.key, name, before, after)
}
