package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/chimedb"
)

// ReapReport says what one reap pass did.
type ReapReport struct {
	// Dead lists the nodes this pass declared dead.
	Dead []chimedb.DeadNode
	// Recovered maps a node id to what was done with its jobs.
	Recovered map[string]*chimedb.RecoverNodeResult
}

// reap declares silent nodes dead and recovers the jobs of every node that
// holds jobs without being alive. Every live node runs it each heartbeat:
// the UPDATEs are guarded, so concurrent reapers do each piece of work once,
// and failover needs no leader (a cluster of worker-only nodes has none).
func (n *Node) reap(ctx context.Context) (*ReapReport, error) {
	rep := &ReapReport{Recovered: map[string]*chimedb.RecoverNodeResult{}}
	dead, err := n.st.DeclareDeadNodes(ctx, n.cfg.FailoverAfter)
	rep.Dead = dead
	for _, d := range dead {
		n.log.WithFields(logrus.Fields{
			"dead_node": d.ID, "last_heartbeat": d.HeartbeatAt, "silent_for": d.Silence.Round(time.Millisecond).String(),
		}).Warn("declared node dead: no heartbeat within the failover window by the database clock; recovering its jobs")
	}
	if err != nil {
		return rep, err
	}
	orphans, err := n.st.OrphanNodes(ctx)
	if err != nil {
		return rep, err
	}
	for _, id := range orphans {
		if id == n.cfg.NodeID {
			continue // our own row is being re-registered by the heartbeat
		}
		now, err := n.st.DBNow(ctx)
		if err != nil {
			return rep, err
		}
		res, err := n.st.RecoverNode(ctx, &chimedb.RecoverNodeParams{NodeID: id, Now: now, UnlessAlive: true})
		if err != nil {
			return rep, fmt.Errorf("recover jobs of node %s: %w", id, err)
		}
		rep.Recovered[id] = res
		if len(res.Released)+len(res.Recovered)+len(res.Retried)+len(res.Failed)+len(res.Stopped) == 0 {
			continue // alive again by the time of the recovery (UnlessAlive)
		}
		n.log.WithFields(logrus.Fields{
			"dead_node": id, "released": len(res.Released), "recovered": len(res.Recovered), "retried": len(res.Retried),
			"failed": len(res.Failed), "stopped": len(res.Stopped),
		}).Warn("recovered the jobs of a node that is not alive")
	}
	return rep, nil
}
