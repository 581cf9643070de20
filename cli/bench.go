package cli

import (
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"

	"github.com/chimesched/chime/internal/bench"
)

func newBenchCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure a real chime node on the configured database",
	}
	var opts bench.LatenessOptions
	lateness := &cobra.Command{
		Use:   "lateness",
		Short: "Schedules firing every second: how long after scheduled_at fires are written and jobs start",
		Long: `Creates --schedules schedules firing every second (a no-op task of the
bench's own, which notes when its Execute began), runs a full node (both
engines, the configured poll interval) for --duration, stops it, and reports
percentiles read back from the jobs table, and when each job's Execute began.
Point it at an empty database (CHIME_DATABASE_DSN): it refuses one that has
schedules.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, log, err := g.load(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			r, err := bench.Lateness(cmd.Context(), cfg, log, opts)
			if err != nil {
				return err
			}
			r.Print(cmd.OutOrStdout())
			return nil
		},
	}
	lateness.Flags().IntVar(&opts.Schedules, "schedules", 1, "schedules firing every second")
	lateness.Flags().DurationVar(&opts.Duration, "duration", 30*time.Second, "how long to measure")
	cmd.AddCommand(lateness)
	for _, sc := range scenarioCommands {
		cmd.AddCommand(newScenarioCommand(g, sc))
	}
	cmd.AddCommand(&cobra.Command{
		Use:    "httpcall-server",
		Short:  "The server of `chime bench httpcall --server-process` (started by it)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return bench.ServeArrivals(cmd.InOrStdin(), cmd.OutOrStdout())
		},
	})
	return cmd
}

// scenarioCommand describes one `chime bench SCENARIO` and the flags it takes.
type scenarioCommand struct {
	name, short, long string
	jobs, schedules   int           // defaults; 0: no such flag
	duration          time.Duration // default; 0: no such flag
	timeout           bool
}

var scenarioCommands = []scenarioCommand{
	{name: "drain", short: "Pending no-op jobs drained by a worker-only node: jobs/s",
		long: `Inserts --jobs pending jobs of a no-op task, runs a node without
the scheduler until every job has finished, and reports jobs/s from the first
claim (min queued_at) to the last outcome (max finished_at). The pool is
taskengine.pool_size (CHIME_TASKENGINE_POOL_SIZE).`,
		jobs: 20000, timeout: true},
	{name: "burst", short: "Once schedules all due in the same second: fire and start times",
		long: `Creates --jobs once schedules due 5 s from now, runs a node until each has a
finished job, and reports how long after the due time the fires were written
(jobs.created_at) and the jobs started (jobs.started_at), and when the task's
Execute began (exec_*; see steady).`,
		jobs: 10000, timeout: true},
	{name: "steady", short: "Schedules firing every second: missed fires, fire and start lateness",
		long: `Creates --schedules schedules firing every second, runs a full node for
--duration and reports missed fires and, after scheduled_at, when fires were
written (jobs.created_at: when the fire's batch was built, or, prepared
ahead (scheduleengine.fire_ahead), the instant its commit waited for), when
their transaction committed (commit_*_ms, as the schedule engine saw it) and
when jobs were marked started (jobs.started_at).

The jobs run a no-op task of the bench's own that notes, in this process,
when its Execute began: exec_p50_ms, exec_p99_ms and exec_max_ms are that
instant after scheduled_at, the start a task really gets. started_at can be
earlier: a job the fire hands to a free worker, or a claim moves straight to
running, has it written inside that transaction, before the commit and the
delivery to the worker. exec_after_started_p99_ms is how much later Execute
began than started_at says; exec_jobs is how many jobs were seen to begin.`,
		schedules: 1000, duration: 60 * time.Second},
	{name: "continuous", short: "Fire, run and complete every second: sustained jobs/s",
		long: `The steady run read for throughput: jobs finished per second of the window,
with missed fires and unfinished jobs (both must be 0 for the rate to count).
Raise --schedules until they are not. The lateness figures are steady's,
exec_* included.`,
		schedules: 1000, duration: 60 * time.Second},
	{name: "restart", short: "Many active schedules: restore time and peak RSS after a restart, then firing on time",
		long: `Creates --schedules active cron schedules (one fires every second, the rest
once a year), starts a node, stops it and starts it again: restore_ms is from
the second start to the every-second schedule's first fire written (so up to
1 s above the restore itself). The node runs in this process; its peak RSS is
measured from a high-water mark started over before each start, once the
memory of the bench's own insert has been returned (peak_reset=false where
the system does not allow it: the peak then covers the insert too):
first_peak_rss_mb for the first start, peak_rss_mb for the restart and the
firing after it. Then it watches that schedule for --duration: probe_missed,
probe_fire_p99_ms (jobs.created_at, the instant itself for a fire prepared
ahead), probe_commit_p99_ms (its commit, as the schedule engine saw it) and
probe_start_p99_ms (jobs.started_at).`,
		schedules: 1_000_000, duration: 10 * time.Second, timeout: true},
	{name: "httpcall", short: "httpcall schedules every second against a local HTTP server: request lateness at the server",
		long: `Starts an HTTP server on 127.0.0.1 in this process, creates --schedules
