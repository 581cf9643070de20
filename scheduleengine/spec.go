package scheduleengine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/chimesched/chime/models"
)

// specHash fingerprints the timing of a schedule row: the fields whose
// change makes an edit that starts the schedule afresh (schedule_type,
// cron_expr, cron_syntax, dst_policy, interval_seconds, run_at, timezone,
// start_at, calendar_id, and what that calendar excludes: its kind,
// definition and time zone; cal is it, nil when none). end_at only
// bounds the fires, and max_runs, the misfire policy, params and status
// do not move them. time_triggers.spec_hash keeps the fingerprint the
// trigger was computed from, so an edit is seen from the rows, whether it
// came through the API or a plain UPDATE, and across restarts.
func specHash(s *models.Schedule, cal *models.Calendar) string {
	key := fmt.Sprint(s.ScheduleType, "|", deref(s.CronExpr), "|", deref(s.IntervalSeconds), "|", timeKey(s.RunAt), "|",
		s.Timezone, "|", timeKey(s.StartAt))
	// The columns added later join the key only when not at their
	// defaults, so rows from before them keep their fingerprint and an
	// upgrade is no edit.
	if s.CronSyntax != "" && s.CronSyntax != models.SyntaxStandard {
		key += fmt.Sprint("|syntax=", s.CronSyntax)
	}
	if s.DSTPolicy != "" && s.DSTPolicy != models.DSTOnce {
		key += fmt.Sprint("|dst=", s.DSTPolicy)
	}
	if s.CalendarID != nil {
		key += fmt.Sprint("|calendar=", *s.CalendarID)
		if cal != nil {
			key += fmt.Sprintf("|%s|%q|%s", cal.Kind, string(cal.Definition), cal.Timezone)
		}
	}
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:16])
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func timeKey(t *time.Time) int64 {
	if t == nil {
		return 0
	}
	return t.UTC().UnixNano()
}

// specKey is every input of specHash: rows equal in it have the same
// fingerprint, so the engine hashes each distinct timing once.
type specKey struct {
	typ                     models.ScheduleType
	cron                    string
	hasCron, hasInt, hasCal bool
	interval                int
	runAt, startAt          int64
	tz                      string
	syntax                  models.CronSyntax
	dst                     models.DSTPolicy
	calID                   int64
	hasCalRow               bool
	calKind                 models.CalendarKind
	calDef, calTZ           string
}

func specKeyOf(s *models.Schedule, cal *models.Calendar) specKey {
	k := specKey{typ: s.ScheduleType, runAt: timeKey(s.RunAt), startAt: timeKey(s.StartAt), tz: s.Timezone, syntax: s.CronSyntax, dst: s.DSTPolicy}
	if s.CronExpr != nil {
		k.cron, k.hasCron = *s.CronExpr, true
	}
	if s.IntervalSeconds != nil {
		k.interval, k.hasInt = *s.IntervalSeconds, true
	}
	if s.CalendarID != nil {
		k.calID, k.hasCal = *s.CalendarID, true
	}
	if cal != nil {
		k.hasCalRow, k.calKind, k.calDef, k.calTZ = true, cal.Kind, string(cal.Definition), cal.Timezone
	}
	return k
}
