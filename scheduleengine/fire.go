package scheduleengine

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/internal/metrics"
	"github.com/chimesched/chime/models"
)

// planned is one due schedule with what it will do.
type planned struct {
	en           *entry
	p            plan
	completeOnly bool // used up before this write: only mark it completed
}

// writeReq is one batch on its way through a writer.
type writeReq struct {
	batch     *WriteFiresParams
	items     []planned
	res       *WriteFiresResult
	err       error
	committed time.Time
}

// runOnce writes the fires of every schedule queued as due (by gocron's
// timers, the sweep or sync), in batches of at most BatchSize jobs, one
// transaction each: a thundering herd costs one commit per batch, not one
// per schedule. Each schedule's rows come from computePlan at now, so
// scheduled_at is always the Trigger's intended time, whenever the timer
// ran. A schedule in a batch still in flight waits in due for its result.
// On error the failed and remaining schedules keep their state and stay
// queued; the next call recomputes the same rows, and duplicates are no-ops.
//
// With writers running (Start), batches go to them and runOnce returns at
// once; finish applies each result on the run goroutine. Without them (tests
// driving tick), runOnce writes inline and returns the first error.
func (e *Engine) runOnce(ctx context.Context, now time.Time) error {
	if e.stale || (e.work != nil && e.queued >= maxQueued) {
		return nil // the full sync, or finish as writers free up, calls again
	}
	due := make([]*entry, 0, len(e.due))
	for id, en := range e.due {
		if e.inflight[id] {
			continue
		}
		delete(e.due, id)
		switch {
		case en.next.IsZero() || e.entries[id] != en:
		case en.next.After(now):
			e.heap.track(en) // a late or repeated hand-over: its next is not due yet
		default:
			due = append(due, en)
		}
	}
	// Id order: two leaders in a split brain lock the same rows in the
	// same order.
	slices.SortFunc(due, func(a, b *entry) int { return cmp.Compare(a.sched.ID, b.sched.ID) })
	// Fires first: marking used-up schedules completed waits until no fire
	// is due or in flight, so a herd of once schedules commits its jobs without the
	// schedules UPDATE in the same transactions. The trigger row written
	// with the last fire already says nothing is left, so a crash in
	// between loses nothing: the restore finds the schedule used up.
	var completeOnly []*entry
	for id := range e.complete {
		if len(due) > 0 || e.queued > 0 {
			break
		}
		if en, ok := e.entries[id]; ok && !e.inflight[id] {
			completeOnly = append(completeOnly, en)
		}
	}
	if len(due) == 0 && len(completeOnly) == 0 {
		return nil
	}
	busy, err := e.busySchedules(ctx, due)
	if err != nil {
		e.requeue(due)
		return err
	}

	// Spread what is due over the writers, so a herd of 1,000 is two
	// batches of 500 written side by side, not 500 then 500 after it; but
	// not so thin that a handful of fires costs several commits. Most
	// schedules write one fire, so the count of schedules stands for the
	// count of fires.
	size := e.cfg.BatchSize
	if e.work != nil {
		size = min(size, max((len(due)+len(completeOnly)+writers-1)/writers, minSplit))
	}
	var items, pending []planned
	for _, en := range completeOnly {
		pending = append(pending, planned{en: en, p: plan{done: true, fired: en.fired, last: timeOrZero(en.last)}, completeOnly: true})
	}
	weight := 0 // fires in items, a completion counting as one
	for i := 0; i < len(due) || len(pending) > 0; {
		// Plan up to one batch; a schedule with several fires (fire_all)
		// may end it early, the first one never.
		for len(pending) > 0 && (len(items) == 0 || weight < size) {
			items, pending = append(items, pending[0]), pending[1:]
			weight++
		}
		for len(pending) == 0 && i < len(due) {
			en := due[i]
			p := computePlan(e.planInput(en, busy[en.sched.ID]), now)
			w := max(len(p.fires), 1)
			if len(items) > 0 && weight+w > size {
				break
			}
			weight += w
			items = append(items, planned{en: en, p: p})
			i++
		}
		r := e.batchOf(items)
		items, weight = nil, 0
		if e.work == nil {
			r.batch.Now = e.cfg.Clock.Now()
			r.res, r.err = e.store.WriteFires(ctx, r.batch)
			r.committed = e.cfg.Clock.Now()
			if err := e.finish(r); err != nil {
				e.requeue(due[i:])
				return err
			}
			if i == len(due) && len(completeOnly) == 0 && len(e.complete) > 0 {
				return e.runOnce(ctx, now) // the completions the fires left
			}
			continue
		}
		for _, it := range r.items {
			e.inflight[it.en.sched.ID] = true
		}
		e.queued++
		e.work <- r // never blocks: cap(work) is maxQueued
		if e.queued >= maxQueued {
			// The rest waits, unplanned, for a writer to finish.
			e.requeue(due[i:])
			return nil
		}
	}
	return nil
}

