package tasks

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"
)

// Job is what one run of a task sees. The engine builds it; a task reads
// the exported fields and uses the methods. A Job is used by pointer only.
type Job struct {
	ID             int64
	ScheduleID     int64 // 0 for an ad hoc run
	DefinitionID   int64
	DefinitionName string
	ScheduleName   string // "" for an ad hoc run
	TaskType       string
	NodeID         string
	ScheduledAt    time.Time // the intended fire time
	Attempt        int       // 1-based
	MaxAttempts    int
	Snoozes        int // times the job was snoozed before this run (see Snooze)
	// ShardIndex and ShardTotal tell a broadcast definition's job
	// (job_definitions.broadcast: one job per live node with its tags)
	// which of how many it is, 0-based, so a plugin can split the work;
	// both 0 for any other job.
	ShardIndex int
	ShardTotal int
	Params     json.RawMessage // definition defaults merged with schedule params
	// SecretParams says Params hold values the engine resolved from
	// secrets (docs/security.md): the task may use them for this run and
	// must keep nothing of Params past it (no cache keyed or filled by
	// them), so that a secret lives only in its run's memory.
	SecretParams bool
	Notify       NotifySpec

	// RunID, StepID, Step, RunParams and Upstream are set for the job of a
	// workflow step (docs/workflows.md), zero otherwise. RunParams are
	// the run's params (the step's own are in Params). Upstream holds,
	// by step name, what each step this one waits on left: every
	// upstream step is over when a step's job is written, so it is
	// complete and does not change.
	RunID     int64
	StepID    int64 // workflow_steps.id of Step
	Step      string
	RunParams json.RawMessage
	Upstream  map[string]StepResult

	// Logger carries job_id and schedule_id and a hook that stores lines in
	// job_logs. Use Log(), which copes with a nil Logger.
	Logger *logrus.Entry
	// Notifier receives the completion notice from Base.OnComplete; nil
	// means no notification. The task engine sets one per run that records
	// the hand-off: the notice is written with the outcome (the outbox).
	Notifier Notifier
	// Clock is the time source of pause accounting and the active timeout
	// (WithActiveTimeout). The task engine sets its own, so a fake clock in
	// a test drives timeouts too; nil means the real clock.
	Clock clockwork.Clock

	mu          sync.Mutex
	paused      bool
	pausedAt    time.Time
	pausedTotal time.Duration
	resumed     chan struct{} // closed on resume; replaced on each pause
	timeout     *activeTimeout
	result      string
	attachments []Attachment
}

// Bind decodes Params strictly into v (a pointer to a struct): unknown
// fields are rejected and every error names the offending field. Empty or
// null Params decode as {}.
func (j *Job) Bind(v any) error { return DecodeParams(j.Params, v) }

// Log returns the job's logger. With no Logger set it falls back to
// logrus's standard logger with the job's fields, so tasks never nil-check.
func (j *Job) Log() *logrus.Entry {
	if j.Logger != nil {
		return j.Logger
	}
	return logrus.NewEntry(logrus.StandardLogger()).WithFields(logrus.Fields{
		"job_id":      j.ID,
		"schedule_id": j.ScheduleID,
	})
}

// SetResult records the output that ends in the jobs.result column. The
// last call wins.
func (j *Job) SetResult(s string) {
	j.mu.Lock()
	j.result = s
	j.mu.Unlock()
}

// Result returns what SetResult recorded.
func (j *Job) Result() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.result
}

// Attach adds a file to the completion email, if one is sent. Keep it
// small: it is held in memory until the notice is delivered.
func (j *Job) Attach(a Attachment) {
	j.mu.Lock()
	j.attachments = append(j.attachments, a)
	j.mu.Unlock()
}

// Attachments returns a copy of what Attach added.
func (j *Job) Attachments() []Attachment {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]Attachment(nil), j.attachments...)
}

// Checkpoint is where a cooperative task may be held by Pause. It returns
// at once when the job is not paused, blocks while it is, and returns
// ctx.Err() if ctx ends first. Because it also returns ctx.Err() when not
// paused, a loop can use it as its only cancellation check.
func (j *Job) Checkpoint(ctx context.Context) error {
	for {
		j.mu.Lock()
		paused, resumed := j.paused, j.resumed
		j.mu.Unlock()
		if !paused {
			return ctx.Err()
		}
		select {
		case <-resumed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Paused reports whether the job is paused now.
func (j *Job) Paused() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.paused
}

// PausedDuration is the total time spent paused so far, the current pause
// included. WithActiveTimeout uses the same clock, so most engines need not
// call this; it is here for reporting.
func (j *Job) PausedDuration() time.Duration {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.pausedLocked(j.clock().Now())
}

var realClock = clockwork.NewRealClock()

func (j *Job) clock() clockwork.Clock {
	if j.Clock != nil {
		return j.Clock
	}
	return realClock
}

func (j *Job) pausedLocked(now time.Time) time.Duration {
	d := j.pausedTotal
	if j.paused {
		d += now.Sub(j.pausedAt)
	}
	return d
}

// pause and resume are reached through Base; they report whether the state
// changed.
func (j *Job) pause() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.paused {
		return false
	}
	j.paused = true
	j.pausedAt = j.clock().Now()
	j.resumed = make(chan struct{})
	if j.timeout != nil {
		j.timeout.timer.Stop()
	}
	return true
}

func (j *Job) resume() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.paused {
		return false
	}
	now := j.clock().Now()
	j.pausedTotal += now.Sub(j.pausedAt)
	j.paused = false
	close(j.resumed)
	if t := j.timeout; t != nil {
		t.timer.Reset(t.remaining(now, j.pausedTotal))
	}
	return true
}

type activeTimeout struct {
	timer        clockwork.Timer
	budget       time.Duration
	start        time.Time
	pausedBefore time.Duration // PausedDuration at start
}

func (t *activeTimeout) remaining(now time.Time, pausedNow time.Duration) time.Duration {
	active := now.Sub(t.start) - (pausedNow - t.pausedBefore)
	return max(t.budget-active, 0)
}

// WithActiveTimeout returns a context that ends, with cause ErrTimeout,
// once the job has run unpaused for d, measured on job.Clock. A fixed deadline would let a long
// pause time a job out; this clock stops while the job is paused (through
// Base.Pause) and restarts on Resume. d <= 0 means no timeout. Call the
// returned CancelFunc when Execute returns.
func WithActiveTimeout(ctx context.Context, job *Job, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	if d <= 0 {
		return ctx, func() { cancel(context.Canceled) }
	}
	clock := job.clock()
	now := clock.Now()
	job.mu.Lock()
	t := &activeTimeout{budget: d, start: now, pausedBefore: job.pausedLocked(now)}
	t.timer = clock.AfterFunc(d, func() { cancel(ErrTimeout) })
	if job.paused {
		t.timer.Stop()
	}
	job.timeout = t
	job.mu.Unlock()
	return ctx, func() {
		job.mu.Lock()
		t.timer.Stop()
		if job.timeout == t {
			job.timeout = nil
		}
		job.mu.Unlock()
		cancel(context.Canceled)
	}
}

// StepResult is what an upstream workflow step left for the steps after
// it: its state (succeeded, failed, skipped), its job's id, and what its
// task passed to SetResult and its error, each cut to 64 KiB.
type StepResult struct {
	State  string `json:"state"`
	JobID  int64  `json:"job_id,omitempty"`
	Result string `json:"result,omitempty"`
	Error  string `json:"error,omitempty"`
}
