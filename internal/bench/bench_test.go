package bench

import (
	"bytes"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/configs"
	"github.com/chimesched/chime/internal/testdb"
	"github.com/chimesched/chime/store"
)

// The lateness run on a real SQLite file: every second of the window has
// one job per schedule, each started, and the report says so.
func TestLatenessOnSQLite(t *testing.T) {
	t.Parallel()
	cfg, err := configs.Load("", func(string) string { return "" })
	require.NoError(t, err)
	cfg.Database.DSN = testdb.Config(t, store.SQLite).DSN
	cfg.TaskEngine.PollInterval = configs.Duration(4 * time.Second)
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)

	r, err := Lateness(t.Context(), cfg, log, LatenessOptions{Schedules: 3, Duration: 3 * time.Second})
	require.NoError(t, err)
	require.Zero(t, r.Missing)
	require.Zero(t, r.Duplicates)
	require.Equal(t, r.Jobs, r.Started)
	require.GreaterOrEqual(t, r.Jobs, 3*2)
	require.Positive(t, r.StartedAt.P50)
	var out bytes.Buffer
	r.Print(&out)
	require.Contains(t, out.String(), "3 schedules every second")

	_, err = Lateness(t.Context(), cfg, log, LatenessOptions{Schedules: 1, Duration: time.Second})
	require.ErrorContains(t, err, "already has 3 schedules")
}
