package store_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// auditRows returns the audit rows of one object, oldest first.
func auditRows(t *testing.T, st *store.Store, objectType, objectID string) []models.AuditEntry {
	t.Helper()
	rows, err := st.ListAudit(context.Background(), &chimedb.AuditListParams{ObjectType: objectType, ObjectID: objectID, Limit: 100})
	require.NoError(t, err)
	for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
		rows[i], rows[j] = rows[j], rows[i]
	}
	return rows
}

func sqlUser(st *store.Store) string {
	switch st.Dialect() {
	case store.SQLite:
		return "sqlite"
	case store.Postgres:
		var u string
		st.DB().Raw("SELECT current_user").Scan(&u)
		return u
	}
	var u string
	st.DB().Raw("SELECT USER()").Scan(&u)
	return u
}

const secretParams = `{"url": "https://erp.example/x", "headers": {"Authorization": "Bearer s3cr3t-header"}, "env": {"PGPASSWORD": "s3cr3t-env"}, "command": "true"}`

// requireMasked checks that no secret of the test reached the log.
func requireMasked(t *testing.T, rows []models.AuditEntry) {
	t.Helper()
	for _, r := range rows {
		for _, side := range []*string{r.Before, r.After} {
			if side == nil {
				continue
			}
			for _, secret := range []string{"s3cr3t", "hooks.example/T0", "sign-key", "0123456789abcdef"} {
				require.NotContains(t, *side, secret, "%s %s", r.ObjectType, r.Action)
			}
		}
	}
}

// TestAuditPlainSQL: changes made with plain SQL, by no chime, are in the
// log with the database user and door sql, before and after, secrets
// masked; an update of updated_at alone writes no row.
func TestAuditPlainSQL(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		require.NoError(t, db.Exec(`INSERT INTO job_definitions (name, task_type, default_params) VALUES ('audit.sql', 'shell', ?)`, secretParams).Error)
		var id int64
		require.NoError(t, db.Raw(`SELECT id FROM job_definitions WHERE name = 'audit.sql'`).Scan(&id).Error)
		require.NoError(t, db.Exec(`UPDATE job_definitions SET description = 'changed' WHERE id = ?`, id).Error)
		require.NoError(t, db.Exec(`UPDATE job_definitions SET updated_at = ? WHERE id = ?`, time.Now().UTC().Add(time.Hour), id).Error)
		require.NoError(t, db.Exec(`DELETE FROM job_definitions WHERE id = ?`, id).Error)

		rows := auditRows(t, st, "definition", itoa(id))
		require.Len(t, rows, 3)
		for i, action := range []string{"insert", "update", "delete"} {
			r := rows[i]
			require.Equal(t, action, r.Action)
			require.Equal(t, models.AuditDoorSQL, r.Door)
			require.Equal(t, sqlUser(st), r.Actor)
			require.Equal(t, "audit.sql", r.ObjectName)
			require.WithinDuration(t, time.Now(), r.At, time.Hour)
		}
		require.Nil(t, rows[0].Before)
		require.Nil(t, rows[2].After)
		var before, after map[string]any
		require.NoError(t, json.Unmarshal([]byte(*rows[1].Before), &before))
		require.NoError(t, json.Unmarshal([]byte(*rows[1].After), &after))
		require.Equal(t, "", before["description"])
		require.Equal(t, "changed", after["description"])
		p := after["default_params"].(map[string]any)
		require.Equal(t, models.AuditMask, p["headers"].(map[string]any)["Authorization"])
		require.Equal(t, models.AuditMask, p["env"].(map[string]any)["PGPASSWORD"])
		require.Equal(t, "https://erp.example/x", p["url"])
		requireMasked(t, rows)

		// Secrets of the other admin tables.
		require.NoError(t, db.Exec(`INSERT INTO alert_channels (name, kind, url, signing_key, headers) VALUES ('audit.ch', 'webhook', 'https://hooks.example/T0/secret', 'sign-key', '{"X-Key": "s3cr3t-h"}')`).Error)
		require.NoError(t, db.Exec(`INSERT INTO configurations (name, value) VALUES ('smtp.password', 's3cr3t-smtp'), ('log.level', 'debug')`).Error)
		require.NoError(t, db.Exec(`INSERT INTO api_tokens (name, token_sha256, role) VALUES ('audit.tok', '0123456789abcdef', 'viewer')`).Error)
		var all []models.AuditEntry
		for _, ty := range []string{"alert_channel", "configuration", "api_token"} {
			got := auditRows(t, st, ty, "")
			require.NotEmpty(t, got, ty)
			all = append(all, got...)
		}
		requireMasked(t, all)
		var ch map[string]any
		require.NoError(t, json.Unmarshal([]byte(*auditRows(t, st, "alert_channel", "")[0].After), &ch))
		require.Equal(t, map[string]any{"X-Key": models.AuditMask}, ch["headers"])
		require.Contains(t, *auditRows(t, st, "configuration", "log.level")[0].After, "debug")
	})
}

