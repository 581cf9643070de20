package bench

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"gorm.io/gorm"

	"github.com/chimesched/chime/app"
	"github.com/chimesched/chime/configs"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/tasks"
)

// Scenarios are the names `chime bench` runs, each printing one Line.
var Scenarios = []string{"burst", "steady", "drain", "continuous", "restart", "httpcall"}

// Options size a scenario. Zero values take the scenario's default.
type Options struct {
	// Jobs is the pending jobs of drain, or the once schedules of burst
	// all due in the same second.
	Jobs int
	// Schedules is the every-second schedules of steady, continuous and
	// httpcall, or the active schedules of restart.
	Schedules int
	// Duration is how long steady, continuous and httpcall measure, or
	// how long restart watches firing after the restart.
	Duration time.Duration
	// Timeout bounds the wait for drain and burst to finish.
	Timeout time.Duration
	// ServerProcess runs httpcall's server in a process of its own
	// (`chime bench httpcall-server`) instead of in the node's.
	ServerProcess bool
}

// Line is one scenario's result: key=value pairs in a fixed order, with no
// spaces in values, so a shell loop or awk can read it.
type Line struct{ kv []string }

func (l *Line) add(k string, v any) {
	var s string
	switch x := v.(type) {
	case float64:
		s = strconv.FormatFloat(x, 'f', 1, 64)
	case time.Duration:
		s = strconv.FormatFloat(ms(x), 'f', 1, 64)
	default:
		s = strings.ReplaceAll(fmt.Sprint(v), " ", "_")
	}
	l.kv = append(l.kv, k+"="+s)
}

// String is the line as printed.
func (l *Line) String() string { return strings.Join(l.kv, " ") }

// Get returns the value of key k, and whether the line has it.
func (l *Line) Get(k string) (string, bool) {
	for _, kv := range l.kv {
		if key, v, _ := strings.Cut(kv, "="); key == k {
			return v, true
		}
	}
	return "", false
}

// Run runs one scenario against the database of cfg, which must hold no
// schedules and no jobs: the figures are read back from every row.
func Run(ctx context.Context, cfg *configs.Config, log *logrus.Logger, scenario string, o Options) (*Line, error) {
	switch scenario {
	case "drain":
		return drain(ctx, cfg, log, o)
	case "burst":
		return burst(ctx, cfg, log, o)
	case "steady", "continuous":
		return steady(ctx, cfg, log, scenario, o)
	case "restart":
		return restart(ctx, cfg, log, o)
	case "httpcall":
		return httpcallScenario(ctx, cfg, log, o)
	}
	return nil, fmt.Errorf("bench: unknown scenario %q (want one of %s)", scenario, strings.Join(Scenarios, ", "))
}

// env is a prepared bench database: the checked-empty store, a no-op
// definition, the node's configuration, and where its no-op task records
// when each job's Execute began.
type env struct {
	cfg  *configs.Config
	st   *store.Store
	db   *gorm.DB
	def  int64
	exec *execLog
	reg  *tasks.Registry
	// commits is when the node's schedule engine committed each fire.
	commits commitLog
}

// commitLog gathers the schedule engine's fire commits (app.Options
// OnFireCommitted): the jobs table says when a fire's batch was built
// (created_at), not when it committed.
type commitLog struct {
	mu   sync.Mutex
	late []struct{ due, committed time.Time }
}

func (c *commitLog) add(due, committed time.Time) {
	c.mu.Lock()
	c.late = append(c.late, struct{ due, committed time.Time }{due, committed})
	c.mu.Unlock()
}

// between returns commit − due in ms of the fires due from from to until.
func (c *commitLog) between(from, until time.Time) []float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []float64
	for _, f := range c.late {
		if !f.due.Before(from) && !f.due.After(until) {
			out = append(out, ms(f.committed.Sub(f.due)))
		}
	}
	return out
}

