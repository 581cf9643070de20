package taskengine

import (
	"context"

	"github.com/chimesched/chime/chimedb"
)

// HandoffStore is a schedule store whose fire batches hand their new
// on-time jobs to this node's task engine in their own transaction: the
// claim's round trip after the commit is what stood between a fire and its
// start. The schedule engine writes through it without knowing: app gives
// it Engine.HandoffStore(st) instead of st on a node that runs both
// engines. The schedule engine still calls no method of the task engine,
// only its store; this decorator is the one place where the task engine's
// code runs on the schedule engine's writers, inside their transactions'
// lifetime.
//
// Its WriteFires reserves free workers (ReserveHandoff) for the batch's
// on-time jobs, and places of the backlog (Config.Backlog) for those past
// them, asks the store to write up to that many as running, and the
// backlog's as queued, on this node (chimedb.WriteFiresParams.HandoffNode,
// HandoffKinds, HandoffSlots, HandoffQueued),
// and after the transaction delivers the jobs written so to the reserved
// workers (DeliverHandoff), giving back every worker not used, also when
// the write fails. Every other method is the wrapped store's.
type HandoffStore struct {
	chimedb.ScheduleStore
	e *Engine
}

// HandoffStore wraps st so that fires hand their jobs to e.
func (e *Engine) HandoffStore(st chimedb.ScheduleStore) *HandoffStore {
	return &HandoffStore{ScheduleStore: st, e: e}
}

// WriteFires writes one fire batch, handing off what the free workers can
// take.
func (h *HandoffStore) WriteFires(ctx context.Context, b *chimedb.WriteFiresParams) (*chimedb.WriteFiresResult, error) {
	onTime := 0
	for _, j := range b.Jobs {
		if !j.CatchUp {
			onTime++
		}
	}
	slots, queued, kinds := h.e.reserveHandoff(onTime, true)
	if slots+queued == 0 {
		b.HandoffNode, b.HandoffKinds, b.HandoffSlots, b.HandoffQueued = "", nil, 0, 0
		return h.ScheduleStore.WriteFires(ctx, b)
	}
	b.HandoffNode, b.HandoffKinds, b.HandoffSlots, b.HandoffQueued = h.e.cfg.NodeID, kinds, slots, queued
	var handed []chimedb.ClaimedJob
	defer func() { h.e.DeliverHandoff(handed, slots+queued) }()
	res, err := h.ScheduleStore.WriteFires(ctx, b)
	if err != nil {
		return nil, err
	}
	handed = res.HandedOff
	if res.Inserted > len(handed) {
		// Jobs of this fire wait in the database for a claim: the next
		// fires take no backlog until a claim has taken them (a herd
		// larger than the backlog is the claims' to start, in order).
		h.e.producer.dueLeft.Store(true)
	}
	return res, nil
}