// TestAuditMarked: a change chime makes for a principal is logged once,
// with its name and door, in the transaction of the change.
func TestAuditMarked(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := chimedb.WithActor(context.Background(), chimedb.Actor{Name: "alice", Door: models.AuditDoorAPI})
		d := models.JobDefinition{Name: "audit.marked", TaskType: "shell", DefaultParams: models.JSON(secretParams), MaxAttempts: 1, NotifyOn: models.NotifyNever, Queue: "default"}
		require.NoError(t, st.Admin().CreateDefinition(ctx, &d))
		d.Description = "x"
		require.NoError(t, st.Admin().UpdateDefinition(ctx, &d))
		// The same pooled connections, unmarked, are plain SQL again.
		for range 4 {
			require.NoError(t, st.Admin().UpdateDefinition(context.Background(), &d))
		}
		require.NoError(t, st.DB().Exec(`UPDATE job_definitions SET description = 'by hand' WHERE id = ?`, d.ID).Error)
		rows := auditRows(t, st, "definition", itoa(d.ID))
		require.Len(t, rows, 3)
		require.Equal(t, []string{"alice", "alice", sqlUser(st)}, []string{rows[0].Actor, rows[1].Actor, rows[2].Actor})
		require.Equal(t, []string{"api", "api", "sql"}, []string{rows[0].Door, rows[1].Door, rows[2].Door})
		requireMasked(t, rows)

		// A failed marked change leaves no row and no mark behind.
		dup := models.JobDefinition{Name: "audit.marked", TaskType: "shell", MaxAttempts: 1, NotifyOn: models.NotifyNever, Queue: "default"}
		require.Error(t, st.Admin().CreateDefinition(ctx, &dup))
		require.NoError(t, st.DB().Exec(`UPDATE job_definitions SET description = 'by hand again' WHERE id = ?`, d.ID).Error)
		rows = auditRows(t, st, "definition", itoa(d.ID))
		require.Len(t, rows, 4)
		require.Equal(t, "sql", rows[3].Door)

		// The engine's own change.
		require.NoError(t, st.MarkInvalid(context.Background(), &chimedb.MarkInvalidParams{ScheduleID: mkSchedule(t, st, d.ID), Reason: "bad", Now: time.Now()}))
		srows := auditRows(t, st, "schedule", "")
		require.Equal(t, models.AuditDoorEngine, srows[len(srows)-1].Door)
		require.Equal(t, "chime", srows[len(srows)-1].Actor)

		// Retention.
		n, err := st.DeleteOldAudit(context.Background(), time.Hour, 100)
		require.NoError(t, err)
		require.Zero(t, n)
		require.NoError(t, st.DB().Exec(`UPDATE audit_log SET at = ? WHERE object_type = 'schedule'`, time.Now().UTC().Add(-48*time.Hour)).Error)
		n, err = st.DeleteOldAudit(context.Background(), 24*time.Hour, 100)
		require.NoError(t, err)
		require.Equal(t, len(srows), n)
	})
}