// minSplit is the fewest fires per batch when a herd is spread over the
// writers.
const minSplit = 64

// batchOf turns planned schedules into one WriteFires call.
func (e *Engine) batchOf(items []planned) *writeReq {
	batch := &WriteFiresParams{}
	for _, it := range items {
		en, p := it.en, &it.p
		if it.completeOnly {
			// Used up before this write (completeOnly): the trigger row as it is.
			row := en.triggerRow()
			row.FromLastFireAt = row.LastFireAt
			batch.Triggers = append(batch.Triggers, row)
			batch.Complete = append(batch.Complete, en.sched.ID)
			continue
		}
		for _, f := range p.fires {
			batch.Jobs = append(batch.Jobs, FireJob{
				ScheduleID: en.sched.ID, JobDefinitionID: en.sched.JobDefinitionID, ScheduledAt: f.at,
				MaxAttempts: en.maxAttempts, Params: en.params, CatchUp: f.catchUp, MissedFires: f.missedFires,
			})
		}
		batch.Triggers = append(batch.Triggers, e.advancedRow(en, p))
	}
	return &writeReq{batch: batch, items: items}
}

// writer commits the batches runOnce hands it, one at a time, and hands
// each result back to the run goroutine.
func (e *Engine) writer(ctx context.Context, work <-chan *writeReq, done chan<- *writeReq) {
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-work:
			r.batch.Now = e.cfg.Clock.Now()
			if l := e.cfg.Leadership; l != nil && !l.Leading() {
				// Lost between planning and writing: leave the fires to the
				// next leader, which restores them from the tables.
				r.err = errNotLeader
			} else {
				r.res, r.err = e.store.WriteFires(ctx, r.batch)
			}
			r.committed = e.cfg.Clock.Now()
			done <- r // never blocks: cap(done) is maxQueued
		}
	}
}

// writable reports whether runOnce has something to hand over now.
func (e *Engine) writable() bool {
	if e.stale || (e.work != nil && e.queued >= maxQueued) {
		return false
	}
	for id := range e.due {
		if !e.inflight[id] {
			return true
		}
	}
	for id := range e.complete {
		if e.queued > 0 {
			break // runOnce waits for the fires in flight
		}
		if !e.inflight[id] {
			return true
		}
	}
	return false
}

func (e *Engine) planInput(en *entry, busy bool) planInput {
	in := planInput{
		trig: en.trig, after: en.after(), fired: en.fired, maxRuns: en.sched.MaxRuns,
		policy: en.sched.MisfirePolicy, threshold: e.cfg.MisfireThreshold, fireAll: e.cfg.FireAllCap,
		forbid: en.sched.Concurrency == models.ConcurrencyForbid, busy: busy,
		restoreUpTo: en.restoreUpTo,
	}
	if e.leaderSince.After(in.restoreUpTo) {
		in.restoreUpTo = e.leaderSince
	}
	if w := en.sched.CatchupWindowSeconds; w != nil {
		d := time.Duration(*w) * time.Second
		in.window = &d
	}
	return in
}

