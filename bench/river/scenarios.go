package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// scenarios are the runs, by the name chime bench gives them.
var scenarios = map[string]func(context.Context, *env) (*line, error){
	"drain":      drain,
	"continuous": func(ctx context.Context, e *env) (*line, error) { return periodic(ctx, e, "continuous") },
	"steady":     func(ctx context.Context, e *env) (*line, error) { return periodic(ctx, e, "steady") },
	"insert":     insert,
}

// noopArgs are the bench's jobs: S is the periodic job's number (the
// schedule, in chime's words), so duplicates and missed fires can be told.
type noopArgs struct {
	S int `json:"s"`
}

func (noopArgs) Kind() string { return "bench_noop" }

// InsertOpts: one attempt, as chime's bench definition (max_attempts 1).
func (noopArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 1} }

// noopWorker notes when each job's Work began, the start a job really gets
// (chime's bench-noop notes its Execute the same way), and succeeds.
type noopWorker struct {
	river.WorkerDefaults[noopArgs]
	log *execLog
}

func (w *noopWorker) Work(_ context.Context, j *river.Job[noopArgs]) error {
	w.log.record(j.ID, time.Now().Round(0))
	return nil
}

// execLog is when each job's Work began, by job id.
type execLog struct {
	mu    sync.Mutex
	began map[int64]time.Time
}

func newExecLog() *execLog { return &execLog{began: make(map[int64]time.Time, 1<<16)} }

func (l *execLog) record(id int64, at time.Time) {
	l.mu.Lock()
	if _, ok := l.began[id]; !ok {
		l.began[id] = at
	}
	l.mu.Unlock()
}

func (l *execLog) get(id int64) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.began[id]
	return at, ok
}

// client builds a River client on e's pool working the default queue with
// e.o.workers, the fetch settings given, and periodic jobs if any.
func (e *env) client(id string, exec *execLog, periodic []*river.PeriodicJob) (*river.Client[pgx.Tx], error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{log: exec})
	return river.NewClient(riverpgxv5.New(e.pool), &river.Config{
		ID:                id,
		Logger:            e.log,
		FetchCooldown:     e.o.fetchCooldown,
		FetchPollInterval: e.o.fetchPoll,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: e.o.workers}},
		Workers:           workers,
		PeriodicJobs:      periodic,
	})
}

