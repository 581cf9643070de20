package scheduleengine

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// syncOverlap re-reads rows updated shortly before the watermark: a late
// commit may carry an older updated_at than rows already seen.
const syncOverlap = 10 * time.Second

// startSync reads, beside the run goroutine so a large read never holds up
// fires, the schedules changed since the watermark, or all of them when
// the full sync is due. The read comes in pages of SyncPageSize by id,
// each handed to the run goroutine and merged before the next is sent:
// a restore holds one page of rows at a time, and fires due meanwhile
// (once no longer stale) are written between pages.
func (e *Engine) startSync(ctx context.Context, now time.Time) {
	full := !now.Before(e.fullDue)
	p := chimedb.LoadSchedulesParams{Limit: e.cfg.SyncPageSize}
	if !full && !e.watermark.IsZero() {
		since := e.watermark.Add(-syncOverlap)
		p.ChangedSince = &since
	}
	full = p.ChangedSince == nil
	e.syncDue = now.Add(e.cfg.SyncInterval)
	if full {
		e.fullDue = now.Add(e.cfg.FullSyncInterval)
		e.epoch++
	}
	gen := e.leadGen
	e.syncing = true
	e.sync = syncRun{started: now}
	rctx, cancel := context.WithCancel(ctx)
	e.syncCancel = cancel
	e.bg.Go(func() {
		defer cancel()
		for {
			res, err := e.store.LoadSchedules(rctx, &p)
			if rctx.Err() != nil {
				err = rctx.Err() // whatever the driver made of it: stopped
			}
			final := err != nil || len(res.Rows) < p.Limit
			select {
			case e.synced <- syncResult{gen: gen, full: full, final: final, res: res, err: err}:
			case <-ctx.Done():
				return
			}
			if final {
				return
			}
			p.AfterID = res.Rows[len(res.Rows)-1].Schedule.ID
		}
	})
}

func (e *Engine) afterLoad(ctx context.Context, r syncResult) {
	if r.final {
		e.syncing = false
		e.syncCancel = nil
	}
	err := e.merge(ctx, r)
	if r.final {
		defer e.testSignals.synced.Signal(syncedRead{full: r.full, err: err})
	}
	if err != nil {
		if r.err != nil && errors.Is(r.err, context.Canceled) && ctx.Err() == nil {
			// Stopped by follow for a read started as leader: that one
			// is due now.
			return
		}
		if ctx.Err() == nil {
			e.log.WithError(err).Warn("schedule sync failed; retrying")
		}
		e.syncDue = e.cfg.Clock.Now().Add(e.cfg.RetryDelay)
		if r.full {
			e.fullDue = time.Time{}
		}
		return
	}
	if r.final && r.full && r.gen == e.leadGen {
		e.stale = false
	}
}

func (e *Engine) merge(ctx context.Context, r syncResult) error {
	if r.err != nil {
		return r.err
	}
	for i := range r.res.Rows {
		row := &r.res.Rows[i]
		if en := e.apply(row); en != nil {
			en.seen = e.epoch
		}
	}
	e.sync.pages++
	if r.res.MaxUpdatedAt.After(e.sync.maxUpdated) {
		e.sync.maxUpdated = r.res.MaxUpdatedAt
	}
	if r.final {
		if r.full {
			// Every active row has been read since the epoch began: an
			// entry no page returned is deleted, or no longer active.
			for id, en := range e.entries {
				if en.seen != e.epoch {
					e.remove(id)
				}
			}
			// What is held now was used in this read; the rest goes at
			// the next full read.
			e.cache.Rotate()
			clear(e.specs)
			clear(e.defaults)
		}
		mark := e.sync.maxUpdated
		if e.sync.pages > 1 {
			// Pages are separate reads: a row changed after its page was
			// read may carry an updated_at older than later pages' rows.
			// The next read goes back to when this one began.
			mark = earlier(mark, chimedb.DBTime(e.sync.started))
		}
		if mark.After(e.watermark) {
			e.watermark = mark
		}
	}
	if e.leader.Load() {
		return e.writeBookkeeping(ctx, e.cfg.Clock.Now())
	}
	return nil
}

