// Command river-bench runs River (github.com/riverqueue/river) through the
// scenarios of `chime bench`, on the PostgreSQL server chime is measured
// on, and prints one line of key=value pairs per run with the same names,
// so scripts/peer-bench.sh can put the two side by side.
//
// It is its own Go module so that River never enters chime's go.mod; it
// imports nothing of chime.
//
//	river-bench [flags] drain|continuous|steady|insert
//	river-bench [flags] createdb|dropdb NAME
//	river-bench [flags] watch NAME
//
// Each run creates a database of its own on the server --dsn names
// (river_bench_<random>), migrates it with rivermigrate, and drops it at
// the end (-keep keeps it). createdb and dropdb are there so the script
// can give chime an empty database without needing psql: createdb prints
// the new database's DSN. watch profiles any run on a database from the
// server's side (see watch.go): chime's, to see where its PostgreSQL time
// goes, or River's, to compare.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// options are the flags, shared by every scenario; each reads the ones it needs.
type options struct {
	dsn           string
	workers       int
	maxConns      int
	jobs          int
	schedules     int
	duration      time.Duration
	timeout       time.Duration
	fetchCooldown time.Duration
	fetchPoll     time.Duration
	clients       int
	interval      time.Duration
	keep          bool
	cpuProfile    string
	verbose       bool
	sample        time.Duration
	watchFor      time.Duration
	trackFuncs    bool
	db            string
}

const usage = `usage: river-bench [flags] SCENARIO
       river-bench [flags] createdb|dropdb NAME
       river-bench [flags] watch NAME

Scenarios (the names of chime bench):
  drain       --jobs pending no-op jobs, one client with --workers: jobs/s
              from the first fetch (min attempted_at) to the last outcome
              (max finalized_at)
  continuous  --schedules periodic jobs every second for --duration, read
              for throughput: jobs_per_s finished in the window, missed and
              unfinished (both must be 0)
  steady      the same run read for lateness: exec_p50_ms/exec_p99_ms are
              when the worker's Work began after the job's scheduled_at
  insert      --clients clients idle; --jobs rows inserted by plain SQL
              (INSERT INTO river_job, then pg_notify on river_insert, as
              River documents) one every --interval: start_p50_ms/p99 are
              attempted_at - created_at, exec_* Work began - created_at

watch NAME samples pg_stat_activity of database NAME every --sample-interval
until interrupted (or --watch-for), then prints which statements and waits
dominated and how the database's, tables' and trigger functions' counters
moved (--track-functions sets track_functions = 'pl' on NAME first).

Flags:
`

func main() {
	var o options
	fs := flag.NewFlagSet("river-bench", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), usage); fs.PrintDefaults() }
	fs.StringVar(&o.dsn, "dsn", os.Getenv("RIVER_BENCH_DSN"), "PostgreSQL DSN of the server (its database is only used to create and drop the bench's own); default $RIVER_BENCH_DSN")
	fs.IntVar(&o.workers, "workers", 100, "MaxWorkers of the default queue, per client (chime's taskengine.pool_size)")
	fs.IntVar(&o.maxConns, "max-conns", 32, "pgx pool size per client (chime's database.max_open_conns default)")
	fs.IntVar(&o.jobs, "jobs", 0, "drain: pending jobs (default 20000); insert: rows inserted (default 200)")
	fs.IntVar(&o.schedules, "schedules", 1000, "continuous, steady: periodic jobs every second")
	fs.DurationVar(&o.duration, "duration", 60*time.Second, "continuous, steady: how long to measure")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "drain: give up after this long")
	fs.DurationVar(&o.fetchCooldown, "fetch-cooldown", 0, "River Config.FetchCooldown (0: River's default, 100ms)")
	fs.DurationVar(&o.fetchPoll, "fetch-poll-interval", 0, "River Config.FetchPollInterval (0: River's default, 1s)")
	fs.IntVar(&o.clients, "clients", 2, "insert: River clients working the queue (chime's benchmark runs two worker nodes)")
	fs.DurationVar(&o.interval, "interval", 20*time.Millisecond, "insert: time between two inserts")
	fs.StringVar(&o.db, "db", "", "name of the bench database to create (default river_bench_<random>)")
	fs.BoolVar(&o.keep, "keep", false, "keep the bench database (its name is printed as db=)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	fs.BoolVar(&o.verbose, "v", false, "River's log at info level (default: warnings)")
	fs.DurationVar(&o.sample, "sample-interval", 10*time.Millisecond, "watch: time between two samples of pg_stat_activity")
	fs.DurationVar(&o.watchFor, "watch-for", 0, "watch: stop after this long (0: at SIGINT or SIGTERM)")
	fs.BoolVar(&o.trackFuncs, "track-functions", false, "watch: ALTER DATABASE NAME SET track_functions = 'pl' first (superuser)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, fs.Args(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "river-bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("name a scenario: drain, continuous, steady or insert (-h for help)")
	}
	if o.dsn == "" {
		return errors.New("--dsn (or RIVER_BENCH_DSN) is required")
	}
	switch args[0] {
	case "createdb", "dropdb":
		if len(args) != 2 {
			return fmt.Errorf("%s takes one database name", args[0])
		}
		create := args[0] == "createdb"
		if err := adminDB(ctx, o.dsn, create, args[1]); err != nil || !create {
			return err
		}
		dsn, err := withDatabase(o.dsn, args[1])
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, dsn)
		return err
	case "watch":
		if len(args) != 2 {
			return errors.New("watch takes one database name")
		}
		return watch(ctx, o.dsn, args[1], o.sample, o.watchFor, o.trackFuncs, out)
	}
	if len(args) != 1 {
		return fmt.Errorf("one scenario at a time, got %q", args)
	}
	sc, ok := scenarios[args[0]]
	if !ok {
		return fmt.Errorf("unknown scenario %q (want drain, continuous, steady or insert)", args[0])
	}
	if o.workers <= 0 || o.maxConns <= 0 || o.schedules <= 0 || o.duration <= 0 || o.clients <= 0 || o.jobs < 0 {
		return errors.New("--workers, --max-conns, --schedules, --duration and --clients must be positive")
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	e, err := newEnv(ctx, o)
	if err != nil {
		return err
	}
	l, err := sc(ctx, e)
	if cerr := e.close(context.WithoutCancel(ctx)); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, l)
	return err
}