// head is the first fields of every line: what ran, on what, tuned how.
func (e *env) head(bench string) *line {
	l := &line{}
	l.add("bench", bench)
	l.add("driver", "river")
	l.add("river", e.river)
	l.add("fetch_cooldown_ms", ms(cmpOr(e.o.fetchCooldown, river.FetchCooldownDefault)))
	l.add("fetch_poll_ms", ms(cmpOr(e.o.fetchPoll, river.FetchPollIntervalDefault)))
	l.add("plan_cache_mode", e.planCacheMode)
	if e.o.keep {
		l.add("db", e.name)
	}
	return l
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// unfinished reports whether any job is not yet completed, discarded or
// cancelled: one index probe, as chime's bench asks whether any job is live.
func (e *env) unfinished(ctx context.Context) (bool, error) {
	var live bool
	err := e.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM river_job
		WHERE state NOT IN ('completed', 'discarded', 'cancelled'))`).Scan(&live)
	return live, err
}

// drain inserts o.jobs available jobs by SQL, starts one client, waits
// until every job is finished, and reports jobs/s from the first fetch
// (min attempted_at) to the last outcome (max finalized_at), as chime's
// drain does from min queued_at to max finished_at.
func drain(ctx context.Context, e *env) (*line, error) {
	n := cmpOrInt(e.o.jobs, 20000)
	if _, err := e.pool.Exec(ctx, `INSERT INTO river_job (args, kind, max_attempts, scheduled_at)
		SELECT jsonb_build_object('s', i), 'bench_noop', 1, now() - interval '1 second'
		FROM generate_series(1, $1) AS i`, n); err != nil {
		return nil, fmt.Errorf("insert jobs: %w", err)
	}
	exec := newExecLog()
	c, err := e.client("drain", exec, nil)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	werr := waitFor(ctx, e.o.timeout, "drain", func() (bool, error) {
		live, err := e.unfinished(ctx)
		return !live, err
	})
	wall := time.Since(began)
	if err := errors.Join(werr, c.Stop(context.WithoutCancel(ctx))); err != nil {
		return nil, err
	}
	rows, err := e.pool.Query(ctx, `SELECT id, state, attempted_at, finalized_at FROM river_job`)
	if err != nil {
		return nil, err
	}
	var first, last time.Time
	var succeeded, total int
	var claimedToExec []float64
	for rows.Next() {
		var id int64
		var state string
		var attempted, finalized *time.Time
		if err := rows.Scan(&id, &state, &attempted, &finalized); err != nil {
			return nil, err
		}
		total++
		if state == "completed" {
			succeeded++
		}
		if attempted != nil && (first.IsZero() || attempted.Before(first)) {
			first = *attempted
		}
		if finalized != nil && finalized.After(last) {
			last = *finalized
		}
		if at, ok := exec.get(id); ok && attempted != nil {
			claimedToExec = append(claimedToExec, ms(at.Sub(*attempted)))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	took := last.Sub(first)
	l := e.head("drain")
	l.add("jobs", n)
	l.add("pool", e.o.workers)
	l.add("succeeded", succeeded)
	l.add("seconds", strconv.FormatFloat(took.Seconds(), 'f', 3, 64))
	l.add("jobs_per_s", rate(total, took))
	// River fetches straight into running (attempted_at): no queued step
	// as chime has, so this is fetch → Work began, not chime's
	// queued_to_started.
	q := percentiles(claimedToExec)
	l.add("fetched_to_exec_p50_ms", q.P50)
	l.add("fetched_to_exec_p99_ms", q.P99)
	l.add("wall_seconds", strconv.FormatFloat(wall.Seconds(), 'f', 3, 64))
	return l, nil
}

// everySecond is a PeriodicSchedule of whole seconds, as chime's cron
// "* * * * * *": scheduled_at is the second itself.
type everySecond struct{}

func (everySecond) Next(t time.Time) time.Time { return t.Truncate(time.Second).Add(time.Second) }

// periodic runs o.schedules periodic jobs every second on one client for
// o.duration after a 3 s warm-up (chime's Lateness waits as long), stops
// the client gracefully, and reads the jobs scheduled in the window back.
func periodic(ctx context.Context, e *env, name string) (*line, error) {
	exec := newExecLog()
	jobs := make([]*river.PeriodicJob, e.o.schedules)
	for i := range jobs {
		jobs[i] = river.NewPeriodicJob(everySecond{}, func() (river.JobArgs, *river.InsertOpts) {
			return noopArgs{S: i}, nil
		}, nil)
	}
	c, err := e.client(name, exec, jobs)
	if err != nil {
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	var from, until time.Time
	sleep := func(d time.Duration) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
			return nil
		}
	}
	err = sleep(3 * time.Second)
	if err == nil {
		from = time.Now().UTC().Truncate(time.Second).Add(time.Second)
		err = sleep(e.o.duration)
		until = time.Now().UTC().Truncate(time.Second).Add(-time.Second)
	}
	if err := errors.Join(err, c.Stop(context.WithoutCancel(ctx))); err != nil {
		return nil, err
	}
	rows, err := e.pool.Query(ctx, `SELECT id, (args->>'s')::int, state, scheduled_at, created_at, attempted_at
		FROM river_job WHERE scheduled_at >= $1 AND scheduled_at <= $2`, from, until)
	if err != nil {
		return nil, err
	}
	seconds := int(until.Sub(from)/time.Second) + 1
	type fire struct {
		s  int
		at int64
	}
	seen := make(map[fire]bool)
	var total, finished, dups int
	var written, started, late, afterStarted []float64
	for rows.Next() {
		var id int64
		var s int
		var state string
		var scheduled, created time.Time
		var attempted *time.Time
		if err := rows.Scan(&id, &s, &state, &scheduled, &created, &attempted); err != nil {
			return nil, err
		}
		total++
		f := fire{s, scheduled.UnixMicro()}
		if seen[f] {
			dups++
		}
		seen[f] = true
		if state == "completed" || state == "discarded" || state == "cancelled" {
			finished++
		}
		written = append(written, ms(created.Sub(scheduled)))
		if attempted != nil {
			started = append(started, ms(attempted.Sub(scheduled)))
		}
		if at, ok := exec.get(id); ok {
			late = append(late, ms(at.Sub(scheduled)))
			if attempted != nil {
				afterStarted = append(afterStarted, ms(at.Sub(*attempted)))
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	w, st, ex, as := percentiles(written), percentiles(started), percentiles(late), percentiles(afterStarted)
	l := e.head(name)
	l.add("schedules", e.o.schedules)
	l.add("pool", e.o.workers)
	l.add("seconds", seconds)
	l.add("jobs", total)
	l.add("missed", e.o.schedules*seconds-len(seen))
	l.add("duplicates", dups)
	if name == "continuous" {
		l.add("finished", finished)
		l.add("unfinished", total-finished)
		l.add("jobs_per_s", rate(finished, time.Duration(seconds)*time.Second))
	}
	// created_at is now() of the periodic enqueuer's insert transaction:
	// the nearest River has to chime's fire_* (when the fire was written).
	// River does not report the insert's commit, so there is no commit_*.
	l.add("fire_p50_ms", w.P50)
	l.add("fire_p99_ms", w.P99)
	l.add("start_p50_ms", st.P50)
	l.add("start_p99_ms", st.P99)
	l.add("start_max_ms", st.Max)
	l.add("exec_jobs", len(late))
	l.add("exec_p50_ms", ex.P50)
	l.add("exec_p99_ms", ex.P99)
	l.add("exec_max_ms", ex.Max)
	l.add("exec_after_started_p99_ms", as.P99)
	return l, nil
}

// insert starts o.clients clients, lets them go idle, then inserts
// o.jobs rows by plain SQL, one every o.interval, from a connection of no
// client: INSERT INTO river_job and pg_notify on river_insert in one
// implicit transaction (the simple protocol sends both in one round trip),
// as River's documentation shows for inserting from other languages.
// chime's counterpart is BenchmarkInsertToStart (app), whose trigger
// notifies inside the INSERT's transaction.
func insert(ctx context.Context, e *env) (*line, error) {
	n := cmpOrInt(e.o.jobs, 200)
	exec := newExecLog()
	var clients []*river.Client[pgx.Tx]
	stopAll := func() error {
		var errs []error
		for _, c := range clients {
			errs = append(errs, c.Stop(context.WithoutCancel(ctx)))
		}
		return errors.Join(errs...)
	}
	for i := range e.o.clients {
		c, err := e.client(fmt.Sprintf("insert-%d", i), exec, nil)
		if err != nil {
			return nil, errors.Join(err, stopAll())
		}
		if err := c.Start(ctx); err != nil {
			return nil, errors.Join(err, stopAll())
		}
		clients = append(clients, c)
	}
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return nil, errors.Join(err, stopAll())
	}
	defer conn.Release()
	// Past the clients' start-up fetches, so only a wake-up or a poll can
	// start the next job.
	idle := 2*time.Second + cmpOr(e.o.fetchPoll, river.FetchPollIntervalDefault)
	q := `INSERT INTO river_job (args, kind, max_attempts) VALUES ('{"s":0}', 'bench_noop', 1);
		SELECT pg_notify(current_schema() || '.river_insert', '{"queue":"default"}')`
	werr := func() error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(idle):
		}
		for range n {
			if _, err := conn.Exec(ctx, q, pgx.QueryExecModeSimpleProtocol); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(e.o.interval):
			}
		}
		return waitFor(ctx, 2*idle, "insert", func() (bool, error) {
			live, err := e.unfinished(ctx)
			return !live, err
		})
	}()
	if err := errors.Join(werr, stopAll()); err != nil {
		return nil, err
	}
	rows, err := conn.Query(ctx, `SELECT id, created_at, attempted_at FROM river_job`)
	if err != nil {
		return nil, err
	}
	var started, late []float64
	total := 0
	for rows.Next() {
		var id int64
		var created time.Time
		var attempted *time.Time
		if err := rows.Scan(&id, &created, &attempted); err != nil {
			return nil, err
		}
		total++
		if attempted != nil {
			started = append(started, ms(attempted.Sub(created)))
		}
		if at, ok := exec.get(id); ok {
			late = append(late, ms(at.Sub(created)))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	st, ex := percentiles(started), percentiles(late)
	l := e.head("insert")
	l.add("clients", e.o.clients)
	l.add("pool", e.o.workers)
	l.add("jobs", total)
	l.add("started", len(started))
	l.add("start_p50_ms", st.P50)
	l.add("start_p90_ms", st.P90)
	l.add("start_p99_ms", st.P99)
	l.add("start_max_ms", st.Max)
	l.add("exec_p50_ms", ex.P50)
	l.add("exec_p99_ms", ex.P99)
	return l, nil
}

func cmpOrInt(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}

// waitFor polls cond every 20 ms (as chime's bench does) until it holds,
// ctx ends, or timeout.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not done after %v", what, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// line is one run's result: key=value pairs in a fixed order, no spaces in
// values, as chime bench prints.
type line struct{ kv []string }

func (l *line) add(k string, v any) {
	var s string
	switch x := v.(type) {
	case float64:
		s = strconv.FormatFloat(x, 'f', 1, 64)
	default:
		s = strings.ReplaceAll(fmt.Sprint(v), " ", "_")
	}
	l.kv = append(l.kv, k+"="+s)
}

func (l *line) String() string { return strings.Join(l.kv, " ") }

// percentiles of a sample in milliseconds, picked as chime's bench picks them.
type pct struct{ P50, P90, P99, Max float64 }

func percentiles(v []float64) pct {
	if len(v) == 0 {
		return pct{}
	}
	slices.Sort(v)
	at := func(q float64) float64 { return v[min(len(v)-1, int(q*float64(len(v))))] }
	return pct{P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: v[len(v)-1]}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}