func mkSchedule(t *testing.T, st *store.Store, defID int64) int64 {
	t.Helper()
	s := models.Schedule{Name: "audit.s." + strings.ReplaceAll(t.Name(), "/", "."), JobDefinitionID: defID, ScheduleType: models.ScheduleInterval,
		IntervalSeconds: ptr(60), Timezone: "UTC", MisfirePolicy: models.MisfireFireOnce, Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive}
	require.NoError(t, st.Admin().CreateSchedule(context.Background(), &s))
	return s.ID
}

func itoa(id int64) string { return strconv.FormatInt(id, 10) }

// TestAuditEveryAdminTable: an insert, an update and a delete by plain SQL
// of each admin table are three rows of the log, on every database.
func TestAuditEveryAdminTable(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "audit.every"})
		ch := models.AlertChannel{Name: "audit.every", Kind: models.ChannelWebhook, URL: "https://hooks.example/T0", TimeoutSeconds: 5, Enabled: true}
		require.NoError(t, st.SaveAlertChannel(context.Background(), &ch))
		cases := []struct {
			objectType, insert, update, delete, key string
		}{
			{"definition", `INSERT INTO job_definitions (name, task_type) VALUES ('t.def', 'sleep')`,
				`UPDATE job_definitions SET max_attempts = 3 WHERE name = 't.def'`, `DELETE FROM job_definitions WHERE name = 't.def'`, ""},
			{"schedule", `INSERT INTO schedules (name, job_definition_id, schedule_type, interval_seconds) VALUES ('t.s', ` + itoa(def.ID) + `, 'interval', 60)`,
				`UPDATE schedules SET status = 'paused' WHERE name = 't.s'`, `DELETE FROM schedules WHERE name = 't.s'`, ""},
			{"calendar", `INSERT INTO calendars (name, kind, definition) VALUES ('t.c', 'holiday', '{"dates": ["2030-01-01"]}')`,
				`UPDATE calendars SET description = 'x' WHERE name = 't.c'`, `DELETE FROM calendars WHERE name = 't.c'`, ""},
			{"queue", `INSERT INTO queues (name) VALUES ('t.q')`,
				`UPDATE queues SET max_running = 2 WHERE name = 't.q'`, `DELETE FROM queues WHERE name = 't.q'`, "t.q"},
			{"workflow", `INSERT INTO workflows (name) VALUES ('t.w')`,
				`UPDATE workflows SET description = 'x' WHERE name = 't.w'`, `DELETE FROM workflows WHERE name = 't.w'`, ""},
			{"workflow_step", `INSERT INTO workflow_steps (workflow_id, name, job_definition_id, params) VALUES (1, 't.st', ` + itoa(def.ID) + `, '{"headers": {"Authorization": "s3cr3t"}}')`,
				`UPDATE workflow_steps SET wait_for = 'any' WHERE name = 't.st'`, `DELETE FROM workflow_steps WHERE name = 't.st'`, ""},
			{"workflow_edge", `INSERT INTO workflow_edges (workflow_id, from_step_id, to_step_id) VALUES (987, 1, 2)`,
				`UPDATE workflow_edges SET ` + quoteIdent(st, "condition") + ` = 'always' WHERE workflow_id = 987`, `DELETE FROM workflow_edges WHERE workflow_id = 987`, ""},
			{"alert_channel", `INSERT INTO alert_channels (name, kind, url) VALUES ('t.ch', 'slack', 'https://hooks.example/T0/s3cr3t')`,
				`UPDATE alert_channels SET enabled = FALSE WHERE name = 't.ch'`, `DELETE FROM alert_channels WHERE name = 't.ch'`, ""},
			{"alert_rule", `INSERT INTO alert_rules (name, event, channel_id) VALUES ('t.r', 'job_failed', ` + itoa(ch.ID) + `)`,
				`UPDATE alert_rules SET throttle_seconds = 60 WHERE name = 't.r'`, `DELETE FROM alert_rules WHERE name = 't.r'`, ""},
			{"api_token", `INSERT INTO api_tokens (name, token_sha256, role) VALUES ('t.tok', 'abc', 'viewer')`,
				`UPDATE api_tokens SET revoked_at = CURRENT_TIMESTAMP WHERE name = 't.tok'`, `DELETE FROM api_tokens WHERE name = 't.tok'`, ""},
			{"configuration", `INSERT INTO configurations (name, value) VALUES ('smtp.password', 's3cr3t')`,
				`UPDATE configurations SET value = 's3cr3t-2' WHERE name = 'smtp.password'`, `DELETE FROM configurations WHERE name = 'smtp.password'`, "smtp.password"},
		}
		for _, c := range cases {
			before := len(auditRows(t, st, c.objectType, c.key))
			for _, q := range []string{c.insert, c.update, c.delete} {
				require.NoError(t, db.Exec(q).Error, q)
			}
			rows := auditRows(t, st, c.objectType, c.key)
			require.Len(t, rows, before+3, c.objectType)
			rows = rows[before:]
			for i, action := range []string{"insert", "update", "delete"} {
				require.Equal(t, action, rows[i].Action, c.objectType)
				require.Equal(t, models.AuditDoorSQL, rows[i].Door, c.objectType)
				require.NotEmpty(t, rows[i].ObjectID, c.objectType)
			}
			requireMasked(t, rows)
			// The Go masking helper agrees: it changes nothing more.
			for _, r := range rows {
				if r.After != nil {
					require.JSONEq(t, *r.After, string(models.MaskAuditRow(r.ObjectType, []byte(*r.After))), c.objectType)
				}
			}
		}
	})
}

