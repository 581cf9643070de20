// Package scheduleengine turns the schedules table into jobs rows: for each
// fire of a schedule (cron, interval, once) it writes one pending job and
// advances the schedule's time_triggers row, in one transaction per batch.
// The task engine picks the jobs up; the two engines never call each other.
// On a node that runs both, the task engine's decorator of the store
// (taskengine.HandoffStore) hands fired jobs to its free workers inside the
// fire's transaction; the engine writes through it unawares.
//
//	e, err := scheduleengine.New(te.HandoffStore(st), &scheduleengine.Config{NodeID: id, Leadership: node.SchedulerElector(), OnFire: te.Wake})
//	err = e.Start(ctx) // returns at once; runs until Stop or ctx ends
//	e.Refresh()        // after the API changed a schedule: sync now
//	err = e.Stop(ctx)
//
// # One loop, one timer
//
// One goroutine (run) owns the engine's state: an entry per active
// schedule, and a min-heap of entries by next intended time. Each turn it
// follows the Leadership, starts a sync when due, takes every entry whose
// time has come off the heap, and hands their fires to the writer
// goroutines (see Writing). Then it sleeps until its next wake-up: the heap's top, the
// next sync, or a retry. gocron v2 is the timer: one gocron job (alarm.go)
// runs at that instant and signals the loop; the loop replaces the job when
// the instant changes. A herd of 10,000 once schedules is one wake-up and
// one sweep of the heap, not 10,000 gocron runs (docs/benchmarks.md).
//
// What a schedule writes is computePlan over its Trigger from
// time_triggers.last_fire_at up to now, never the moment the loop woke:
// scheduled_at is the exact intended time, a late or repeated wake-up
// cannot write a wrong or second row, and restore, catch-up and the normal
// cadence are the same code.
//
// # Writing
//
// Due schedules are planned in id order and cut into batches of at most
// BatchSize jobs, spread over the writers; at most four batches are in
// flight, two running statements at a time, and a schedule is in at most
// one, so its fires stay in order. A lone fire waits up to BatchWait for fires due just after it. One
// batch is one store.WriteFires transaction: the status check, the jobs
// rows (UNIQUE (schedule_id, scheduled_at), on conflict do nothing) and the
// trigger advance. The check reads (on MySQL, locks) each trigger row; a
// schedule whose last_fire_at is no longer the one its plan started from
// gets nothing written and is planned again from the row, so a leader whose
// commit stalled past its lease cannot add a second catch-up. A schedule
// used up by a fire is marked completed by a later batch, once no fire is
// due or in flight; its last trigger row already says nothing is left.
//
// With Config.FireAhead, the heap orders entries by their next fire less
// that lead, so a herd is taken up early, planned for its instant, and
// grouped by instant; the writer runs the batch's statements at once and
// holds its COMMIT until the instant (chimedb.WriteFiresParams.BeforeCommit), then
// asks for the lead once more; while it waits it gives its turn to run
// statements up, so a fire due now is not held behind it. Forbid schedules
// have no lead.
//
// # Leadership and sync
//
// Only the leader writes (Config.Leadership: in chime serve the cluster's
// scheduler lease, judged on the database's clock); a writer asks again
// before each commit. A node that starts leading writes nothing until a
// full sync started after that has been merged, and every occurrence
// before that instant counts as missed. Sync reads schedules changed since
// the last read every SyncInterval and all of them every FullSyncInterval,
// on a goroutine of its own; an unchanged row keeps its entry, and fire
// state only moves forward.
//
// # Semantics
//
// Fire times are a pure function of the schedules row (cron in its time
// zone, intervals on a grid anchored at start_at or created_at), so every
// node computes the same scheduled_at. A fire later than MisfireThreshold
// is a misfire and follows misfire_policy; fires older than
// catchup_window_seconds are dropped. As in Quartz, a resume applies the
// same rule to what was missed while paused, and an edit of the timing
// (specHash, which covers cron_syntax, dst_policy and the calendar and
// what it excludes) starts the schedule afresh from when the engine saw it
// (time_triggers.spec_changed_at), not from last_fire_at. A row that cannot
// be scheduled becomes invalid with status_reason.
//
// Fire times come from package trigger; a fire a schedule's calendar
// excludes is no fire at all, so it is neither written nor counted missed.
// A calendar's change reaches its schedules at the next sync, which reads
// the schedules of calendars updated since its watermark.
//
// scheduleengine imports models, trigger, chimedb (the Store interface; all
// SQL is in store/schedule_engine.go, fire.go and trigger.go), internal/metrics,
// internal/startstop and third-party libraries; never the task engine, the
// API or the CLI.
package scheduleengine
