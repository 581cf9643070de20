package bench

import (
	"context"
	"sync"
	"time"

	"github.com/chimesched/chime/tasks"
)

// TaskType is the task_type of the bench's jobs: a task that does nothing
// but note when its Execute began. It is registered only in the registry of
// the node a bench runs, never for users.
const TaskType = "bench-noop"

// execLog is when each job's Execute began, by job id, as this process's
// clock read it on entry. jobs.started_at cannot say this for every job: the
// fire's hand-off and the claim's straight start write it inside their
// transaction, before the commit, the delivery to the pool and the worker's
// goroutine, so it is when the job was marked running, not when it ran.
type execLog struct {
	mu    sync.Mutex
	began map[int64]time.Time
}

func newExecLog() *execLog { return &execLog{began: make(map[int64]time.Time, 1<<16)} }

// record keeps the first start of a job: a second one (a job recovered
// after a node stopped mid-run) is not when the fire was first served.
func (l *execLog) record(id int64, at time.Time) {
	l.mu.Lock()
	if _, ok := l.began[id]; !ok {
		l.began[id] = at
	}
	l.mu.Unlock()
}

// count is how many jobs' Execute began here.
func (l *execLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.began)
}

// get returns when job id's Execute began, and whether it ran here.
func (l *execLog) get(id int64) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.began[id]
	return at, ok
}

// registry is a fresh registry holding the no-op task (the node adds the
// built-in tasks to it), so parallel benches in one process, whose job ids
// overlap, each record into their own log.
func (l *execLog) registry() *tasks.Registry {
	r := tasks.NewRegistry()
	r.MustRegister(TaskType, func() tasks.Task { return &noopTask{log: l} })
	return r
}

// noopTask records its start and succeeds.
type noopTask struct {
	tasks.Base
	log *execLog
}

// QueueFree implements tasks.QueueFree, as sleep does: the fire's hand-off
// and the claim's straight start apply to the bench's jobs as to users'.
func (*noopTask) QueueFree() {}

// Execute implements tasks.Task. The clock is read first, and without its
// monotonic reading: the instant is compared with the rows' wall-clock
// times (scheduled_at and started_at, written from this process's clock).
// It sets a result, as `sleep 0s` did ("slept 0s"), so the outcome the
// engine writes changes the row as before and drain stays comparable with
// the figures measured on sleep.
func (t *noopTask) Execute(_ context.Context, job *tasks.Job) error {
	t.log.record(job.ID, time.Now().Round(0))
	job.SetResult("bench-noop")
	return nil
}