schedules firing every second of an httpcall definition, each calling a path
of its own on that server, runs a full node for --duration and reports, as
the server saw them, how long after each second the requests arrived
(arrive_*_ms: the start a remote endpoint really gets, after the fire, the
hand-off, the worker, the connection and the request's write) and how many
connections it accepted (server_conns) and saw closed (server_closed) in
the window. arrived is the
requests of the window's seconds; doubled counts a schedule's second request
in one second (a request a whole second late), which must be 0 for the
figures to hold. start_*_ms is jobs.started_at, missed and not_succeeded
are read from the jobs table.`,
		schedules: 1000, duration: 60 * time.Second},
}

func newScenarioCommand(g *globals, sc scenarioCommand) *cobra.Command {
	var o bench.Options
	var cpuProfile, memProfile string
	c := &cobra.Command{
		Use:   sc.name,
		Short: sc.short,
		Long: sc.long + `

Prints one line of key=value pairs. Point it at an empty database
(CHIME_DATABASE_*): it refuses one that has schedules or jobs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, log, err := g.load(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if cpuProfile != "" {
				stop, err := startCPUProfile(cpuProfile)
				if err != nil {
					return err
				}
				defer stop()
			}
			l, err := bench.Run(cmd.Context(), cfg, log, sc.name, o)
			if err != nil {
				return err
			}
			if memProfile != "" {
				if err := writeAllocProfile(memProfile); err != nil {
					return err
				}
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), l)
			return err
		},
	}
	c.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run (setup included) to this file, for go tool pprof")
	c.Flags().StringVar(&memProfile, "memprofile", "", "write an allocation profile of the whole run (setup included) to this file at its end, for go tool pprof -sample_index=alloc_space")
	if sc.jobs > 0 {
		c.Flags().IntVar(&o.Jobs, "jobs", sc.jobs, "jobs (drain) or once schedules (burst)")
	}
	if sc.schedules > 0 {
		c.Flags().IntVar(&o.Schedules, "schedules", sc.schedules, "schedules")
	}
	if sc.duration > 0 {
		c.Flags().DurationVar(&o.Duration, "duration", sc.duration, "how long to measure")
	}
	if sc.name == "httpcall" {
		c.Flags().BoolVar(&o.ServerProcess, "server-process", false,
			"run the HTTP server in a process of its own (this program's hidden `bench httpcall-server`) rather than in the node's")
	}
	if sc.timeout {
		c.Flags().DurationVar(&o.Timeout, "timeout", 10*time.Minute, "give up after this long")
	}
	return c
}

// startCPUProfile profiles this process into path until the returned func runs.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// writeAllocProfile writes what this process allocated since it started
// (pprof's allocs profile: every allocation sampled, live or freed) to path.
func writeAllocProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("memory profile: %w", err)
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("memory profile: %w", err)
	}
	return f.Close()
}