// apply replaces the engine's view of one schedule with the row's. What
// is already due (a restore, a resume, a new leader) comes off the heap at
// the next tick. It returns the entry the schedule has now, nil when none.
func (e *Engine) apply(r *chimedb.ScheduleRow) *entry {
	id := r.Schedule.ID
	old := e.entries[id]
	if r.Schedule.Status != models.ScheduleActive {
		e.remove(id)
		return nil
	}
	if old != nil && old.unchanged(r) {
		// A re-read of the row the entry was built from: keep the entry.
		if r.Trigger == nil {
			e.missing[id] = old.triggerRow()
		} else {
			delete(e.missing, id)
			if r.Trigger.SpecHash == old.spec {
				delete(e.respec, id) // recorded
			}
		}
		return old
	}
	en, err := e.newEntry(r)
	if err != nil {
		e.remove(id)
		e.invalid[id] = err.Error()
		return nil
	}
	now := e.cfg.Clock.Now()
	if old == nil && r.Trigger != nil {
		// Resumed from paused or revived from invalid: what passed
		// meanwhile is missed.
		en.restoreUpTo = now
	}
	if db := chimedb.DBTime(now); en.since != nil && en.since.After(db) {
		// A hand-written spec_changed_at in the future would hold it back.
		en.since = &db
		en.next = en.trig.Next(en.after())
	}
	e.respecced(r, en, old)
	if old != nil && old.last != nil {
		// The row may have been read before a commit this engine applied.
		en.catchUpTo(*old.last, old.fired, old.misfired)
	}
	// A row read without its trigger is recorded by the leader; one read
	// with it no longer needs that. A standby, which records nothing,
	// would otherwise keep its first read's list until it leads and then
	// ask for rows that exist: an upsert that waits for any transaction
	// holding one of them (a frozen leader's, until the server rolls it
	// back), with the engine's loop inside it.
	if r.Trigger == nil {
		e.missing[id] = en.triggerRow()
	} else {
		delete(e.missing, id)
	}
	delete(e.due, id)
	delete(e.complete, id)
	if old != nil {
		e.heap.untrack(old)
	}
	e.entries[id] = en
	e.heap.track(en)
	if en.usedUp() {
		e.complete[id] = true
	}
	return en
}

// respecced compares en's timing with the fingerprint r's trigger row was
// computed from. A different one is an edit (API or plain UPDATE, while
// running, paused or down): the schedule starts afresh from when this
// engine saw it, and the leader records that instant for a restart or
// another leader. An empty fingerprint (a row from before spec_hash
// existed) is adopted as it is.
func (e *Engine) respecced(r *chimedb.ScheduleRow, en, old *entry) {
	id := en.sched.ID
	t := r.Trigger
	if t == nil || t.SpecHash == en.spec {
		delete(e.respec, id)
		return
	}
	sp := chimedb.TriggerSpec{ScheduleID: id, From: t.SpecHash, Hash: en.spec}
	if t.SpecHash != "" {
		at := chimedb.DBTime(e.cfg.Clock.Now())
		if old != nil && old.spec == en.spec && old.since != nil {
			at = *old.since // seen already (re-read before the record, or on a standby)
		}
		en.since = &at
		en.next = en.trig.Next(en.after())
		sp.ChangedAt = &at
		if !en.next.IsZero() {
			n := en.next
			sp.NextFireAt = &n
		}
		if e.respec[id].ChangedAt == nil || !e.respec[id].ChangedAt.Equal(at) {
			e.log.WithFields(logrus.Fields{"schedule_id": id, "counting_from": at, "next_fire_at": en.next}).
				Info("schedule timing changed; it starts afresh, with no catch-up for the change")
		}
	}
	e.respec[id] = sp
}

func (e *Engine) remove(id int64) {
	if en, ok := e.entries[id]; ok {
		e.heap.untrack(en)
	}
	delete(e.entries, id)
	delete(e.missing, id)
	delete(e.respec, id)
	delete(e.due, id)
	delete(e.complete, id)
}

// writeBookkeeping records what sync found (invalid rows, missing
// triggers, timing edits). Only the leader writes.
func (e *Engine) writeBookkeeping(ctx context.Context, now time.Time) error {
	for id, reason := range e.invalid {
		e.log.WithFields(logrus.Fields{"schedule_id": id, "reason": reason}).Warn("schedule cannot be scheduled; marking it invalid")
		if err := e.store.MarkInvalid(ctx, &chimedb.MarkInvalidParams{ScheduleID: id, Reason: reason, Now: now}); err != nil {
			return err
		}
		delete(e.invalid, id)
	}
	if len(e.missing) > 0 {
		rows := slices.SortedFunc(maps.Values(e.missing), func(a, b chimedb.TriggerRow) int { return cmp.Compare(a.ScheduleID, b.ScheduleID) })
		if err := e.store.EnsureTriggers(ctx, &chimedb.EnsureTriggersParams{Triggers: rows, Now: now}); err != nil {
			return err
		}
		clear(e.missing)
	}
	if len(e.respec) > 0 {
		specs := slices.Collect(maps.Values(e.respec))
		if err := e.store.SetTriggerSpecs(ctx, &chimedb.SetTriggerSpecsParams{Specs: specs, Now: now}); err != nil {
			return err
		}
		clear(e.respec)
	}
	return nil
}
