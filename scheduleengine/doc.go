// Package scheduleengine turns the schedules table into jobs rows: it reads
// schedules (cron, interval, once), computes their fire times, and writes one
// pending job per fire together with the time_triggers advance, in one
// transaction per batch. The task engine picks the jobs up; the two engines
// never call each other.
//
// # Usage
//
//	e, err := scheduleengine.New(scheduleengine.NewDBStore(st), &scheduleengine.Config{NodeID: id, OnFire: taskEngine.Wake})
//	err = e.Start(ctx) // returns at once; the loop runs until Stop or ctx ends
//	e.Refresh()        // after the API changed a schedule: sync now
//	err = e.Stop(ctx)  // waits for the loop and releases the lease
//
// # Lifecycle
//
// One goroutine owns all state. Each tick it renews the scheduler lease
// (leases table; one leader per cluster, standbys take over within LeaseTTL),
// re-reads changed schedules (by updated_at every SyncInterval, all of them
// every FullSyncInterval), and, on the leader, fires everything due in
// runOnce. It sleeps on the injected clock until the earliest of the next
// fire, the next lease renewal and the next sync.
//
// # Why not one gocron job per schedule
//
// DESIGN.md proposes gocron timers feeding a writer goroutine. This engine
// keeps a heap of next fire times instead: scheduled_at must be the exact
// intended time (the unique key depends on it) and gocron's callbacks do not
// carry it; a herd of schedules due together is one batch by construction
// rather than gathered by a timed writer; 100,000 schedules cost one timer,
// not 100,000; and restore, catch-up and the normal cadence are the same code
// (computePlan) driven by the injected clock. Cron parsing is robfig/cron/v3,
// as in gocron.
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
// schedule applies the same rule to the fires missed while it was paused. A
// row that cannot be scheduled becomes status invalid with status_reason.
//
// scheduleengine imports models, store (only in dbstore.go, which belongs in
// store/ by the layout rule), internal/metrics and third-party libraries; it
// never imports the task engine, the API or the CLI.
package scheduleengine
