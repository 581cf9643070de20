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
// cron_expr, interval_seconds, run_at, timezone, start_at). end_at only
// bounds the fires, and max_runs, the misfire policy, params and status
// do not move them. time_triggers.spec_hash keeps the fingerprint the
// trigger was computed from, so an edit is seen from the rows, whether it
// came through the API or a plain UPDATE, and across restarts.
func specHash(s *models.Schedule) string {
	key := fmt.Sprint(s.ScheduleType, "|", deref(s.CronExpr), "|", deref(s.IntervalSeconds), "|", timeKey(s.RunAt), "|",
		s.Timezone, "|", timeKey(s.StartAt))
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
