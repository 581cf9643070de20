// Package bench runs chime's end-to-end measurements behind `chime bench`:
// a real node (both engines, the configured database) driving real
// schedules, with the figures read back from the rows it wrote.
//
// bench may import app and everything app imports; only cli imports it.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/configs"
	"github.com/chimesched/chime/models"
)

// LatenessOptions says what to run.
type LatenessOptions struct {
	Schedules int           // schedules firing every second
	Duration  time.Duration // how long the node runs
	// Task is the task type of the jobs: TaskType (a no-op that records its
	// start) unless set. The node's registry holds the built-in tasks and
	// TaskType only, so another kind must be built in; exec_* need TaskType.
	Task string
}

// LatenessReport holds the measured figures, in milliseconds after scheduled_at.
type LatenessReport struct {
	Driver      string
	Schedules   int
	Duration    time.Duration
	Jobs        int
	Started     int
	Finished    int
	CatchUps    int
	Duplicates  int
	Missing     int
	Written     Percentiles // jobs.created_at − scheduled_at: when the fire's batch was built (the instant it waited for, prepared ahead)
	Committed   Percentiles // the fire's commit − scheduled_at, from the schedule engine (on-time fires)
	CommitFires int         // fires in Committed
	StartedAt   Percentiles // jobs.started_at − scheduled_at
	PollSetting time.Duration

	// ExecJobs is the jobs whose Execute was seen to begin (TaskType only);
	// Exec is when it began − scheduled_at, ExecAfterStarted when it began
	// − jobs.started_at: how much earlier the row says the job started
	// than it did.
	ExecJobs         int
	Exec             Percentiles
	ExecAfterStarted Percentiles
}

// Percentiles of a sample, in milliseconds.
type Percentiles struct{ P50, P90, P99, Max float64 }

// Lateness creates opts.Schedules schedules firing every second (cron
// "* * * * * *") on a definition of a no-op task, runs a node on cfg for
// opts.Duration, stops it gracefully, and measures from the jobs table how
// long after scheduled_at each fire was written and each job was marked
// started, and from the no-op task when its Execute began. The database
// must hold no schedules and no jobs: the figures cover every job.
func Lateness(ctx context.Context, cfg *configs.Config, log *logrus.Logger, opts LatenessOptions) (*LatenessReport, error) {
	if opts.Schedules <= 0 || opts.Duration <= 0 {
		return nil, errors.New("bench: schedules and duration must be positive")
	}
	if opts.Task == "" {
		opts.Task = TaskType
	}
	e, err := prepare(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	defer e.st.Close()
	cfg, db := e.cfg, e.db
	if opts.Task != TaskType {
		if err := db.Model(&models.JobDefinition{}).Where("id = ?", e.def).Update("task_type", opts.Task).Error; err != nil {
			return nil, err
		}
	}
	var b strings.Builder
	args := make([]any, 0, opts.Schedules)
	b.WriteString("INSERT INTO schedules (name, job_definition_id, schedule_type, cron_expr) VALUES ")
	for i := range opts.Schedules {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?, ?, 'cron', '* * * * * *')")
		args = append(args, fmt.Sprintf("bench-%05d", i), e.def)
	}
	if err := db.Exec(b.String(), args...).Error; err != nil {
		return nil, fmt.Errorf("bench: create schedules: %w", err)
	}

	from, until, err := runWindow(ctx, e, log, opts.Duration)
	if err != nil {
		return nil, err
	}

	var jobs []models.Job
	if err := db.Where("scheduled_at >= ? AND scheduled_at <= ?", from, until).Find(&jobs).Error; err != nil {
		return nil, err
	}
	r := &LatenessReport{Driver: cfg.Database.Driver, Schedules: opts.Schedules, Duration: until.Sub(from) + time.Second,
		Jobs: len(jobs), PollSetting: cfg.TaskEngine.PollInterval.D()}
	seen := make(map[string]bool, len(jobs))
	var written, started []float64
	var ex execSamples
	for _, j := range jobs {
		ex.add(e.exec, &j, j.ScheduledAt)
		key := fmt.Sprint(*j.ScheduleID, j.ScheduledAt.UnixMicro())
		if seen[key] {
			r.Duplicates++
		}
		seen[key] = true
		if j.CatchUp {
			r.CatchUps++
		}
		written = append(written, ms(j.CreatedAt.Sub(j.ScheduledAt)))
		if j.Status.Finished() {
			r.Finished++
		}
		if j.StartedAt != nil {
			r.Started++
			started = append(started, ms(j.StartedAt.Sub(j.ScheduledAt)))
		}
	}
	r.Missing = opts.Schedules*int(r.Duration/time.Second) - len(seen)
	r.Written = percentiles(written)
	r.StartedAt = percentiles(started)
	r.ExecJobs, r.Exec, r.ExecAfterStarted = ex.n, percentiles(ex.late), percentiles(ex.afterStarted)
	commits := e.commits.between(from, until)
	r.CommitFires, r.Committed = len(commits), percentiles(commits)
	return r, nil
}

