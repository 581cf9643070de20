package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

// TestAuditCommand: a change made with the CLI is logged with door cli
// (the header the CLI sends), and audit list reads and filters the log.
func TestAuditCommand(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		url := startAPIOn(t, st)
		mustChime(t, url, "definition", "add", "audit.cli", "--task-type", "sleep")
		require.NoError(t, st.DB().Exec(`UPDATE job_definitions SET description = 'by hand' WHERE name = 'audit.cli'`).Error)

		out := mustChime(t, url, "audit", "list", "--object", "definition", "--since", "1h")
		require.Regexp(t, `(?m)^ID\s+AT\s+ACTOR\s+DOOR\s+ACTION\s+OBJECT\s+NAME`, out)
		require.Regexp(t, `(?m)^\d+\s+\S+\s+bootstrap\s+cli\s+insert\s+definition:\d+\s+audit\.cli$`, out)
		require.Regexp(t, `(?m)^\d+\s+\S+\s+\S+\s+sql\s+update\s+definition:\d+\s+audit\.cli$`, out)

		out = mustChime(t, url, "audit", "list", "--actor", "bootstrap", "--output", "json")
		require.Contains(t, out, `"door": "cli"`)
		require.NotContains(t, out, `"door": "sql"`)
		require.Contains(t, mustChime(t, url, "audit", "list", "--until", "2000-01-01T00:00:00Z"), "ID")
		require.NotContains(t, mustChime(t, url, "audit", "list", "--until", "2000-01-01T00:00:00Z"), "audit.cli")

		_, err := chime(t, url, "audit", "list", "--since", "yesterday")
		require.ErrorContains(t, err, "--since")
	})
}

func TestAuditTime(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	got, err := auditTime("since", "24h", now)
	require.NoError(t, err)
	require.Equal(t, now.Add(-24*time.Hour), got)
	got, err = auditTime("since", "2030-01-01T00:00:00Z", now)
	require.NoError(t, err)
	require.Equal(t, time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), got)
	_, err = auditTime("until", "-1h", now)
	require.Error(t, err)
}
