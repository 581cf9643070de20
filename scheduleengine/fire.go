package scheduleengine

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/internal/metrics"
	"github.com/chimesched/chime/models"
)

// planned is one due schedule with what it will do.
type planned struct {
	en *entry
	p  plan
}

// runOnce writes the fires of every schedule queued as due (by gocron's
// timers or by sync), in batches of at most BatchSize jobs, one transaction
// each: a thundering herd costs one commit per batch, not one per schedule.
// Each schedule's rows come from computePlan at now, so scheduled_at is
// always the Trigger's intended time, whenever the timer ran. On error the
// failed and remaining schedules keep their state and stay queued; the next
// call recomputes the same rows, and duplicates are no-ops.
func (e *Engine) runOnce(ctx context.Context, now time.Time) error {
	due := make([]*entry, 0, len(e.due))
	for _, en := range e.due {
		if !en.next.IsZero() && !en.next.After(now) {
			due = append(due, en)
		}
	}
	clear(e.due)
	// Id order: two leaders in a split brain lock the same rows in the
	// same order.
	slices.SortFunc(due, func(a, b *entry) int { return cmp.Compare(a.sched.ID, b.sched.ID) })
	var completeOnly []*entry
	for id := range e.complete {
		if en, ok := e.entries[id]; ok {
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

	batch := &WriteFiresParams{}
	var items []planned
	for _, en := range completeOnly {
		batch.Triggers = append(batch.Triggers, en.triggerRow())
		batch.Complete = append(batch.Complete, en.sched.ID)
		items = append(items, planned{en: en, p: plan{done: true, fired: en.fired, last: timeOrZero(en.last)}})
	}
	for i, en := range due {
		p := computePlan(e.planInput(en, busy[en.sched.ID]), now)
		if len(batch.Jobs)+len(p.fires) > e.cfg.BatchSize && len(items) > 0 {
			if err := e.flush(ctx, batch, items); err != nil {
				e.requeue(due[i:])
				return err
			}
			batch, items = &WriteFiresParams{}, nil
		}
		for _, f := range p.fires {
			batch.Jobs = append(batch.Jobs, FireJob{
				ScheduleID: en.sched.ID, JobDefinitionID: en.sched.JobDefinitionID, ScheduledAt: f.at,
				MaxAttempts: en.maxAttempts, Params: en.params, CatchUp: f.catchUp, MissedFires: f.missedFires,
			})
		}
		batch.Triggers = append(batch.Triggers, e.advancedRow(en, &p))
		if p.done {
			batch.Complete = append(batch.Complete, en.sched.ID)
		}
		items = append(items, planned{en: en, p: p})
	}
	if len(items) > 0 {
		return e.flush(ctx, batch, items)
	}
	return nil
}

func (e *Engine) planInput(en *entry, busy bool) planInput {
	in := planInput{
		trig: en.trig, after: en.after(), fired: en.fired, maxRuns: en.sched.MaxRuns,
		policy: en.sched.MisfirePolicy, threshold: e.cfg.MisfireThreshold, fireAll: e.cfg.FireAllCap,
		forbid: en.sched.Concurrency == models.ConcurrencyForbid, busy: busy,
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
	row := TriggerRow{ScheduleID: en.sched.ID, LastFireAt: en.last, FiredCount: p.fired, RemainingCount: p.remaining, MisfiredCount: en.misfired + p.misfired}
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

// flush commits one batch and, only once it is committed, moves the
// entries on.
func (e *Engine) flush(ctx context.Context, batch *WriteFiresParams, items []planned) error {
	batch.Now = e.cfg.Clock.Now()
	res, err := e.store.WriteFires(ctx, batch)
	if err != nil {
		ens := make([]*entry, len(items))
		for i, it := range items {
			ens[i] = it.en
		}
		e.requeue(ens)
		return err
	}
	committed := e.cfg.Clock.Now()
	inactive := make(map[int64]bool, len(res.Inactive))
	for _, id := range res.Inactive {
		inactive[id] = true
	}
	for _, it := range items {
		en, p := it.en, &it.p
		id := en.sched.ID
		if inactive[id] {
			// Paused or deleted since the last sync: the next sync says which.
			e.remove(id)
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
		if !p.last.IsZero() {
			l := p.last
			en.last = &l
		}
		en.fired = p.fired
		en.misfired += p.misfired
		en.next = p.next
		if p.done {
			log.Info("schedule has no fires left; marked completed")
			e.remove(id)
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
