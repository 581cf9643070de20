// Package sleep is the built-in "sleep" task: it waits for a while, for
// demos, tests and benchmarks of the engine. It imports only tasks.
//
// Params: {"duration": "250ms", "fail": false}. Only unpaused time counts
// toward the duration, so a paused sleep resumes where it stopped.
package sleep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/chimesched/chime/tasks"
)

// Kind is the task_type of this task.
const Kind = "sleep"

// step bounds how long a pause takes to hold the task: it sleeps in steps
// of at most this and checks in between.
const step = 10 * time.Millisecond

// Params are the task's params.
type Params struct {
	Duration tasks.Duration `json:"duration"`
	Fail     bool           `json:"fail"` // fail after sleeping
}

// Task sleeps.
type Task struct{ tasks.Base }

// New returns a sleep task.
func New() tasks.Task { return &Task{} }

// QueueFree implements tasks.QueueFree: OnQueue is Base's, which does
// nothing, so the engine may claim the job straight into running.
func (*Task) QueueFree() {}

// Validate implements tasks.Validator.
func (*Task) Validate(params json.RawMessage) error {
	var p Params
	return tasks.DecodeParams(params, &p)
}

// ErrFailed is returned after sleeping when params ask for "fail": true.
var ErrFailed = errors.New(`sleep: failing as asked ("fail": true)`)

// Execute implements tasks.Task.
func (*Task) Execute(ctx context.Context, job *tasks.Job) error {
	var p Params
	if err := job.Bind(&p); err != nil {
		return err
	}
	total := p.Duration.Std()
	// Since Go 1.23 a stopped timer can be Reset without draining.
	timer := time.NewTimer(step)
	timer.Stop()
	defer timer.Stop()
	for slept := time.Duration(0); slept < total; {
		if job.Checkpoint(ctx) != nil {
			return fmt.Errorf("sleep: after %v of %v: %w", slept.Round(time.Millisecond), total, tasks.ContextError(ctx))
		}
		d := min(step, total-slept)
		start := time.Now()
		timer.Reset(d)
		select {
		case <-timer.C:
		case <-ctx.Done():
			return fmt.Errorf("sleep: after %v of %v: %w", slept.Round(time.Millisecond), total, tasks.ContextError(ctx))
		}
		slept += time.Since(start)
	}
	job.SetResult(fmt.Sprintf("slept %v", total))
	if p.Fail {
		return ErrFailed
	}
	return nil
}
