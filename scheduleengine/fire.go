package scheduleengine

import (
	"cmp"
	"context"
	"errors"
	"github.com/chimesched/chime/chimedb"
	"slices"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/internal/metrics"
)

const (
	// writers is how many batches run their statements side by side, so
	// one commit's latency overlaps the next batch's statements (one or
	// four were slower than two). A batch prepared ahead gives its turn up
	// while it waits for its instant (Engine.turns), so a fire due now is
	// not held behind it; there is a writer goroutine per batch in flight.
	writers = 2
	// maxQueued bounds the batches handed to writers and not finished: one
	// running and one waiting per turn. What is due beyond that waits in
	// Engine.due and joins the next batch.
	maxQueued = 2 * writers
	// minSplit is the fewest fires per batch when a herd is spread over
	// the writers.
	minSplit = 64
)

var errNotLeader = errors.New("scheduleengine: this node does not lead")

// planned is one due schedule with what it will do.
type planned struct {
	en           *entry
	p            plan
	completeOnly bool // used up before this write: only mark it completed
}

// writeReq is one batch on its way through a writer.
type writeReq struct {
	batch     *chimedb.WriteFiresParams
	items     []planned
	res       *chimedb.WriteFiresResult
	err       error
	committed time.Time
	// at is the instant of a batch prepared ahead (Config.FireAhead): its
	// COMMIT waits for it. Zero for a batch due when it was planned.
	at time.Time
}

// runOnce hands the fires of every due schedule to the writers, in batches
// of at most BatchSize jobs. A schedule is in at most one batch in flight;
// it waits in due for that batch's result. Fires due now go first; those
// taken up early (Config.FireAhead) follow, one run of batches per
// instant, so no batch commits a fire later than its instant to wait for
// another's.
func (e *Engine) runOnce(ctx context.Context, now time.Time) error {
	if e.stale || e.queued >= maxQueued {
		return nil // the full sync, or finish as writers free up, calls again
	}
	due := e.takeDue(now)
	pending := e.completions(now, len(due) > 0)
	if len(due) == 0 && len(pending) == 0 {
		return nil
	}
	busy, err := e.busySchedules(ctx, due)
	if err != nil {
		e.requeue(due...)
		return err
	}
	groups := byInstant(due, now)
	if len(groups) == 0 {
		groups = [][]*entry{nil} // only completions
	}
	for gi, group := range groups {
		at := now
		if len(group) > 0 && group[0].next.After(now) {
			at = group[0].next
		}
		// Completions come only when nothing is due: one group, nil.
		if rest, full := e.queueBatches(group, pending, busy, at, now); full {
			e.requeue(rest...) // unplanned, until a writer finishes
			for _, g := range groups[gi+1:] {
				e.requeue(g...)
			}
			return nil
		}
	}
	return nil
}

// queueBatches plans the schedules of group for at, and the completions
// pending, and hands them to the writers in batches. It stops when the
// writers' queue is full and returns the schedules it did not plan.
func (e *Engine) queueBatches(group []*entry, pending []planned, busy map[int64]bool, at, now time.Time) (rest []*entry, full bool) {
	// Spread a herd over the writers (1,000 is two batches of 500 written
	// side by side), but not so thin that a handful costs several commits.
	size := min(e.cfg.BatchSize, max((len(group)+len(pending)+writers-1)/writers, minSplit))
	var items []planned
	weight := 0 // fires in items, a completion counting as one
	for i := 0; i < len(group) || len(pending) > 0; {
		for len(pending) > 0 && (len(items) == 0 || weight < size) {
			items, pending = append(items, pending[0]), pending[1:]
			weight++
		}
		for len(pending) == 0 && i < len(group) {
			// A schedule with several fires (fire_all) may end a batch
			// early, the first one never.
			p := computePlan(e.planInput(group[i], busy[group[i].sched.ID]), at)
			w := max(len(p.fires), 1)
			if len(items) > 0 && weight+w > size {
				break
			}
			weight += w
			items = append(items, planned{en: group[i], p: p})
			i++
		}
		r := e.batchOf(items)
		if at.After(now) {
			r.at = at
		}
		items, weight = nil, 0
		for _, it := range r.items {
			e.inflight[it.en.sched.ID] = true
		}
		e.queued++
		e.work <- r // never blocks: cap(work) is maxQueued
		if e.queued >= maxQueued {
			return group[i:], true
		}
	}
	return nil, false
}

