package cluster

import (
	"context"
	"time"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/metrics"
	"github.com/chimesched/chime/models"
)

// runAdvancer is the part of chimedb.WorkflowStore the maintenance leader
// drives; a store without workflows leaves the loop out.
type runAdvancer interface {
	AdvanceRuns(ctx context.Context, limit int) (int, error)
	CountRunsByStatus(ctx context.Context) (map[models.RunStatus]int64, error)
}

// advanceBatch is how many runs one pass decides; a pass that decides a
// full batch goes on at once, up to maxAdvancePasses batches.
const (
	advanceBatch     = 100
	maxAdvancePasses = 10
)

// runsLoop, every Heartbeat while this node holds the maintenance lease,
// starts the workflow runs written by plain SQL and finishes those no
// completion decided (chimedb.WorkflowStore.AdvanceRuns), then sets
// chime_workflow_runs. Every Heartbeat rather than every ReconcileEvery:
// an INSERT of a run is how plain SQL starts one, and should start soon.
func (n *Node) runsLoop(ctx context.Context, ra runAdvancer) {
	defer n.wg.Done()
	t := n.cfg.Clock.NewTicker(n.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.Chan():
		}
		if !n.maint.Leading() {
			continue
		}
		n.advanceRuns(ctx, ra)
	}
}

// advanceRuns is one pass of runsLoop.
func (n *Node) advanceRuns(ctx context.Context, ra runAdvancer) {
	for range maxAdvancePasses {
		cctx, cancel := context.WithTimeout(ctx, n.cfg.opTimeout()+time.Duration(advanceBatch)*100*time.Millisecond)
		done, err := ra.AdvanceRuns(cctx, advanceBatch)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				n.log.WithError(err).Warn("deciding workflow runs failed; retrying next pass")
			}
			return
		}
		if done < advanceBatch {
			break
		}
	}
	cctx, cancel := context.WithTimeout(ctx, n.cfg.opTimeout())
	defer cancel()
	counts, err := ra.CountRunsByStatus(cctx)
	if err != nil {
		return
	}
	for _, st := range []models.RunStatus{models.RunPending, models.RunRunning, models.RunPaused, models.RunSucceeded, models.RunFailed, models.RunCanceled} {
		metrics.WorkflowRuns.WithLabelValues(string(st)).Set(float64(counts[st]))
	}
}

var _ runAdvancer = chimedb.WorkflowStore(nil)