// busySchedules asks, once for the whole batch, which forbid-overlap
// schedules still have a job in flight.
func (e *Engine) busySchedules(ctx context.Context, due []*entry) (map[int64]bool, error) {
	var ids []int64
	for _, en := range due {
		if en.sched.Concurrency == models.ConcurrencyForbid {
			ids = append(ids, en.sched.ID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return e.store.UnfinishedSchedules(ctx, ids)
}

func (e *Engine) advancedRow(en *entry, p *plan) TriggerRow {
	// FromLastFireAt: the row must still be where this plan started, or
	// another writer has moved it on and this plan is stale (store.WriteFires).
	row := TriggerRow{ScheduleID: en.sched.ID, LastFireAt: en.last, FiredCount: p.fired, RemainingCount: p.remaining, MisfiredCount: en.misfired + p.misfired, FromLastFireAt: en.last,
		SpecHash: en.spec, SpecChangedAt: en.since}
	if !p.last.IsZero() {
		l := p.last
		row.LastFireAt = &l
	}
	if !p.next.IsZero() {
		n := p.next
		row.NextFireAt = &n
	}
	if row.RemainingCount == nil && en.sched.MaxRuns != nil {
		row.RemainingCount = en.remaining()
	}
	return row
}

// finish applies one batch's outcome: on success it moves the entries on,
// only now that the fires are committed; on failure they stay as they were
// and are queued again.
func (e *Engine) finish(r *writeReq) error {
	if e.work != nil {
		e.queued--
		for _, it := range r.items {
			delete(e.inflight, it.en.sched.ID)
		}
	}
	if r.err != nil {
		for _, it := range r.items {
			e.requeue([]*entry{it.en})
		}
		if e.work != nil {
			// Inline, tick logs the error and sets the retry itself.
			if !errors.Is(r.err, context.Canceled) && !errors.Is(r.err, errNotLeader) {
				e.log.WithError(r.err).Warn("writing fires failed; retrying")
			}
			e.fireRetry = r.committed.Add(e.cfg.RetryDelay)
		}
		return r.err
	}
	res, committed := r.res, r.committed
	inactive := make(map[int64]bool, len(res.Inactive))
	for _, id := range res.Inactive {
		inactive[id] = true
	}
	stale := make(map[int64]TriggerRow, len(res.Stale))
	for _, t := range res.Stale {
		stale[t.ScheduleID] = t
	}
	for _, it := range r.items {
		en, p := it.en, &it.p
		id := en.sched.ID
		cur := e.entries[id] // en, or its replacement if a sync applied the row meanwhile
		if inactive[id] {
			// Paused or deleted since the last sync: the next sync says which.
			if cur != nil {
				e.remove(id)
			}
			continue
		}
		if t, ok := stale[id]; ok {
			// Another writer (a leader that took over while this batch was
			// planned or in flight) moved the trigger on: nothing was
			// written, and the fires are planned again from the row.
			e.log.WithFields(logrus.Fields{"schedule_id": id, "planned_from": timeOrZero(en.last), "last_fire_at": timeOrZero(t.LastFireAt)}).
				Warn("fires not written: another writer advanced the schedule's trigger since this node read it; planning again from the table")
			if cur != nil {
				cur.adopt(t)
				e.heap.track(cur)
				if cur.usedUp() {
					e.complete[id] = true
				} else {
					e.due[id] = cur
				}
			}
			continue
		}
		log := e.log.WithField("schedule_id", id)
		for _, f := range p.fires {
			if f.catchUp {
				log.WithFields(logrus.Fields{"scheduled_at": f.at, "missed_fires": f.missedFires}).Info("fired catch-up job for missed fires")
			} else {
				metrics.FireLateness.Observe(committed.Sub(f.at).Seconds())
				log.WithField("scheduled_at", f.at).Debug("fired")
			}
		}
		if p.dropped > 0 {
			log.WithFields(logrus.Fields{"dropped": p.dropped, "policy": en.sched.MisfirePolicy}).Info("missed fires dropped")
		}
		if p.blocked > 0 {
			log.WithField("skipped", p.blocked).Info("fires skipped: concurrency is forbid and a job of this schedule is still unfinished")
		}
		metrics.MisfiresCollapsed.Add(float64(p.collapsed))
		metrics.MisfiresDropped.Add(float64(p.dropped))
		if cur == en {
			if !p.last.IsZero() {
				l := p.last
				en.last = &l
			}
			en.fired = p.fired
			en.misfired += p.misfired
			en.next = p.next
			e.heap.track(en)
		} else if cur != nil {
			cur.catchUpTo(p.last, p.fired, en.misfired+p.misfired)
			e.heap.track(cur)
		}
		switch {
		case p.done && it.completeOnly:
			log.Info("schedule has no fires left; marked completed")
			e.remove(id)
		case p.done && cur != nil:
			e.complete[id] = true // written once no fire is due (runOnce)
		}
		// Otherwise gocron has already armed the next occurrence.
	}
	metrics.Fires.WithLabelValues("normal").Add(float64(res.Inserted))
	metrics.Fires.WithLabelValues("catch_up").Add(float64(res.InsertedCatchUp))
	metrics.DuplicateFires.Add(float64(res.Duplicates))
	if res.Duplicates > 0 {
		e.log.WithField("duplicates", res.Duplicates).Warn("fires were already written, by another leader or a retried commit")
	}
	if res.Inserted+res.InsertedCatchUp > 0 && e.cfg.OnFire != nil {
		e.cfg.OnFire()
	}
	return nil
}

// requeue queues entries whose fires were not written again, unchanged.
func (e *Engine) requeue(ens []*entry) {
	for _, en := range ens {
		if !en.next.IsZero() && e.entries[en.sched.ID] == en {
			e.due[en.sched.ID] = en
		}
	}
}

func timeOrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
