package cluster

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/models"
)

// MaxRetentionDays bounds RetentionDays: models.RetentionBound's, a
// century.
const MaxRetentionDays = models.MaxRetentionDays

// Config configures a Node. Zero fields take the defaults given.
type Config struct {
	// NodeID names this node in nodes, leases and jobs.node_id. Required.
	NodeID string
	// Roles is written to nodes.roles, e.g. "scheduler,worker". Only a node
	// whose roles include "scheduler" competes for the scheduler lease.
	Roles string
	// Tags is written to nodes.tags: this node's tags, sorted and
	// comma-separated.
	Tags string
	// Hostname, PID and Version describe the process in nodes (defaults:
	// os.Hostname, os.Getpid, "").
	Hostname string
	PID      int
	Version  string

	// Heartbeat is how often the node beats, renews its leases and reaps
	// (default 5s, cluster.heartbeat).
	Heartbeat time.Duration
	// FailoverAfter is how long a node may be silent before it is dead, and
	// the TTL of leases (default 20s, cluster.failover_after). Must exceed
	// Heartbeat; at least 3 heartbeats is sensible.
	FailoverAfter time.Duration
	// LeaseMargin is how long before its lease can expire a leader stops
	// considering itself leader (default min(Heartbeat, FailoverAfter/4)).
	LeaseMargin time.Duration
	// ReconcileEvery is how often the maintenance leader reconciles
	// (default 4 × Heartbeat).
	ReconcileEvery time.Duration
	// QueuedAfter is how long a job may stay queued without starting before
	// the reconciler sends it back to pending (default 3 × FailoverAfter). A
	// task's OnQueue runs while the job is queued, so this bounds OnQueue too.
	QueuedAfter time.Duration
	// OverdueAfter is how far behind the database's clock a trigger's
	// next_fire_at must be to count as stuck (default 3 × FailoverAfter, at
	// least 1m): less than that is a failover or outage in progress, which
	// the schedule engine catches up by itself.
	OverdueAfter time.Duration
	// RetentionDays is how long finished jobs are kept; 0 keeps them forever
	// (retention_days; the shipped configuration says 30). At most
	// MaxRetentionDays; Node.SetRetentionDays changes it while running.
	RetentionDays int
	// RetentionEvery is how often the maintenance leader deletes old jobs
	// (default 1h; the first run is one Heartbeat after it gains the lease).
	RetentionEvery time.Duration
	// RetentionBatch is how many jobs one delete transaction takes (default 500).
	RetentionBatch int

	// Logger receives the node's lines (default: logrus's standard logger).
	Logger logrus.FieldLogger
	// Clock drives timers and the leader's deadline (default: the real
	// clock). It takes no part in judgements other nodes rely on.
	Clock clockwork.Clock
	// OnDeclaredDead, if set, is called (on the heartbeat goroutine) when
	// this node finds that the others declared it dead while it could not
	// reach the database: its jobs have been handed to other nodes.
	OnDeclaredDead func()
	// OnDrain, if set, is called after every heartbeat with this node's
	// nodes.drain ("", "draining", "drained", or what SQL wrote): the
	// task engine stops claiming while it is not "". Idle, if set, says
	// whether the node runs no job any more: a draining node is then
	// marked drained. Without Idle a node that runs no jobs (no task
	// engine) is drained at once.
	OnDrain func(drain string)
	Idle    func() bool
}

// WithDefaults returns a copy of c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Hostname == "" {
		c.Hostname, _ = os.Hostname()
	}
	if c.PID == 0 {
		c.PID = os.Getpid()
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = 5 * time.Second
	}
	if c.FailoverAfter == 0 {
		c.FailoverAfter = 20 * time.Second
	}
	if c.LeaseMargin == 0 {
		c.LeaseMargin = min(c.Heartbeat, c.FailoverAfter/4)
	}
	if c.ReconcileEvery == 0 {
		c.ReconcileEvery = 4 * c.Heartbeat
	}
	if c.QueuedAfter == 0 {
		c.QueuedAfter = 3 * c.FailoverAfter
	}
	if c.OverdueAfter == 0 {
		c.OverdueAfter = max(3*c.FailoverAfter, time.Minute)
	}
	if c.RetentionEvery == 0 {
		c.RetentionEvery = time.Hour
	}
	if c.RetentionBatch == 0 {
		c.RetentionBatch = 500
	}
	if c.Logger == nil {
		c.Logger = logrus.StandardLogger()
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	return c
}

func (c *Config) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("cluster: "+format, args...)) }
	if c.NodeID == "" {
		bad("NodeID is required")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"Heartbeat", c.Heartbeat}, {"FailoverAfter", c.FailoverAfter}, {"LeaseMargin", c.LeaseMargin},
		{"ReconcileEvery", c.ReconcileEvery}, {"QueuedAfter", c.QueuedAfter}, {"OverdueAfter", c.OverdueAfter}, {"RetentionEvery", c.RetentionEvery},
	} {
		if d.v < 0 {
			bad("%s must be positive, got %s", d.name, d.v)
		}
	}
	if c.FailoverAfter <= c.Heartbeat {
		bad("FailoverAfter (%s) must be longer than Heartbeat (%s)", c.FailoverAfter, c.Heartbeat)
	}
	if c.LeaseMargin >= c.FailoverAfter {
		bad("LeaseMargin (%s) must be shorter than FailoverAfter (%s)", c.LeaseMargin, c.FailoverAfter)
	}
	if err := checkRetentionDays(c.RetentionDays); err != nil {
		bad("RetentionDays %v", err)
	}
	if c.RetentionBatch < 0 {
		bad("RetentionBatch must not be negative, got %d", c.RetentionBatch)
	}
	return errors.Join(errs...)
}

func checkRetentionDays(days int) error {
	switch {
	case days < 0:
		return fmt.Errorf("must not be negative, got %d", days)
	case days > MaxRetentionDays:
		return fmt.Errorf("must be at most %d (100 years), got %d", MaxRetentionDays, days)
	}
	return nil
}

// hasRole reports whether the comma-separated roles include role.
func hasRole(roles, role string) bool {
	return slices.ContainsFunc(strings.Split(roles, ","), func(r string) bool { return strings.TrimSpace(r) == role })
}

// opTimeout bounds one database call of the cluster loops, so a hung
// connection delays a beat rather than stopping the loop.
func (c *Config) opTimeout() time.Duration { return max(c.FailoverAfter/2, time.Second) }