// byInstant splits due (in id order) into the schedules due by now and
// then one group per later instant, earliest first, each in id order.
func byInstant(due []*entry, now time.Time) [][]*entry {
	at := func(en *entry) time.Time {
		if en.next.After(now) {
			return en.next
		}
		return now
	}
	slices.SortStableFunc(due, func(a, b *entry) int { return at(a).Compare(at(b)) })
	var out [][]*entry
	for i := 0; i < len(due); {
		j := i + 1
		for j < len(due) && at(due[j]).Equal(at(due[i])) {
			j++
		}
		out = append(out, due[i:j])
		i = j
	}
	return out
}

// takeDue takes the schedules not in flight that are due, or due within
// their lead (entry.wake), in id order: two leaders in a split brain lock
// the same rows in the same order.
func (e *Engine) takeDue(now time.Time) []*entry {
	due := make([]*entry, 0, len(e.due))
	for id, en := range e.due {
		if e.inflight[id] {
			continue
		}
		delete(e.due, id)
		switch {
		case en.next.IsZero() || e.entries[id] != en:
		case en.wake().After(now):
			e.heap.track(en)
		default:
			due = append(due, en)
		}
	}
	slices.SortFunc(due, func(a, b *entry) int { return cmp.Compare(a.sched.ID, b.sched.ID) })
	return due
}

// completions lists the used-up schedules to mark completed, once no fire
// is due or in flight: a herd of once schedules commits its jobs without
// the schedules UPDATE in the same transactions.
func (e *Engine) completions(now time.Time, firesDue bool) []planned {
	if firesDue || e.queued > 0 {
		return nil
	}
	var out []planned
	for id := range e.complete {
		if en, ok := e.entries[id]; ok && !e.inflight[id] && !en.held(now) {
			out = append(out, planned{en: en, p: plan{done: true, fired: en.fired, last: timeOrZero(en.last)}, completeOnly: true})
		}
	}
	return out
}

// writable reports whether runOnce has something to hand over now.
func (e *Engine) writable() bool {
	if e.stale || e.queued >= maxQueued {
		return false
	}
	for id := range e.due {
		if !e.inflight[id] {
			return true
		}
	}
	return len(e.due) == 0 && len(e.completions(e.cfg.Clock.Now(), false)) > 0
}

// batchOf turns planned schedules into one WriteFires call.
func (e *Engine) batchOf(items []planned) *writeReq {
	batch := &chimedb.WriteFiresParams{}
	for _, it := range items {
		en, p := it.en, &it.p
		if it.completeOnly {
			row := en.triggerRow()
			row.FromLastFireAt = row.LastFireAt
			batch.Triggers = append(batch.Triggers, row)
			batch.Complete = append(batch.Complete, en.sched.ID)
			continue
		}
		for _, f := range p.fires {
			j := chimedb.FireJob{
				ScheduleID: en.sched.ID, JobDefinitionID: en.sched.target, ScheduledAt: f.at,
				MaxAttempts: int(en.sched.maxAttempts), Params: en.params, CatchUp: f.catchUp, MissedFires: f.missedFires,
			}
			if en.sched.workflow {
				j.JobDefinitionID, j.WorkflowID = 0, en.sched.target
			}
			batch.Jobs = append(batch.Jobs, j)
		}
		batch.Triggers = append(batch.Triggers, advancedRow(en, p))
	}
	return &writeReq{batch: batch, items: items}
}

// writer commits the batches runOnce hands it.
func (e *Engine) writer(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-e.work:
			e.write(ctx, r)
			e.done <- r // never blocks: cap(done) is maxQueued
		}
	}
}

