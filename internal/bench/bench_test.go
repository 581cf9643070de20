package bench

import (
	"bytes"
	"strings"
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

// Each scenario, tiny, on a fresh SQLite file: the line names the scenario
// and its figures, and says nothing was missed. Timing is not checked.
func TestScenariosOnSQLite(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts Options
		want map[string]string // exact values
		keys []string          // present
	}{
		{"drain", Options{Jobs: 50}, map[string]string{"jobs": "50", "succeeded": "50", "driver": "sqlite"}, []string{"jobs_per_s", "pool"}},
		{"burst", Options{Jobs: 20}, map[string]string{"schedules": "20", "jobs": "20", "missed": "0", "duplicates": "0"}, []string{"fire_last_ms", "start_p99_ms"}},
		{"steady", Options{Schedules: 3, Duration: 2 * time.Second}, map[string]string{"schedules": "3", "missed": "0", "duplicates": "0"}, []string{"fire_p99_ms", "start_p99_ms"}},
		{"continuous", Options{Schedules: 3, Duration: 2 * time.Second}, map[string]string{"missed": "0", "unfinished": "0"}, []string{"jobs_per_s"}},
		{"restart", Options{Schedules: 30, Duration: 2 * time.Second}, map[string]string{"schedules": "30", "probe_missed": "0"}, []string{"restore_ms", "first_peak_rss_mb", "peak_rss_mb", "peak_reset", "probe_start_p99_ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := configs.Load("", func(string) string { return "" })
			require.NoError(t, err)
			cfg.Database.DSN = testdb.Config(t, store.SQLite).DSN
			log := logrus.New()
			log.SetLevel(logrus.ErrorLevel)
			l, err := Run(t.Context(), cfg, log, tc.name, tc.opts)
			require.NoError(t, err)
			t.Log(l)
			require.True(t, strings.HasPrefix(l.String(), "bench="+tc.name+" "), l.String())
			require.NotContains(t, l.String(), "  ")
			for k, v := range tc.want {
				got, ok := l.Get(k)
				require.True(t, ok, "%s in %s", k, l)
				require.Equal(t, v, got, "%s in %s", k, l)
			}
			for _, k := range tc.keys {
				_, ok := l.Get(k)
				require.True(t, ok, "%s in %s", k, l)
			}
			// The database now has rows: a second run is refused.
			_, err = Run(t.Context(), cfg, log, tc.name, tc.opts)
			require.ErrorContains(t, err, "point chime bench at an empty database")
		})
	}
}

func TestUnknownScenario(t *testing.T) {
	t.Parallel()
	_, err := Run(t.Context(), &configs.Config{}, logrus.New(), "nope", Options{})
	require.ErrorContains(t, err, "unknown scenario")
}
