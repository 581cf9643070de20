package cluster

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// Membership is this node's row in nodes: registration, heartbeats on the
// database's clock, and the stopped mark on the way out. It also tracks how
// long this node has been in unbroken contact with the database, which
// gates every judgement of other nodes (see ContactFor).
type Membership struct {
	st   chimedb.ClusterStore
	cfg  *Config
	info chimedb.RegisterNodeParams
	log  logrus.FieldLogger

	mu           sync.Mutex
	drain        string    // nodes.drain as the last heartbeat read it
	contactSince time.Time // on cfg.Clock; zero while out of contact
	failures     int       // consecutive failed beats
	firstFailure time.Time
}

func newMembership(st chimedb.ClusterStore, cfg *Config) *Membership {
	return &Membership{
		st:  st,
		cfg: cfg,
		info: chimedb.RegisterNodeParams{
			ID: cfg.NodeID, Hostname: cfg.Hostname, PID: cfg.PID, Version: cfg.Version, Roles: cfg.Roles, Tags: cfg.Tags,
		},
		log: cfg.Logger.WithField("node_id", cfg.NodeID),
	}
}

// Register writes this node as alive, now by the database's clock.
func (m *Membership) Register(ctx context.Context) error {
	start := m.cfg.Clock.Now()
	if err := m.st.RegisterNode(ctx, &m.info); err != nil {
		return err
	}
	m.mu.Lock()
	m.contactSince = start
	m.mu.Unlock()
	// A node drained before a restart stays drained: known before its
	// engine claims.
	m.SyncDrain(ctx)
	// Tidying only: a failure costs a stale row in `chime nodes`, not the start.
	gone, err := m.st.DeleteReplacedNodes(ctx, m.info.Hostname, m.info.ID)
	if err != nil {
		m.log.WithError(err).Warn("could not delete the rows of this host's earlier processes from nodes")
	} else if len(gone) > 0 {
		m.log.WithField("nodes", gone).Info("deleted the rows of this host's earlier processes (default node ids) from nodes")
	}
	return nil
}

// Beat is one heartbeat. A failure is logged and left for the next beat to
// retry (database/sql replaces broken connections by itself); the first
// failure and every tenth after it are logged, and the recovery once, so an
// outage reads clearly without flooding the log.
func (m *Membership) Beat(ctx context.Context) error {
	start := m.cfg.Clock.Now()
	// Should the row have gone (an admin's DELETE), it is written again
	// with the drain this node knows: deleting the row of a draining node
	// that still runs must not undo the request to drain it.
	m.mu.Lock()
	info := m.info
	info.Drain = m.drain
	m.mu.Unlock()
	bctx, cancel := context.WithTimeout(ctx, m.cfg.opTimeout())
	prev, err := m.st.HeartbeatNode(bctx, &info)
	cancel()
	m.mu.Lock()
	if err != nil {
		m.contactSince = time.Time{}
		m.failures++
		if m.failures == 1 {
			m.firstFailure = start
		}
		n, since := m.failures, start.Sub(m.firstFailure)
		m.mu.Unlock()
		if ctx.Err() == nil && (n == 1 || n%10 == 0) {
			m.log.WithError(err).WithFields(logrus.Fields{"failures": n, "since": since.Round(time.Millisecond).String()}).
				Error("heartbeat failed: cannot reach the database; retrying every heartbeat")
		}
		return err
	}
	failures, since := m.failures, start.Sub(m.firstFailure)
	m.failures = 0
	if m.contactSince.IsZero() {
		m.contactSince = start
	}
	m.mu.Unlock()
	if failures > 0 {
		m.log.WithFields(logrus.Fields{"failed_beats": failures, "outage": since.Round(time.Millisecond).String()}).
			Warn("heartbeat succeeded again: the database is reachable")
	}
	switch prev {
	case chimedb.NodeDead:
		m.log.Error("the cluster had declared this node dead (no heartbeat within the failover window) and handed its jobs to other nodes; it is alive again")
		if m.cfg.OnDeclaredDead != nil {
			m.cfg.OnDeclaredDead()
		}
	case "":
		if info.Drain != "" {
			m.log.WithField("drain", info.Drain).Warn("this node's row had gone from nodes while it was draining; registered it again, still draining (undrain it to let it claim)")
		} else {
			m.log.Warn("this node's row had gone from nodes; registered it again")
		}
	}
	return nil
}

// ContactFor returns how long this node has beaten without a failure, or 0
// while it is out of contact. A node judges others only once this reaches
// FailoverAfter: after an outage all heartbeats are stale, and the others
// need one window to beat again before silence means death.
func (m *Membership) ContactFor() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.contactSince.IsZero() {
		return 0
	}
	return m.cfg.Clock.Since(m.contactSince)
}

// Leave marks this node stopped, so the others know at once that it is gone.
func (m *Membership) Leave(ctx context.Context) error {
	return m.st.SetNodeStatus(ctx, m.cfg.NodeID, chimedb.NodeStopped)
}

// SyncDrain reads this node's nodes.drain after a heartbeat, marks it
// drained when it is draining and the node runs nothing, and hands it to
// OnDrain. It costs a normal node one read by primary key per heartbeat.
// A failure is logged and left for the next beat: the node keeps what it
// knew.
func (m *Membership) SyncDrain(ctx context.Context) {
	m.mu.Lock()
	was := m.drain
	m.mu.Unlock()
	idle := was == models.NodeDraining && (m.cfg.Idle == nil || m.cfg.Idle())
	bctx, cancel := context.WithTimeout(ctx, m.cfg.opTimeout())
	drain, err := m.st.SyncDrain(bctx, m.info.ID, idle)
	cancel()
	if errors.Is(err, chimedb.ErrNotFound) {
		// Deleted since the heartbeat: the next one writes it again,
		// with what this node knew (see Beat).
		m.log.WithField("drain", was).Warn("this node's row has gone from nodes; keeping its drain until the next heartbeat registers it again")
		return
	}
	if err != nil {
		if ctx.Err() == nil {
			m.log.WithError(err).Warn("reading this node's drain failed; retrying next heartbeat")
		}
		return
	}
	m.mu.Lock()
	m.drain = drain
	m.mu.Unlock()
	if drain != was {
		m.log.WithFields(logrus.Fields{"drain": drain, "was": was}).Info("this node's drain changed")
	}
	if m.cfg.OnDrain != nil {
		m.cfg.OnDrain(drain)
	}
}

// Drain returns nodes.drain as the last heartbeat read it.
func (m *Membership) Drain() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.drain
}