// write runs one batch in one of the writers' turns.
func (e *Engine) write(ctx context.Context, r *writeReq) {
	select {
	case e.turns <- struct{}{}:
	case <-ctx.Done():
		r.err, r.committed = ctx.Err(), e.cfg.Clock.Now()
		return
	}
	var once sync.Once
	release := func() { once.Do(func() { <-e.turns }) }
	defer release()
	r.batch.Now = e.cfg.Clock.Now()
	r.batch.Fence = e.cfg.Fence
	if r.at.After(r.batch.Now) {
		// The rows are seen from the COMMIT on, which waits for the
		// instant: they say they were written then.
		r.batch.Now = r.at
		r.batch.BeforeCommit = func(ctx context.Context) error {
			release()
			return e.awaitInstant(ctx, r.at)
		}
	}
	if !e.cfg.Leadership.Leading() {
		r.err = errNotLeader // the next leader restores these fires from the tables
	} else {
		r.res, r.err = e.store.WriteFires(ctx, r.batch)
	}
	r.committed = e.cfg.Clock.Now()
}

// awaitInstant holds a batch prepared ahead until its instant, then lets
// it commit only if this node still leads: a node that lost the lead while
// waiting rolls the fires back for the next leader to write.
func (e *Engine) awaitInstant(ctx context.Context, at time.Time) error {
	if d := at.Sub(e.cfg.Clock.Now()); d > 0 {
		t := e.cfg.Clock.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.Chan():
		}
	}
	if !e.cfg.Leadership.Leading() {
		return errNotLeader
	}
	return nil
}

func (e *Engine) planInput(en *entry, busy bool) planInput {
	in := planInput{
		trig: en.trig, after: en.after(), fired: en.fired, maxRuns: en.sched.MaxRuns,
		policy: en.sched.policy(), threshold: e.cfg.MisfireThreshold, fireAll: e.cfg.FireAllCap,
		forbid: en.sched.forbid, busy: busy, restoreUpTo: en.restoreUpTo,
	}
	if e.leaderSince.After(in.restoreUpTo) {
		in.restoreUpTo = e.leaderSince
	}
	in.window = en.window
	return in
}