func quoteIdent(st *store.Store, s string) string {
	if st.Dialect() == store.MySQL {
		return "`" + s + "`"
	}
	return `"` + s + `"`
}

// auditedTables are the tables with audit triggers (migration 00027).
var auditedTables = []string{"job_definitions", "schedules", "calendars", "queues", "workflows", "workflow_steps",
	"workflow_edges", "alert_channels", "alert_rules", "api_tokens", "configurations"}

// TestAuditTriggersCoverEveryColumn: the MySQL and SQLite triggers, and
// PostgreSQL's UPDATE OF lists, name the columns of their table; a
// migration that adds a column to an audited table without creating its
// audit triggers again fails here.
func TestAuditTriggersCoverEveryColumn(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		for _, table := range auditedTables {
			var cols []string
			var bodies []string
			switch st.Dialect() {
			case store.SQLite:
				require.NoError(t, db.Raw("SELECT name FROM pragma_table_info(?)", table).Scan(&cols).Error)
				require.NoError(t, db.Raw("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", "chime_audit_"+table+"_update").Scan(&bodies).Error)
			case store.MySQL:
				require.NoError(t, db.Raw("SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", table).Scan(&cols).Error)
				require.NoError(t, db.Raw("SELECT ACTION_STATEMENT FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND TRIGGER_NAME = ?",
					"chime_audit_"+table+"_update").Scan(&bodies).Error)
			default:
				if table != "schedules" && table != "queues" {
					continue // to_jsonb(row) takes every column
				}
				require.NoError(t, db.Raw("SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?", table).Scan(&cols).Error)
				require.NoError(t, db.Raw("SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relname = ? AND t.tgname = 'chime_audit'",
					table).Scan(&bodies).Error)
			}
			require.NotEmpty(t, cols, table)
			require.Len(t, bodies, 1, table)
			for _, c := range cols {
				if c == "updated_at" || c == "rate_tat_us" {
					continue
				}
				require.Regexp(t, `\b`+c+`\b`, bodies[0], "the audit trigger of %s does not name %s", table, c)
			}
		}
	})
}
