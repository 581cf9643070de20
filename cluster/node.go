package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/metrics"
	"github.com/chimesched/chime/internal/startstop"
)

// Node is this process's part in the cluster: membership, reaping, the
// scheduler and maintenance leases, the reconciler and retention.
type Node struct {
	st      chimedb.ClusterStore
	cfg     Config
	log     logrus.FieldLogger
	members *Membership
	sched   *Elector
	maint   *Elector

	// retentionDays is cfg.RetentionDays as changed at run time (a
	// configurations row); the maintenance loop reads it at each pass.
	retentionDays atomic.Int64

	startstop.Base
	mu       sync.Mutex
	nudged   map[int64]time.Time // schedule id → when the reconciler last touched it
	wg       sync.WaitGroup
	finished func() // the running Start's, called by Stop
}

// SetRetentionDays changes how long finished jobs are kept, from the next
// retention pass on. A value Config would refuse is refused and the
// previous one stays.
func (n *Node) SetRetentionDays(days int) error {
	if err := checkRetentionDays(days); err != nil {
		return fmt.Errorf("cluster: retention days %w", err)
	}
	n.retentionDays.Store(int64(days))
	return nil
}

// RetentionDays returns how long finished jobs are kept now.
func (n *Node) RetentionDays() int { return int(n.retentionDays.Load()) }

// New returns a Node for st; it does nothing until Start. cfg is copied;
// nil is the zero Config, which New refuses for want of a NodeID.
func New(st chimedb.ClusterStore, cfg *Config) (*Node, error) {
	if st == nil {
		return nil, errors.New("cluster: New: nil store")
	}
	var c Config
	if cfg != nil {
		c = *cfg
	}
	c = c.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	n := &Node{st: st, cfg: c, log: c.Logger.WithField("node_id", c.NodeID), nudged: map[int64]time.Time{}}
	n.retentionDays.Store(int64(c.RetentionDays))
	n.members = newMembership(st, &n.cfg)
	ec := func(name string) *ElectorConfig {
		return &ElectorConfig{
			Name: name, Holder: c.NodeID, TTL: c.FailoverAfter, Renew: c.Heartbeat, Margin: c.LeaseMargin,
			Timeout: c.opTimeout(), Clock: c.Clock, Logger: c.Logger,
		}
	}
	var err error
	if n.sched, err = NewElector(st, ec(chimedb.SchedulerLease)); err != nil {
		return nil, err
	}
	if n.maint, err = NewElector(st, ec(chimedb.MaintenanceLease)); err != nil {
		return nil, err
	}
	return n, nil
}

// SchedulerElector is the scheduler lease's elector: the schedule engine's
// Leadership. On a node without the scheduler role it never leads.
func (n *Node) SchedulerElector() *Elector { return n.sched }

// MaintenanceLeading reports whether this node holds the maintenance
// lease: the one node at a time that judges the time-based alert rules.
func (n *Node) MaintenanceLeading() bool { return n.maint.Leading() }

// Membership is this node's row in nodes.
func (n *Node) Membership() *Membership { return n.members }

// Start registers the node (an error here is returned: a node that cannot
// reach the database at start should not start), then runs the heartbeat,
// the electors and the maintenance loop until Stop or ctx ends. Call it
// before the engines start, so the node is alive before it claims jobs.
func (n *Node) Start(ctx context.Context) error {
	ctx, finished, ok := n.StartInit(ctx)
	if !ok {
		return nil
	}
	if err := n.members.Register(ctx); err != nil {
		finished()
		return fmt.Errorf("cluster: %w", err)
	}
	n.mu.Lock()
	n.finished = finished
	n.mu.Unlock()
	// Electors start with no database call: they cannot fail here.
	if hasRole(n.cfg.Roles, "scheduler") {
		_ = n.sched.Start(ctx)
	}
	_ = n.maint.Start(ctx)
	n.wg.Add(2)
	go n.beatLoop(ctx)
	go n.maintLoop(ctx)
	if ra, ok := n.st.(runAdvancer); ok {
		n.wg.Add(1)
		go n.runsLoop(ctx, ra)
	}
	n.log.WithFields(logrus.Fields{
		"heartbeat": n.cfg.Heartbeat.String(), "failover_after": n.cfg.FailoverAfter.String(), "roles": n.cfg.Roles,
	}).Info("joined the cluster")
	return nil
}

