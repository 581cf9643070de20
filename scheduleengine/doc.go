// Package scheduleengine turns the schedules table into jobs rows: it reads
// schedules (cron, interval, once), computes their fire times, and writes one
// pending job per fire together with the time_triggers advance, in one
// transaction per batch. The task engine picks the jobs up; the two engines
// never call each other.
//
// # Usage
//
//	e, err := scheduleengine.New(st, &scheduleengine.Config{NodeID: id, OnFire: taskEngine.Wake}) // st is a *store.Store
//	err = e.Start(ctx) // returns at once; the loop runs until Stop or ctx ends
//	e.Refresh()        // after the API changed a schedule: sync now
//	err = e.Stop(ctx)  // waits for the loop and releases the lease
//
// # Lifecycle
//
// Start creates a gocron v2 scheduler, one goroutine (run) that owns all
// engine state, and two writer goroutines that only run fire transactions.
// The run goroutine follows the scheduler lease: Config.Leadership when set
// (in chime serve, the cluster's elector, judged on the database's clock; a
// change nudges the loop at once and a writer checks it again before each
// commit), else a lease row of its own (leases table, renewed every
// LeaseTTL/3, standbys take over within LeaseTTL). It merges re-read schedules
// (by updated_at every SyncInterval, all of them every FullSyncInterval; the
// read itself runs on a short-lived goroutine so a large one never holds up
// fires), and plans every fire. Stop shuts gocron down, waits for the
// writers and reads in flight, and gives the lease back. A node that has
// just taken the lease writes nothing until a full sync started after
// taking it has been merged: the last leader advanced triggers it has not
// read.
//
// # gocron is the timer, the Trigger is the truth
//
// Every active schedule has one gocron job, created with gocron.CronJob and
// WithCronImplementation: its gocron.Cron is the schedule's Trigger
// (timer.go), so cron in its time zone and across DST, intervals on their
// anchored grid, once, start_at and end_at are computed by one function,
// NewTrigger, which the API also uses to preview fires. gocron arms a
// timer per job on the injected clock (WithClock), asks the lease before
// every run (WithDistributedElector: a standby's timers tick without
// firing) and logs through logrus (WithLogger).
//
// A gocron run does no I/O: it hands (schedule_id, intended time) to the run
// goroutine. gocron dispatches every job of an instant separately (a
// goroutine and several round trips to its scheduler goroutine each), so
// the last of 10,000 runs due together starts long after the first. The
// first hand-over is enough: the run goroutine sweeps every schedule whose
// next intended time has come from a min-heap of entries by next time
// (heap.go), and marks their timers so gocron's later runs of that instant
// hand nothing over. gocron still decides when to look; the heap only says
// who else is due. A lone hand-over waits BatchWait for company.
//
// runOnce plans the due schedules in id order and cuts them into batches of
// at most BatchSize jobs, spread over the writers (a herd of 1,000 is two
// batches of 500 written side by side). A schedule is in at most one batch
// in flight, so its fires stay ordered, and two batches never touch the
// same rows; at most two batches per writer are queued, and what is due
// beyond that waits in Engine.due, unplanned, for the next free slot.
// finish applies each result on the run goroutine. One batch is one
// transaction (store.WriteFires): the status check, jobs rows with UNIQUE
// (schedule_id, scheduled_at) and on-conflict-do-nothing, and the
// time_triggers advance. The check also reads (on MySQL, locks) each
// trigger row: a schedule whose last_fire_at is no longer the one its fires
// were planned from gets nothing written, and finish re-plans it from the
// row. The unique key alone does not stop a stale plan: two leaders that
// count the same missed fires up to different takeover instants write
// catch-up jobs with different scheduled_at (a leader whose commit stalled
// past its lease, and the node that took over). Schedules used up by a fire are marked completed
// by a later batch, once no fire is due or in flight, so a herd of once
// schedules commits its jobs first; the trigger row written with the last
// fire already says nothing is left, and a restore completes the schedule
// if the process dies in between. Tests that drive tick directly run
// without writers: runOnce then writes inline.
// What a schedule writes is computePlan over its Trigger from
// time_triggers.last_fire_at to now, never the moment the timer ran: the
// timer only says "look now". That is why scheduled_at is the exact
// intended time, why a late or repeated gocron run cannot write a wrong or
// second row, and why restore, catch-up and the normal cadence are the same
// code. gocron only arms future times, so what is already due when a
// schedule is (re)loaded (after a restart, a resume, a leader change) is
// queued by sync itself; and an occurrence gocron skips because it was late
// re-arming is handed over from the Cron's Next.
//
// Sync keeps gocron in step with the rows: a new active schedule gets a job,
// a changed trigger (type, expression, interval, run_at, time zone, window)
// gets gocron's Update, a paused, deleted, invalid or completed schedule's
// job is removed; an unchanged row keeps its job, so the full sync does not
// re-arm every schedule, and a row equal to the one its entry was built
// from (the delta scan re-reads the last syncOverlap of changes) keeps the
// entry as it is. Fire state only moves forward: a row read before a commit
// this engine has since applied does not set its entry back.
//
// # Semantics
//
// Fire times are a pure function of the schedules row (cron in its timezone;
// intervals on a grid anchored at start_at or created_at), so every node
// computes the same scheduled_at and UNIQUE (schedule_id, scheduled_at) makes
// a repeated fire a no-op. Fires are counted from time_triggers.last_fire_at
// (or created_at for a new schedule); a fire later than MisfireThreshold is a
// misfire and follows misfire_policy, and fires older than
// catchup_window_seconds are dropped. As in Quartz, resuming a paused
// schedule applies the same rule to the fires missed while it was paused.
// Also as in Quartz (a reschedule), an edit of the timing (schedule_type,
// cron_expr, interval_seconds, run_at, timezone, start_at: specHash) starts
// the schedule afresh: time_triggers.spec_hash is the timing the trigger
// was computed from, and a row that no longer matches it counts its fires
// from when the engine saw that (spec_changed_at, recorded by the leader),
// not from last_fire_at. The edit is found from the rows, so it works for
// the API and plain SQL alike, and after a restart; an edit made while no
// engine ran, or while the schedule was paused, counts from when an engine
// sees the row active. A row that cannot be scheduled becomes status
// invalid with status_reason.
//
// scheduleengine imports models, store (the Store interface's plain types;
// all SQL is in store/schedule_engine.go, fire.go, trigger.go, lease.go),
// internal/metrics and third-party libraries; it never imports the task
// engine, the API or the CLI.
package scheduleengine