// runWindow runs a node on e for a 3 s start-up and then d, stops it, and
// returns the whole seconds measured: from the first one after the start-up
// to the last one before the stop. Fires before the whole node is up are
// start-up, not steady state.
func runWindow(ctx context.Context, e *env, log *logrus.Logger, d time.Duration) (from, until time.Time, err error) {
	n := startNode(ctx, e, log)
	select {
	case err := <-n.done:
		n.cancel()
		return from, until, fmt.Errorf("bench: node stopped early: %w", err)
	case <-time.After(3 * time.Second):
		from = time.Now().UTC().Truncate(time.Second).Add(time.Second)
	}
	select {
	case err := <-n.done:
		n.cancel()
		return from, until, fmt.Errorf("bench: node stopped early: %w", err)
	case <-time.After(d):
	}
	until = time.Now().UTC().Truncate(time.Second).Add(-time.Second)
	return from, until, n.stop()
}

// execSamples gathers when the jobs' Execute began, from an execLog.
type execSamples struct {
	n            int
	late         []float64 // Execute began − the reference (scheduled_at, or a burst's due time)
	afterStarted []float64 // Execute began − jobs.started_at
}

func (s *execSamples) add(l *execLog, j *models.Job, ref time.Time) {
	at, ok := l.get(j.ID)
	if !ok {
		return
	}
	s.n++
	s.late = append(s.late, ms(at.Sub(ref)))
	if j.StartedAt != nil {
		s.afterStarted = append(s.afterStarted, ms(at.Sub(*j.StartedAt)))
	}
}

// addTo puts the samples' figures on l.
func (s *execSamples) addTo(l *Line) {
	addExec(l, s.n, percentiles(s.late), percentiles(s.afterStarted))
}

// addExec puts the Execute figures on l: the jobs seen to begin, when they
// began after the reference, and how long after the row's started_at.
func addExec(l *Line, n int, late, afterStarted Percentiles) {
	l.add("exec_jobs", n)
	l.add("exec_p50_ms", late.P50)
	l.add("exec_p99_ms", late.P99)
	l.add("exec_max_ms", late.Max)
	l.add("exec_after_started_p99_ms", afterStarted.P99)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func percentiles(v []float64) Percentiles {
	if len(v) == 0 {
		return Percentiles{}
	}
	slices.Sort(v)
	at := func(q float64) float64 { return v[min(len(v)-1, int(q*float64(len(v))))] }
	return Percentiles{P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: v[len(v)-1]}
}

// Print writes the report for people.
func (r *LatenessReport) Print(w io.Writer) {
	fmt.Fprintf(w, "driver %s, %d schedules every second, %s measured, task poll interval %s\n", r.Driver, r.Schedules, r.Duration, r.PollSetting)
	fmt.Fprintf(w, "jobs %d (started %d, Execute seen %d), catch-ups %d, duplicates %d, missing fires %d\n", r.Jobs, r.Started, r.ExecJobs, r.CatchUps, r.Duplicates, r.Missing)
	fmt.Fprintf(w, "%-32s %8s %8s %8s %8s\n", "ms after scheduled_at", "p50", "p90", "p99", "max")
	for _, row := range []struct {
		name string
		p    Percentiles
	}{{"fire written (jobs.created_at)", r.Written}, {"fire committed", r.Committed}, {"job started (jobs.started_at)", r.StartedAt},
		{"task ran (Execute began)", r.Exec}, {"Execute began − started_at", r.ExecAfterStarted}} {
		fmt.Fprintf(w, "%-32s %8.1f %8.1f %8.1f %8.1f\n", row.name, row.p.P50, row.p.P90, row.p.P99, row.p.Max)
	}
}