// prepare copies cfg for a node nobody calls, opens and migrates the
// database, refuses one that has schedules or jobs, and creates the no-op
// definition (TaskType; its params are sleep's, for a run switched to
// `sleep 0s`).
func prepare(ctx context.Context, cfg *configs.Config, log *logrus.Logger) (*env, error) {
	c := *cfg
	// The measurement needs no API, and must not collide with a running server's port.
	c.API.Addr = "127.0.0.1:0"
	if c.API.Token == "" {
		// A throwaway token keeps serve from writing a token file into the
		// user's configuration directory.
		c.API.Token = rand.Text()
	}
	// Not exclusive: the node takes the SQLite file for itself while this
	// handle sets the tables up and reads the rows back.
	st, err := store.Open(ctx, app.StoreConfig(&c, log))
	if err != nil {
		return nil, err
	}
	if _, err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, err
	}
	db := st.DB().WithContext(ctx)
	for _, t := range []struct {
		what  string
		model any
	}{{"schedules", &models.Schedule{}}, {"jobs", &models.Job{}}} {
		var n int64
		if err := db.Model(t.model).Count(&n).Error; err != nil {
			st.Close()
			return nil, err
		}
		if n > 0 {
			st.Close()
			return nil, fmt.Errorf("bench: the database already has %d %s; point chime bench at an empty database", n, t.what)
		}
	}
	def := models.JobDefinition{Name: "bench-noop", TaskType: TaskType, DefaultParams: models.JSON(`{"duration":"0s"}`),
		MaxAttempts: 1, RetryBackoffSeconds: 1, NotifyOn: models.NotifyNever}
	if err := db.Create(&def).Error; err != nil {
		st.Close()
		return nil, fmt.Errorf("bench: create definition: %w", err)
	}
	exec := newExecLog()
	return &env{cfg: &c, st: st, db: db, def: def.ID, exec: exec, reg: exec.registry()}, nil
}

// analyzeJobs gives PostgreSQL the statistics of the backlog just
// written. A production jobs table has had them since autovacuum's first
// ANALYZE, about a minute after its first rows; the bench starts at once,
// and its figures were those of a table the planner knew nothing about.
func analyzeJobs(e *env) error {
	if e.st.Dialect() != store.Postgres {
		return nil
	}
	if err := e.db.Exec("ANALYZE jobs").Error; err != nil {
		return fmt.Errorf("bench: analyze jobs: %w", err)
	}
	return nil
}

// insertRows writes n rows with multi-row INSERTs of up to 1,000 rows:
// row(i) returns the placeholders' values of row i.
func insertRows(db *gorm.DB, head, tuple string, n int, row func(i int) []any) error {
	const per = 1000
	for done := 0; done < n; done += per {
		k := min(per, n-done)
		var b strings.Builder
		b.WriteString(head)
		args := make([]any, 0, k*strings.Count(tuple, "?"))
		for i := range k {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(tuple)
			args = append(args, row(done+i)...)
		}
		if err := db.Exec(b.String(), args...).Error; err != nil {
			return err
		}
	}
	return nil
}

// node is a running chime node in this process.
type node struct {
	cancel context.CancelFunc
	done   chan error
}

// startNode runs a node on e's configuration with e's registry, so the
// no-op task records into e.exec.
func startNode(ctx context.Context, e *env, log *logrus.Logger) *node {
	runCtx, cancel := context.WithCancel(ctx)
	n := &node{cancel: cancel, done: make(chan error, 1)}
	go func() {
		n.done <- app.Serve(runCtx, e.cfg, app.Options{NoMigrate: true, Logger: log, Registry: e.reg, OnFireCommitted: e.commits.add})
	}()
	return n
}

// stop stops the node gracefully and returns its error.
func (n *node) stop() error {
	n.cancel()
	if err := <-n.done; err != nil {
		return fmt.Errorf("bench: node stop: %w", err)
	}
	return nil
}