// busySchedules asks which forbid-overlap schedules have a job in flight.
func (e *Engine) busySchedules(ctx context.Context, due []*entry) (map[int64]bool, error) {
	var ids []int64
	for _, en := range due {
		if en.sched.forbid {
			ids = append(ids, en.sched.ID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return e.store.UnfinishedSchedules(ctx, ids)
}

// advancedRow is en's trigger row after p. FromLastFireAt: the row must
// still be where this plan started, or another writer has moved it on and
// the plan is stale (store.WriteFires writes nothing for it).
func advancedRow(en *entry, p *plan) chimedb.TriggerRow {
	row := en.triggerRow()
	row.FiredCount, row.MisfiredCount, row.FromLastFireAt, row.NextFireAt = p.fired, en.misfired+p.misfired, en.last, nil
	if p.remaining != nil {
		row.RemainingCount = p.remaining
	}
	if !p.last.IsZero() {
		l := p.last
		row.LastFireAt = &l
	}
	if !p.next.IsZero() {
		n := p.next
		row.NextFireAt = &n
	}
	return row
}

// finish applies one batch's outcome: on success it moves the entries on;
// on failure they stay as they were and are queued again.
func (e *Engine) finish(r *writeReq) {
	e.queued--
	for _, it := range r.items {
		delete(e.inflight, it.en.sched.ID)
	}
	if r.err != nil {
		for _, it := range r.items {
			e.requeue(it.en)
		}
		switch {
		case errors.Is(r.err, context.Canceled), errors.Is(r.err, errNotLeader):
		case errors.Is(r.err, chimedb.ErrLeaseLost):
			// The database says another node leads (or may by now):
			// the fires are that node's to write, from the tables.
			e.log.WithError(r.err).Warn("fires not written: the scheduler lease is no longer this node's in the database")
		default:
			e.log.WithError(r.err).Warn("writing fires failed; retrying")
		}
		e.fireRetry = r.committed.Add(e.cfg.RetryDelay)
		e.testSignals.fired.Signal(firedBatch{err: r.err})
		return
	}
	res := r.res
	defer e.testSignals.fired.Signal(firedBatch{jobs: res.Inserted + res.InsertedCatchUp, handedOff: len(res.HandedOff)})
	stale := make(map[int64]chimedb.TriggerRow, len(res.Stale))
	for _, t := range res.Stale {
		stale[t.ScheduleID] = t
	}
	for _, it := range r.items {
		id := it.en.sched.ID
		cur := e.entries[id] // it.en, or its replacement if a sync applied the row meanwhile
		switch t, isStale := stale[id]; {
		case slices.Contains(res.Busy, id):
			// Another transaction holds the schedule's row: nothing was
			// written; try again after RetryDelay, without holding up
			// the others.
			if cur != nil {
				if cur.hold == 0 {
					e.log.WithField("schedule_id", id).
						Warn("fire waits: another transaction holds the schedule's row (an edit not committed yet, or a session left in a transaction); trying again")
				}
				cur.hold = r.committed.Add(e.cfg.RetryDelay).UnixNano()
				e.heap.track(cur) // a used-up one waits in complete instead
			}
		case slices.Contains(res.Inactive, id):
			e.remove(id) // paused or deleted since the last sync: the next sync says which
		case isStale:
			// Another leader moved the trigger on: nothing was written;
			// plan again from the row.
			e.log.WithFields(logrus.Fields{"schedule_id": id, "planned_from": timeOrZero(it.en.last), "last_fire_at": timeOrZero(t.LastFireAt)}).
				Warn("fires not written: another writer advanced the schedule's trigger since this node read it; planning again from the table")
			if cur != nil {
				cur.setState(t.LastFireAt, t.FiredCount, t.MisfiredCount)
				e.heap.untrack(cur)
				if cur.usedUp() {
					e.complete[id] = true
				} else {
					e.due[id] = cur
				}
			}
		default:
			e.advance(&it, cur, r.committed)
		}
	}
	metrics.Fires.WithLabelValues("normal").Add(float64(res.Inserted))
	metrics.Fires.WithLabelValues("catch_up").Add(float64(res.InsertedCatchUp))
	metrics.DuplicateFires.Add(float64(res.Duplicates))
	if res.Duplicates > 0 {
		e.log.WithField("duplicates", res.Duplicates).Warn("fires were already written, by another leader or a retried commit")
	}
	// Jobs handed off need no claim: wake the task engine only for the rest.
	if res.Inserted+res.InsertedCatchUp > len(res.HandedOff) && e.cfg.OnFire != nil {
		e.cfg.OnFire()
	}
}

// advance moves a schedule on after its fires were committed.
func (e *Engine) advance(it *planned, cur *entry, committed time.Time) {
	en, p, id := it.en, &it.p, it.en.sched.ID
	log := e.log.WithField("schedule_id", id)
	if cur != nil && cur.hold != 0 {
		cur.hold = 0
		log.Info("the schedule's row was released; its fire went through")
	}
	for _, f := range p.fires {
		if f.catchUp {
			log.WithFields(logrus.Fields{"scheduled_at": f.at, "missed_fires": f.missedFires}).Info("fired catch-up job for missed fires")
		} else {
			metrics.FireLateness.Observe(committed.Sub(f.at).Seconds())
			if e.cfg.OnFireCommitted != nil {
				e.cfg.OnFireCommitted(f.at, committed)
			}
		}
	}
	if p.dropped > 0 {
		log.WithFields(logrus.Fields{"dropped": p.dropped, "policy": en.sched.policy()}).Info("missed fires dropped")
	}
	if p.blocked > 0 {
		log.WithField("skipped", p.blocked).Info("fires skipped: concurrency is forbid and a job of this schedule is still unfinished")
	}
	metrics.MisfiresCollapsed.Add(float64(p.collapsed))
	metrics.MisfiresDropped.Add(float64(p.dropped))
	switch {
	case cur == en:
		en.last, en.fired, en.misfired, en.next = nonZero(p.last, en.last), p.fired, en.misfired+p.misfired, p.next
		e.heap.track(en)
	case cur != nil:
		cur.catchUpTo(p.last, p.fired, en.misfired+p.misfired)
		e.heap.track(cur)
	}
	switch {
	case p.done && it.completeOnly:
		log.Info("schedule has no fires left; marked completed")
		e.remove(id)
	case p.done && cur != nil:
		e.complete[id] = true // written once no fire is due (completions)
	}
}

// requeue queues entries whose fires were not written again, unchanged.
func (e *Engine) requeue(ens ...*entry) {
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

func nonZero(t time.Time, old *time.Time) *time.Time {
	if t.IsZero() {
		return old
	}
	return &t
}
