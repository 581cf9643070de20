package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/configs"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

// TestMain lets the httpcall scenario's server process be this test
// binary: serverCommand starts it again with CHIME_BENCH_TEST_HTTPCALL_SERVER
// set, and it serves instead of running the tests.
func TestMain(m *testing.M) {
	if os.Getenv("CHIME_BENCH_TEST_HTTPCALL_SERVER") == "1" {
		if err := ServeArrivals(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	serverCommand = func() (*exec.Cmd, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "CHIME_BENCH_TEST_HTTPCALL_SERVER=1")
		return cmd, nil
	}
	os.Exit(m.Run())
}

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
	// Every job ran here, so each has the instant its Execute began.
	require.Equal(t, r.Jobs, r.Finished)
	require.Equal(t, r.Finished, r.ExecJobs)
	require.GreaterOrEqual(t, r.Exec.P50, 0.0)
	// The engine reported the commit of every on-time fire of the window,
	// and a commit comes after the instant it was due.
	require.Equal(t, r.Jobs-r.CatchUps, r.CommitFires)
	require.GreaterOrEqual(t, r.Committed.P50, 0.0)
	var out bytes.Buffer
	r.Print(&out)
	require.Contains(t, out.String(), "3 schedules every second")
	require.Contains(t, out.String(), "task ran (Execute began)")

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
		{"burst", Options{Jobs: 20}, map[string]string{"schedules": "20", "jobs": "20", "missed": "0", "duplicates": "0"}, []string{"fire_last_ms", "start_p99_ms", "exec_p50_ms", "exec_p99_ms", "exec_max_ms", "exec_after_started_p99_ms"}},
		{"steady", Options{Schedules: 3, Duration: 2 * time.Second}, map[string]string{"schedules": "3", "missed": "0", "duplicates": "0"}, []string{"fire_p99_ms", "commit_p99_ms", "start_p99_ms", "exec_p50_ms", "exec_p99_ms", "exec_max_ms", "exec_after_started_p99_ms"}},
		{"continuous", Options{Schedules: 3, Duration: 2 * time.Second}, map[string]string{"missed": "0", "unfinished": "0"}, []string{"jobs_per_s", "exec_p50_ms", "exec_p99_ms", "exec_max_ms", "exec_after_started_p99_ms"}},
		{"httpcall", Options{Schedules: 3, Duration: 2 * time.Second}, map[string]string{"schedules": "3", "missed": "0", "not_succeeded": "0", "doubled": "0", "server": "in_process"}, []string{"arrived", "server_conns", "server_closed", "start_p99_ms", "arrive_first_p50_ms", "arrive_p50_ms", "arrive_p99_ms", "arrive_max_ms", "cpu_s", "cpu_us_per_request", "gc_cycles", "gc_cpu_s"}},
		{"httpcall", Options{Schedules: 3, Duration: 2 * time.Second, ServerProcess: true}, map[string]string{"schedules": "3", "missed": "0", "not_succeeded": "0", "doubled": "0", "server": "process"}, []string{"arrived", "server_conns", "server_closed", "arrive_p50_ms", "arrive_p99_ms"}},
		{"restart", Options{Schedules: 30, Duration: 2 * time.Second}, map[string]string{"schedules": "30", "probe_missed": "0"}, []string{"restore_ms", "first_peak_rss_mb", "peak_rss_mb", "peak_reset", "probe_commit_p99_ms", "probe_start_p99_ms"}},
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
			if tc.name == "httpcall" {
				jobs, _ := l.Get("jobs")
				arrived, _ := l.Get("arrived")
				require.Equal(t, jobs, arrived, "every job's request reached the server: %s", l)
			}
			// The database now has rows: a second run is refused.
			_, err = Run(t.Context(), cfg, log, tc.name, tc.opts)
			require.ErrorContains(t, err, "point chime bench at an empty database")
		})
	}
}

// The scenarios that report when Execute began do so for every job they
// ran, on each database: the no-op task's record is keyed by the job ids of
// this run's database (parallel runs in one process reuse the same ids), and
// every finished job has one. No timing is checked beyond the order of
// events: a job cannot begin before it is due.
func TestExecSamplesCoverEveryJob(t *testing.T) {
	t.Parallel()
	for _, d := range []store.Dialect{store.SQLite, store.MySQL, store.Postgres} {
		for _, tc := range []struct {
			scenario string
			opts     Options
			finished string // the key whose value exec_jobs must equal
		}{
			{"burst", Options{Jobs: 15}, "jobs"},
			{"steady", Options{Schedules: 4, Duration: 2 * time.Second}, "jobs"},
			{"continuous", Options{Schedules: 4, Duration: 2 * time.Second}, "finished"},
		} {
			t.Run(string(d)+"/"+tc.scenario, func(t *testing.T) {
				t.Parallel()
				cfg, err := configs.Load("", func(string) string { return "" })
				require.NoError(t, err)
				sc := testdb.Config(t, d)
				cfg.Database.Driver, cfg.Database.DSN = string(sc.Driver), sc.DSN
				log := logrus.New()
				log.SetLevel(logrus.ErrorLevel)
				l, err := Run(t.Context(), cfg, log, tc.scenario, tc.opts)
				require.NoError(t, err)
				t.Log(l)
				n, ok := l.Get("exec_jobs")
				require.True(t, ok, "exec_jobs in %s", l)
				want, _ := l.Get(tc.finished)
				require.Equal(t, want, n, "exec_jobs against %s in %s", tc.finished, l)
				require.NotEqual(t, "0", n, l.String())
				p50, _ := l.Get("exec_p50_ms")
				v, err := strconv.ParseFloat(p50, 64)
				require.NoError(t, err)
				require.GreaterOrEqual(t, v, 0.0, l.String())
			})
		}
	}
}

func TestUnknownScenario(t *testing.T) {
	t.Parallel()
	_, err := Run(t.Context(), &configs.Config{}, logrus.New(), "nope", Options{})
	require.ErrorContains(t, err, "unknown scenario")
}

// TestAfterExecutedWaitsForEveryExecute: drain's read of the database is
// put off until every job has begun its Execute here, but for the first
// ask (and one a second meanwhile, for a job that never runs).
func TestAfterExecutedWaitsForEveryExecute(t *testing.T) {
	l := newExecLog()
	asked := 0
	cond := afterExecuted(l, 2, func() (bool, error) { asked++; return asked > 2, nil })
	ok, err := cond()
	require.NoError(t, err)
	require.False(t, ok)
	require.Equal(t, 1, asked, "the first ask reads")
	l.record(1, time.Now())
	_, _ = cond()
	require.Equal(t, 1, asked, "one job of two has begun: no read")
	l.record(2, time.Now())
	_, _ = cond()
	ok, err = cond()
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 3, asked, "every job has begun: every ask reads")
}