// waitFor polls cond every 20 ms until it holds, the node stops, or timeout.
func (n *node) waitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: %s: not done after %v", what, timeout)
		}
		select {
		case err := <-n.done:
			n.done <- err // stop reads it
			return fmt.Errorf("bench: node stopped early: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

var finishedStatuses = []models.JobStatus{models.JobSucceeded, models.JobFailed, models.JobStopped, models.JobCanceled}

// allFinished reports whether at least n jobs have finished. It counts only
// once no job is live: counting the finished rows every poll walked a
// growing part of the index and took a fifth of the server's time during a
// drain, load the node under test does not make. Asking whether any job is
// live reads one index entry.
func allFinished(db *gorm.DB, n int) func() (bool, error) {
	return func() (bool, error) {
		var live []int64
		if err := db.Model(&models.Job{}).Where("status IN ?", liveStatuses).Limit(1).Pluck("id", &live).Error; err != nil || len(live) > 0 {
			return false, err
		}
		var done int64
		err := db.Model(&models.Job{}).Where("status IN ?", finishedStatuses).Count(&done).Error
		return done >= int64(n), err
	}
}

// afterExecuted asks cond (a read of the database) only once n jobs have
// begun their Execute in this process, and meanwhile once a second, for
// a job that ends without one (failed before it ran). allFinished's read
// is not the one index entry it looks like during a drain: the front of
// the pending range is the entries the claims left delete-marked, which
// it walks until purge removes them. Asked every 20 ms it was 482 reads
// of 6.7 ms on average in a drain of 9.8 s (MariaDB, load 16), server time
// the drain under measurement competed with.
func afterExecuted(l *execLog, n int, cond func() (bool, error)) func() (bool, error) {
	var asked time.Time
	return func() (bool, error) {
		if l.count() < n && time.Since(asked) < time.Second {
			return false, nil
		}
		asked = time.Now()
		return cond()
	}
}

var liveStatuses = []models.JobStatus{models.JobPending, models.JobQueued, models.JobRunning, models.JobPaused}

// drain inserts o.Jobs pending no-op jobs, runs a worker-only node
// until every one has finished, and reports jobs/s from the first claim
// (min queued_at) to the last outcome (max finished_at).
func drain(ctx context.Context, cfg *configs.Config, log *logrus.Logger, o Options) (*Line, error) {
	if o.Jobs <= 0 {
		o.Jobs = 20000
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	e, err := prepare(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	defer e.st.Close()
	e.cfg.ScheduleEngine.Enabled = false
	due := store.DBTime(time.Now().Add(-time.Second))
	if err := insertRows(e.db, "INSERT INTO jobs (job_definition_id, scheduled_at, run_at, status) VALUES ", "(?,?,?,'pending')",
		o.Jobs, func(int) []any { return []any{e.def, due, due} }); err != nil {
		return nil, fmt.Errorf("bench: insert jobs: %w", err)
	}
	if err := analyzeJobs(e); err != nil {
		return nil, err
	}
	n := startNode(ctx, e, log)
	werr := n.waitFor(ctx, o.Timeout, "drain", afterExecuted(e.exec, o.Jobs, allFinished(e.db, o.Jobs)))
	serr := n.stop()
	if err := errors.Join(werr, serr); err != nil {
		return nil, err
	}
	var jobs []models.Job
	if err := e.db.Select("id, status, scheduled_at, queued_at, started_at, finished_at").Find(&jobs).Error; err != nil {
		return nil, err
	}
	var first, last time.Time
	var succeeded int
	var inQueue []float64 // started_at − queued_at
	for _, j := range jobs {
		if j.Status == models.JobSucceeded {
			succeeded++
		}
		if j.QueuedAt != nil && (first.IsZero() || j.QueuedAt.Before(first)) {
			first = *j.QueuedAt
		}
		if j.FinishedAt != nil && j.FinishedAt.After(last) {
			last = *j.FinishedAt
		}
		if j.QueuedAt != nil && j.StartedAt != nil {
			inQueue = append(inQueue, ms(j.StartedAt.Sub(*j.QueuedAt)))
		}
	}
	took := last.Sub(first)
	l := &Line{}
	l.add("bench", "drain")
	l.add("driver", e.cfg.Database.Driver)
	l.add("jobs", o.Jobs)
	l.add("pool", e.cfg.TaskEngine.PoolSize)
	l.add("succeeded", succeeded)
	l.add("seconds", strconv.FormatFloat(took.Seconds(), 'f', 3, 64))
	l.add("jobs_per_s", rate(len(jobs), took))
	q := percentiles(inQueue)
	l.add("queued_to_started_p50_ms", q.P50)
	l.add("queued_to_started_p99_ms", q.P99)
	return l, nil
}

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// burst creates o.Jobs once schedules all due in the same second, runs a
// node until each has a finished job, and reports how long after the due
// time the fires were written and the jobs started.
func burst(ctx context.Context, cfg *configs.Config, log *logrus.Logger, o Options) (*Line, error) {
	if o.Jobs <= 0 {
		o.Jobs = 10000
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	e, err := prepare(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	defer e.st.Close()
	// Due after the node is up (start-up is restart's figure, not this one).
	due := time.Now().UTC().Truncate(time.Second).Add(5 * time.Second)
	if err := insertRows(e.db, "INSERT INTO schedules (name, job_definition_id, schedule_type, run_at) VALUES ", "(?, ?, 'once', ?)",
		o.Jobs, func(i int) []any { return []any{fmt.Sprintf("bench-%07d", i), e.def, store.DBTime(due)} }); err != nil {
		return nil, fmt.Errorf("bench: insert schedules: %w", err)
	}
	n := startNode(ctx, e, log)
	werr := n.waitFor(ctx, o.Timeout+time.Until(due), "burst", allFinished(e.db, o.Jobs))
	serr := n.stop()
	if err := errors.Join(werr, serr); err != nil {
		return nil, err
	}
	var jobs []models.Job
	if err := e.db.Select("id, schedule_id, status, scheduled_at, created_at, started_at, finished_at").Find(&jobs).Error; err != nil {
		return nil, err
	}
	var written, started []float64
	var ex execSamples
	var lastDone time.Time
	seen := map[int64]bool{}
	dups := 0
	for _, j := range jobs {
		ex.add(e.exec, &j, due)
		if j.ScheduleID != nil {
			if seen[*j.ScheduleID] {
				dups++
			}
			seen[*j.ScheduleID] = true
		}
		written = append(written, ms(j.CreatedAt.Sub(due)))
		if j.StartedAt != nil {
			started = append(started, ms(j.StartedAt.Sub(due)))
		}
		if j.FinishedAt != nil && j.FinishedAt.After(lastDone) {
			lastDone = *j.FinishedAt
		}
	}
	w, s := percentiles(written), percentiles(started)
	l := &Line{}
	l.add("bench", "burst")
	l.add("driver", e.cfg.Database.Driver)
	l.add("schedules", o.Jobs)
	l.add("pool", e.cfg.TaskEngine.PoolSize)
	l.add("jobs", len(jobs))
	l.add("missed", o.Jobs-len(seen))
	l.add("duplicates", dups)
	l.add("fire_p50_ms", w.P50)
	l.add("fire_last_ms", w.Max)
	l.add("start_p50_ms", s.P50)
	l.add("start_p99_ms", s.P99)
	ex.addTo(l)
	l.add("done_last_ms", lastDone.Sub(due))
	return l, nil
}

// steady runs Lateness: o.Schedules schedules every second for o.Duration.
// continuous is the same run read for throughput: jobs finished per second
// of the window, with every fire of the window written and finished.
func steady(ctx context.Context, cfg *configs.Config, log *logrus.Logger, name string, o Options) (*Line, error) {
	if o.Schedules <= 0 {
		o.Schedules = 1000
	}
	if o.Duration <= 0 {
		o.Duration = 60 * time.Second
	}
	r, err := Lateness(ctx, cfg, log, LatenessOptions{Schedules: o.Schedules, Duration: o.Duration})
	if err != nil {
		return nil, err
	}
	l := &Line{}
	l.add("bench", name)
	l.add("driver", r.Driver)
	l.add("schedules", r.Schedules)
	l.add("pool", cfg.TaskEngine.PoolSize)
	l.add("seconds", int(r.Duration/time.Second))
	l.add("jobs", r.Jobs)
	l.add("missed", r.Missing)
	l.add("duplicates", r.Duplicates)
	if name == "continuous" {
		l.add("finished", r.Finished)
		l.add("unfinished", r.Jobs-r.Finished)
		l.add("jobs_per_s", rate(r.Finished, r.Duration))
	}
	l.add("fire_p50_ms", r.Written.P50)
	l.add("fire_p99_ms", r.Written.P99)
	l.add("commit_p50_ms", r.Committed.P50)
	l.add("commit_p99_ms", r.Committed.P99)
	l.add("commit_max_ms", r.Committed.Max)
	l.add("start_p50_ms", r.StartedAt.P50)
	l.add("start_p99_ms", r.StartedAt.P99)
	l.add("start_max_ms", r.StartedAt.Max)
	addExec(l, r.ExecJobs, r.Exec, r.ExecAfterStarted)
	return l, nil
}

// restart creates o.Schedules active cron schedules that fire once a year
// and one that fires every second (the probe), starts a node (which builds
// every trigger), stops it, and starts it again: restore_ms is from that
// second start to the probe's first fire written. The node runs in this
// process, so its peak RSS is the process's high-water mark started over
// before each start, once the insert's memory has been returned:
// first_peak_rss_mb and peak_rss_mb (the restart and the watch after it)
// are the node's, not the bench's million-row insert. Then it watches the
// probe for o.Duration: its fires must all be there and start on time.
func restart(ctx context.Context, cfg *configs.Config, log *logrus.Logger, o Options) (*Line, error) {
	if o.Schedules <= 0 {
		o.Schedules = 1_000_000
	}
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	e, err := prepare(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	defer e.st.Close()
	// Midnight on 1 January: no fire within any run of this scenario.
	if err := insertRows(e.db, "INSERT INTO schedules (name, job_definition_id, schedule_type, cron_expr) VALUES ", "(?, ?, 'cron', ?)",
		o.Schedules, func(i int) []any {
			expr := "0 0 0 1 1 *"
			if i == 0 {
				expr = "* * * * * *"
			}
			return []any{fmt.Sprintf("bench-%07d", i), e.def, expr}
		}); err != nil {
		return nil, fmt.Errorf("bench: insert schedules: %w", err)
	}
	probeFired := func(after time.Time) func() (bool, error) {
		return func() (bool, error) {
			var n int64
			err := e.db.Model(&models.Job{}).Where("created_at >= ?", store.DBTime(after)).Count(&n).Error
			return n > 0, err
		}
	}
	// The figure is the node's: the insert's buffers above are returned
	// to the system and the high-water mark starts over before each start.
	rssBefore, reset := resetPeakRSS()
	began := time.Now()
	n := startNode(ctx, e, log)
	if err := n.waitFor(ctx, o.Timeout, "first start", probeFired(began)); err != nil {
		return nil, errors.Join(err, n.stop())
	}
	first := time.Since(began)
	if err := n.stop(); err != nil {
		return nil, err
	}
	firstPeak := peakRSS()
	resetPeakRSS()
	began = time.Now()
	n = startNode(ctx, e, log)
	if err := n.waitFor(ctx, o.Timeout, "restart", probeFired(began)); err != nil {
		return nil, errors.Join(err, n.stop())
	}
	restored := time.Since(began)
	// Watch whole seconds after the restore.
	from := time.Now().UTC().Truncate(time.Second).Add(time.Second)
	select {
	case <-ctx.Done():
	case <-time.After(o.Duration + time.Second):
	}
	until := time.Now().UTC().Truncate(time.Second).Add(-time.Second)
	if err := n.stop(); err != nil {
		return nil, err
	}
	var jobs []models.Job
	if err := e.db.Select("id, scheduled_at, created_at, started_at").
		Where("scheduled_at >= ? AND scheduled_at <= ?", from, until).Find(&jobs).Error; err != nil {
		return nil, err
	}
	var written, started []float64
	seen := map[int64]bool{}
	for _, j := range jobs {
		seen[j.ScheduledAt.Unix()] = true
		written = append(written, ms(j.CreatedAt.Sub(j.ScheduledAt)))
		if j.StartedAt != nil {
			started = append(started, ms(j.StartedAt.Sub(j.ScheduledAt)))
		}
	}
	w, s := percentiles(written), percentiles(started)
	l := &Line{}
	l.add("bench", "restart")
	l.add("driver", e.cfg.Database.Driver)
	l.add("schedules", o.Schedules)
	l.add("first_start_ms", first)
	l.add("restore_ms", restored)
	l.add("rss_before_mb", rssBefore/1024)
	l.add("first_peak_rss_mb", firstPeak/1024)
	l.add("peak_rss_mb", peakRSS()/1024)
	l.add("peak_reset", reset)
	l.add("probe_seconds", int(until.Sub(from)/time.Second)+1)
	l.add("probe_missed", int(until.Sub(from)/time.Second)+1-len(seen))
	l.add("probe_fire_p99_ms", w.P99)
	// created_at of a fire prepared ahead is its instant: the commit says
	// how late the fire really became visible.
	l.add("probe_commit_p99_ms", percentiles(e.commits.between(from, until)).P99)
	l.add("probe_start_p99_ms", s.P99)
	return l, nil
}

// peakRSS is this process's VmHWM in KiB, 0 where /proc does not say.
func peakRSS() int64 { return procStatusKB("VmHWM") }

// resetPeakRSS returns the memory the Go heap no longer uses to the system
// and starts the high-water mark over (Linux: "5" into clear_refs), so a
// peak read afterwards is what came after: the node's, not the bench's
// insert of a million rows. It returns the resident size then, and false
// when the mark could not be reset (the peak then covers everything).
func resetPeakRSS() (int64, bool) {
	runtime.GC()
	debug.FreeOSMemory()
	err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	return procStatusKB("VmRSS"), err == nil
}

// procStatusKB reads a kB field of /proc/self/status, 0 where /proc does
// not say.
func procStatusKB(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb
		}
	}
	return 0
}