// Stop ends the loops, gives back the leases this node holds and marks it
// stopped. Call it after the engines have stopped. Idempotent; harmless
// before Start.
func (n *Node) Stop(ctx context.Context) error {
	if _, ok := n.StopInit(); !ok {
		return nil
	}
	n.mu.Lock()
	finished := n.finished
	n.mu.Unlock()
	defer finished()
	errs := []error{n.sched.Stop(ctx), n.maint.Stop(ctx)}
	done := make(chan struct{})
	go func() { n.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("cluster: stop: %w", ctx.Err()))
	}
	if err := n.members.Leave(ctx); err != nil {
		errs = append(errs, fmt.Errorf("cluster: %w", err))
	} else {
		n.log.Info("left the cluster (node marked stopped)")
	}
	return errors.Join(errs...)
}

// beatLoop heartbeats and reaps every Heartbeat.
func (n *Node) beatLoop(ctx context.Context) {
	defer n.wg.Done()
	t := n.cfg.Clock.NewTicker(n.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.Chan():
		}
		n.beatOnce(ctx)
	}
}

// beatOnce is one heartbeat and, when this node has been in contact for a
// full failover window, one reap pass.
func (n *Node) beatOnce(ctx context.Context) {
	if err := n.members.Beat(ctx); err != nil {
		return
	}
	n.members.SyncDrain(ctx)
	if n.members.ContactFor() < n.cfg.FailoverAfter {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, n.cfg.opTimeout())
	defer cancel()
	if _, err := n.reap(rctx); err != nil && ctx.Err() == nil {
		n.log.WithError(err).Warn("reaping dead nodes failed; retrying next heartbeat")
	}
}

// maintLoop runs the reconciler and retention while this node holds the
// maintenance lease.
func (n *Node) maintLoop(ctx context.Context) {
	defer n.wg.Done()
	t := n.cfg.Clock.NewTicker(n.cfg.ReconcileEvery)
	defer t.Stop()
	var wasLeading bool
	var retainDue time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.Chan():
		}
		leading := n.maint.Leading()
		now := n.cfg.Clock.Now()
		if leading || wasLeading {
			n.refreshWaiting(ctx, leading)
		}
		if leading && !wasLeading {
			retainDue = now.Add(n.cfg.Heartbeat)
		}
		wasLeading = leading
		// The same contact rule as reaping: after an outage every job
		// heartbeat is stale until the workers have beaten once more.
		if !leading || n.members.ContactFor() < n.cfg.FailoverAfter {
			continue
		}
		if _, err := n.Reconcile(ctx); err != nil && ctx.Err() == nil {
			n.log.WithError(err).Warn("reconcile failed; retrying next pass")
		}
		if !now.Before(retainDue) {
			if _, err := n.retain(ctx, n.maint.Leading); err != nil && ctx.Err() == nil {
				n.log.WithError(err).Warn("deleting old jobs failed; retrying next pass")
				retainDue = now.Add(n.cfg.ReconcileEvery)
			} else {
				retainDue = now.Add(n.cfg.RetentionEvery)
			}
		}
	}
}

// refreshWaiting sets chime_jobs_waiting: the count while this node holds
// the maintenance lease, 0 once it has lost it, so that summing the gauge
// over nodes gives the count whichever node leads. A failed count leaves
// the last value.
func (n *Node) refreshWaiting(ctx context.Context, leading bool) {
	if !leading {
		metrics.JobsWaiting.Set(0)
		metrics.QueueJobs.Reset()
		return
	}
	cctx, cancel := context.WithTimeout(ctx, n.cfg.opTimeout())
	defer cancel()
	waiting, err := n.st.CountWaitingJobs(cctx)
	if err != nil {
		if ctx.Err() == nil {
			n.log.WithError(err).Warn("counting waiting jobs for chime_jobs_waiting failed; retrying next pass")
		}
		return
	}
	metrics.JobsWaiting.Set(float64(waiting))
	queues, err := n.st.CountQueueJobs(cctx)
	if err != nil {
		if ctx.Err() == nil {
			n.log.WithError(err).Warn("counting jobs per queue for chime_queue_jobs failed; retrying next pass")
		}
		return
	}
	// A queue whose jobs are gone leaves the gauge rather than stay at its
	// last count.
	metrics.QueueJobs.Reset()
	for q, c := range queues {
		metrics.QueueJobs.WithLabelValues(q, "running").Set(float64(c.Running))
		metrics.QueueJobs.WithLabelValues(q, "waiting").Set(float64(c.Waiting))
	}
}
