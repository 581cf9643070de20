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

	"github.com/chimesched/chime/app"
	"github.com/chimesched/chime/configs"
	"github.com/chimesched/chime/models"
)

// LatenessOptions says what to run.
type LatenessOptions struct {
	Schedules int           // schedules firing every second
	Duration  time.Duration // how long the node runs
	Task      string        // task type of the jobs ("sleep", 0 s)
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
	Written     Percentiles // jobs.created_at − scheduled_at: when the fire's batch was built
	StartedAt   Percentiles // jobs.started_at − scheduled_at
	PollSetting time.Duration
}

// Percentiles of a sample, in milliseconds.
type Percentiles struct{ P50, P90, P99, Max float64 }

// Lateness creates opts.Schedules schedules firing every second (cron
// "* * * * * *") on a definition of a no-op sleep task, runs a node on cfg for
// opts.Duration, stops it gracefully, and measures from the jobs table how
// long after scheduled_at each fire was written and each job started. The
// database must hold no schedules and no jobs: the figures cover every job.
func Lateness(ctx context.Context, cfg *configs.Config, log *logrus.Logger, opts LatenessOptions) (*LatenessReport, error) {
	if opts.Schedules <= 0 || opts.Duration <= 0 {
		return nil, errors.New("bench: schedules and duration must be positive")
	}
	if opts.Task == "" {
		opts.Task = "sleep"
	}
	e, err := prepare(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	defer e.st.Close()
	cfg, db := e.cfg, e.db
	if opts.Task != "sleep" {
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

	// Fires before the whole node is up are start-up, not steady state.
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- app.Serve(runCtx, cfg, app.Options{NoMigrate: true, Logger: log}) }()
	var from time.Time
	select {
	case err := <-done:
		cancel()
		return nil, fmt.Errorf("bench: node stopped early: %w", err)
	case <-time.After(3 * time.Second):
		from = time.Now().UTC().Truncate(time.Second).Add(time.Second)
	}
	select {
	case err := <-done:
		cancel()
		return nil, fmt.Errorf("bench: node stopped early: %w", err)
	case <-time.After(opts.Duration):
	}
	until := time.Now().UTC().Truncate(time.Second).Add(-time.Second)
	cancel()
	if err := <-done; err != nil {
		return nil, fmt.Errorf("bench: node stop: %w", err)
	}

	var jobs []models.Job
	if err := db.Where("scheduled_at >= ? AND scheduled_at <= ?", from, until).Find(&jobs).Error; err != nil {
		return nil, err
	}
	r := &LatenessReport{Driver: cfg.Database.Driver, Schedules: opts.Schedules, Duration: until.Sub(from) + time.Second,
		Jobs: len(jobs), PollSetting: cfg.TaskEngine.PollInterval.D()}
	seen := make(map[string]bool, len(jobs))
	var written, started []float64
	for _, j := range jobs {
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
	return r, nil
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
	fmt.Fprintf(w, "jobs %d (started %d), catch-ups %d, duplicates %d, missing fires %d\n", r.Jobs, r.Started, r.CatchUps, r.Duplicates, r.Missing)
	fmt.Fprintf(w, "%-32s %8s %8s %8s %8s\n", "ms after scheduled_at", "p50", "p90", "p99", "max")
	for _, row := range []struct {
		name string
		p    Percentiles
	}{{"fire written (jobs.created_at)", r.Written}, {"job started (jobs.started_at)", r.StartedAt}} {
		fmt.Fprintf(w, "%-32s %8.1f %8.1f %8.1f %8.1f\n", row.name, row.p.P50, row.p.P90, row.p.P99, row.p.Max)
	}
}