// env is one run's database: a pool on it, migrated, and what describes
// the run on every line.
type env struct {
	o      options
	server string // DSN of the server's maintenance database
	name   string // the bench database
	pool   *pgxpool.Pool
	log    *slog.Logger
	// planCacheMode is the server's plan_cache_mode: pgx prepares every
	// statement, so after five executions PostgreSQL may switch a query
	// to a generic plan; both chime and River run under it.
	planCacheMode string
	river         string // River's version, from the build
}

func newEnv(ctx context.Context, o options) (*env, error) {
	name := o.db
	if name == "" {
		name = "river_bench_" + strings.ToLower(rand.Text()[:10])
	}
	if err := adminDB(ctx, o.dsn, true, name); err != nil {
		return nil, err
	}
	e := &env{o: o, server: o.dsn, name: name, river: moduleVersion("github.com/riverqueue/river")}
	level := slog.LevelWarn
	if o.verbose {
		level = slog.LevelInfo
	}
	e.log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	fail := func(err error) (*env, error) {
		return nil, errors.Join(err, e.close(context.WithoutCancel(ctx)))
	}
	dsn, err := withDatabase(o.dsn, name)
	if err != nil {
		return fail(err)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return fail(err)
	}
	cfg.MaxConns = int32(o.maxConns)
	if e.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return fail(err)
	}
	m, err := rivermigrate.New(riverpgxv5.New(e.pool), nil)
	if err != nil {
		return fail(err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fail(fmt.Errorf("migrate: %w", err))
	}
	if err := e.pool.QueryRow(ctx, "SHOW plan_cache_mode").Scan(&e.planCacheMode); err != nil {
		return fail(err)
	}
	return e, nil
}

// close drops the bench database unless -keep.
func (e *env) close(ctx context.Context) error {
	if e.pool != nil {
		e.pool.Close()
	}
	if e.o.keep {
		return nil
	}
	return adminDB(ctx, e.server, false, e.name)
}

var dbName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// adminDB creates or drops database name on the server of dsn.
func adminDB(ctx context.Context, dsn string, create bool, name string) error {
	if !dbName.MatchString(name) {
		return fmt.Errorf("database name %q: want lower-case letters, digits and _", name)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	q := "CREATE DATABASE " + name
	if !create {
		q = "DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"
	}
	if _, err := conn.Exec(ctx, q); err != nil {
		return fmt.Errorf("%s: %w", q, err)
	}
	return nil
}

// withDatabase returns dsn (a URL or key=value DSN) naming database name.
func withDatabase(dsn, name string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", err
		}
		u.Path = "/" + name
		return u.String(), nil
	}
	return dsn + " dbname=" + name, nil
}

func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return "unknown"
}
