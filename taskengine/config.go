package taskengine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/tasks"
)

// Config configures an Engine. Zero fields take the defaults documented on
// each; WithDefaults fills them.
type Config struct {
	// NodeID names this process in jobs.node_id. Required: crash recovery
	// finds the jobs of a dead process by it, so a restarted node must
	// reuse its id.
	NodeID string
	// NodeTags are this node's tags (node.tags, parsed): the engine claims
	// only jobs whose required tags are all among them.
	NodeTags []string
	// DrainTimeout is how long a draining node lets its running jobs
	// finish before it hands them back to pending without using an
	// attempt (see Engine.SetDrain); 0 waits for them.
	DrainTimeout time.Duration
	// Logger receives the engine's lines and a copy of every job_logs line
	// (default: logrus's standard logger).
	Logger logrus.FieldLogger
	// Clock is the time source for every timestamp and timer (default: the
	// real clock), task timeouts and pause accounting included: each
	// tasks.Job gets it as Job.Clock.
	Clock clockwork.Clock
	// PollInterval is how often the engine looks for due jobs when nothing
	// wakes it (default 4s, the paper's value; jittered by ±10%).
	PollInterval time.Duration
	// Watch, when set, is read every WakeInterval, and a change it reports
	// wakes the engine as Wake does: how jobs that other nodes and plain
	// SQL add start within about WakeInterval on databases without
	// NOTIFY. nil: no such reads (on PostgreSQL, LISTEN calls Wake).
	Watch JobsWatch
	// WakeInterval is how often Watch is read (default 50ms).
	WakeInterval time.Duration
	// PoolSize is the number of jobs run at once (default 16).
	PoolSize int
	// Backlog is how many jobs past its free workers a fire on this node
	// may hand to this engine (chimedb.WriteFiresParams.HandoffQueued):
	// written queued here in the fire's transaction, they wait in memory
	// for a worker instead of for a claim after the commit, so a burst
	// larger than the pool starts at the pace the workers free, not at the
	// claims'. 0 (the default): none, a fire hands off only what the free
	// workers take. The backlog is bounded further by the pool's pace: no
	// more jobs than the pool is expected to start within BacklogWait / 4,
	// from how long its recent runs held their workers (a pool of long runs
	// takes little or none; before any run has been timed, at most the pool
	// size), and fires take none while the last claim came back full (due
	// jobs wait in the database: they come first). A job waits at most
	// BacklogWait; one still waiting then, or when the node stops or
	// drains, goes back to pending without using an attempt. Claims take
	// no backlog: never more than the free workers.
	Backlog int
	// BacklogWait bounds how long a job of the backlog waits for a worker
	// (default 1s). When one waited that long, the node's workers are held
	// by runs longer than expected: it goes back to pending for any node to
	// claim, and the node's fires take no backlog for 10 × BacklogWait.
	BacklogWait time.Duration
	// ControlInterval is how often jobs.control is read (default 1s; a
	// request is acted on within two intervals).
	ControlInterval time.Duration
	// HeartbeatInterval is how often running jobs' heartbeat_at is
	// refreshed (default 5s).
	HeartbeatInterval time.Duration
	// ShutdownGrace is how long Stop lets running jobs finish before it
	// stops them (default 30s; Stop's ctx may cut it shorter).
	ShutdownGrace time.Duration
	// Registry maps task_type to tasks (default: tasks.Default()).
	Registry *tasks.Registry
	// MaxBackoff caps the retry delay (default 1h).
	MaxBackoff time.Duration
	// OnQueueTimeout bounds a task's OnQueue (default 30s): its context
	// ends then, and the job fails. Keep it below the cluster's
	// QueuedAfter, after which the reconciler releases a job still queued.
	OnQueueTimeout time.Duration
	// Secrets opens the secrets that params refer to ({"$secret": NAME}),
	// just before Execute. Nil: a job whose params refer to one fails, as
	// on a node without a key.
	Secrets SecretSource
}

// SecretSource returns a secret's value by name (secrets.Source).
type SecretSource interface {
	Secret(ctx context.Context, name string) (string, error)
}

// Defaults.
const (
	DefaultPollInterval      = 4 * time.Second
	DefaultWakeInterval      = 50 * time.Millisecond
	DefaultPoolSize          = 16
	DefaultControlInterval   = time.Second
	DefaultHeartbeatInterval = 5 * time.Second
	DefaultShutdownGrace     = 30 * time.Second
	DefaultMaxBackoff        = time.Hour
	DefaultOnQueueTimeout    = 30 * time.Second
	DefaultBacklogWait       = time.Second
)

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Logger == nil {
		c.Logger = logrus.StandardLogger()
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.WakeInterval == 0 {
		c.WakeInterval = DefaultWakeInterval
	}
	if c.PoolSize == 0 {
		c.PoolSize = DefaultPoolSize
	}
	if c.ControlInterval == 0 {
		c.ControlInterval = DefaultControlInterval
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = DefaultShutdownGrace
	}
	if c.Registry == nil {
		c.Registry = tasks.Default()
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.OnQueueTimeout == 0 {
		c.OnQueueTimeout = DefaultOnQueueTimeout
	}
	if c.BacklogWait == 0 {
		c.BacklogWait = DefaultBacklogWait
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("taskengine: %s: %s", field, fmt.Sprintf(format, args...)))
	}
	if c.NodeID == "" {
		bad("NodeID", "required: crash recovery finds a dead process's jobs by it")
	}
	if c.PollInterval < 0 {
		bad("PollInterval", "must be positive, got %v", c.PollInterval)
	}
	if c.WakeInterval < 0 {
		bad("WakeInterval", "must be positive, got %v", c.WakeInterval)
	}
	if c.PoolSize < 0 {
		bad("PoolSize", "must be at least 1, got %d", c.PoolSize)
	}
	if c.Backlog < 0 {
		bad("Backlog", "must not be negative, got %d", c.Backlog)
	}
	if c.BacklogWait < 0 {
		bad("BacklogWait", "must be positive, got %v", c.BacklogWait)
	}
	if c.ControlInterval < 0 {
		bad("ControlInterval", "must be positive, got %v", c.ControlInterval)
	}
	if c.HeartbeatInterval < 0 {
		bad("HeartbeatInterval", "must be positive, got %v", c.HeartbeatInterval)
	}
	if c.DrainTimeout < 0 {
		bad("DrainTimeout", "must not be negative, got %v", c.DrainTimeout)
	}
	if c.ShutdownGrace < 0 {
		bad("ShutdownGrace", "must not be negative, got %v", c.ShutdownGrace)
	}
	if c.MaxBackoff < 0 {
		bad("MaxBackoff", "must not be negative, got %v", c.MaxBackoff)
	}
	if c.OnQueueTimeout < 0 {
		bad("OnQueueTimeout", "must be positive, got %v", c.OnQueueTimeout)
	}
	return errors.Join(errs...)
}
