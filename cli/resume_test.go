package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/store"
)

// schedule show of a paused schedule that missed fires says what resume
// writes at once: one catch-up, for which instant, collapsing how many
// missed fires; then its next fires. -o json keeps the API's object.
func TestScheduleShowSaysTheCatchUpOnResume(t *testing.T) {
	t.Parallel()
	url, st := startAPIStore(t)
	// Hourly from T, last fired at T, 10.5 hours ago: T+1h … T+10h missed.
	start := time.Now().UTC().Truncate(time.Second).Add(-10*time.Hour - 30*time.Minute)
	mustChime(t, url, "definition", "add", "report", "--task-type", "sleep")
	mustChime(t, url, "schedule", "add", "hourly", "--definition", "report", "--every", "1h", "--start-at", start.Format(time.RFC3339))
	mustChime(t, url, "schedule", "pause", "hourly")
	out := mustChime(t, url, "schedule", "show", "hourly")
	require.NotContains(t, out, "catch_up_on_resume", "never fired: nothing is known to be missed yet")

	require.NoError(t, st.DB().Exec(`INSERT INTO time_triggers (schedule_id, last_fire_at, fired_count, misfired_count, spec_hash,
		created_at, updated_at) VALUES (1, ?, 1, 0, '', ?, ?)`, store.DBTime(start), store.DBTime(start), store.DBTime(start)).Error)
	out = mustChime(t, url, "schedule", "show", "hourly")
	latest := start.Add(10 * time.Hour).Format(time.RFC3339)
	require.Regexp(t, `(?m)^catch_up_on_resume:\s+resuming now writes one catch-up job at once, for `+latest+
		`, collapsing 10 missed fires; then next_fires$`, out)
	require.Regexp(t, `(?m)^next_fires:\s+\["`+start.Add(11*time.Hour).Format(time.RFC3339)+`"`, out)
	require.Less(t, strings.Index(out, "catch_up_on_resume:"), strings.Index(out, "next_fires:"), "the catch-up comes first")

	out = mustChime(t, url, "schedule", "show", "hourly", "-o", "json")
	require.Contains(t, out, `"catch_up_on_resume": {
    "scheduled_at": "`+latest+`",
    "missed_fires": 10,
    "jobs": 1
  }`)
}
