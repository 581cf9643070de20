package store

import (
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/chimesched/chime/models"
)

// Rows an admin wrote by plain SQL are read for the engines here and in
// LoadSchedules, and one row must not stop the reads of all the others.
// MariaDB and PostgreSQL refuse a value their column's type cannot hold,
// but SQLite keeps whatever it is given (text or a real past int64 in an
// INTEGER column, text that is no time where chime's triggers do not
// watch), and PostgreSQL's timestamptz holds 'infinity', which is no Go
// time: such a row used to fail the whole read, so a node restored no
// schedule at all, or a claim failed for every job in it, again and again.

// scanChecked scans the current row into dest. When a value cannot be
// held by its destination, the read does not fail: bad is the index of
// the first such column and raw the row's values as the driver gives
// them; the caller marks the row unreadable. A row that scans has bad -1.
func scanChecked(rows *sql.Rows, dest []any) (bad int, raw []any, err error) {
	all, raw, err := scanEach(rows, dest)
	if err != nil || len(all) == 0 {
		return -1, nil, err
	}
	return all[0], raw, nil
}

// scanEach is scanChecked for every column: bad lists each column whose
// value its destination cannot hold, and every other destination holds
// its value.
func scanEach(rows *sql.Rows, dest []any) (bad []int, raw []any, err error) {
	err = rows.Scan(dest...)
	if err == nil {
		return nil, nil, nil
	}
	raw = make([]any, len(dest))
	probe := make([]any, len(dest))
	for i := range raw {
		probe[i] = &raw[i]
	}
	if rows.Scan(probe...) != nil {
		return nil, nil, err // not a value's fault
	}
	for i := range dest {
		if _, ok := dest[i].(*sql.RawBytes); ok {
			// Takes any value; and a Scan into one that succeeds holds
			// the row until Next, which would fail the probes after it.
			continue
		}
		one := make([]any, len(dest))
		for j := range one {
			one[j] = new(any)
		}
		one[i] = dest[i]
		if rows.Scan(one...) != nil {
			bad = append(bad, i)
		}
	}
	if len(bad) == 0 {
		return nil, nil, err
	}
	return bad, raw, nil
}

// unreadable says why column's raw value did not fit dest.
func unreadable(column string, dest, raw any) string {
	want := "readable"
	switch dest.(type) {
	case *int, *int64, *sql.NullInt64, nullZero[int], nullZero[int64]:
		want = "an integer"
	case *time.Time, *sql.NullTime:
		want = "a time"
	case *bool:
		want = "true or false"
	}
	return fmt.Sprintf("%s holds %s, which is not %s", column, rawText(raw), want)
}

// rawText is a driver value as an admin would write it, quoted when text,
// cut at 80 bytes.
func rawText(v any) string {
	var s string
	switch v := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		s = string(v)
	case string:
		s = v
	default:
		return fmt.Sprint(v)
	}
	if len(s) > 80 {
		s = strings.ToValidUTF8(s[:80], "") + "…"
	}
	return strconv.Quote(s)
}

// rawInt64 and rawString read a raw value for an unreadable row's
// identity; what they cannot read is zero.
func rawInt64(v any) int64 {
	switch v := v.(type) {
	case int64:
		return v
	case []byte:
		n, _ := strconv.ParseInt(string(v), 10, 64)
		return n
	case string:
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	}
	return 0
}

func rawString(v any) string {
	switch v := v.(type) {
	case []byte:
		return string(v)
	case string:
		return v
	}
	return ""
}

// loadDefinitionColumns are the job_definitions columns definitionsByID reads,
// in definitionDest's order. TestDefinitionColumnsCoverModel fails when the
// model gains a column this list lacks.
var loadDefinitionColumns = []string{"id", "name", "task_type", "description", "default_params", "timeout_seconds", "max_attempts",
	"retry_backoff_seconds", "notify_on", "notify_emails", "requests_recovery", "priority", "created_at", "updated_at", "queue", "max_running", "required_tags", "broadcast", "rate_limit", "rate_period_ms", "rate_tat_us"}

func definitionDest(d *models.JobDefinition) []any {
	return []any{&d.ID, &d.Name, &d.TaskType, &d.Description, &d.DefaultParams, &d.TimeoutSeconds, &d.MaxAttempts,
		&d.RetryBackoffSeconds, &d.NotifyOn, &d.NotifyEmails, &d.RequestsRecovery, &d.Priority, &d.CreatedAt, &d.UpdatedAt, &d.Queue, &d.MaxRunning, &d.RequiredTags, &d.Broadcast, &d.RateLimit, &d.RatePeriodMs, &d.RateTatUs}
}

// definitionsByID reads the job definitions of ids, in chunks. A row with
// a value its column's type cannot hold comes back with only its id and
// name, and Unreadable saying which column: its schedules become invalid
// and its jobs fail before starting, with that reason, and the others
// are read as usual.
func definitionsByID(db *gorm.DB, ids []int64) ([]models.JobDefinition, error) {
	var out []models.JobDefinition
	for chunk := range slices.Chunk(ids, scheduleInChunk) {
		rows, err := db.Table("job_definitions").Select(loadDefinitionColumns).Where("id IN ?", chunk).Rows()
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var d models.JobDefinition
			dest := definitionDest(&d)
			bad, raw, err := scanChecked(rows, dest)
			if err != nil {
				_ = rows.Close()
				return nil, err
			}
			if bad >= 0 {
				d = models.JobDefinition{ID: rawInt64(raw[0]), Name: rawString(raw[1]),
					Unreadable: unreadable("job_definitions."+loadDefinitionColumns[bad], dest[bad], raw[bad])}
			}
			out = append(out, d)
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
