// Package models holds chime's table rows as GORM structs and the enum types
// stored in them. It is the SQL contract in Go form: column names here are the
// names admins use in plain SQL, and the schema itself lives in sql/.
//
// models imports only the standard library and GORM's schema tags; it holds no
// queries and imports no engine.
//
// Job states move like this:
//
//	pending ──claim──▶ queued ──OnQueue──▶ running ──▶ succeeded | failed | stopped
//	   ▲                 │                  │  ▲
//	   │  shutdown/crash │                  ▼  │ control=resume
//	   └─────────────────┘                paused
//	   ▲                                    │
//	   ├──── failed attempt with attempts left (run_at = now + backoff)
//	   ├──── tasks.Snooze(d): run_at = now + d, attempt given back (outcome snoozed)
//	   └──── node lost: requests_recovery (attempt given back), else attempts left
//
//	pending | queued ──control=stop──▶ canceled
//	running ──tasks.Cancel──▶ canceled (outcome canceled)
//	running ──tasks.SkipRetry──▶ failed, attempts left or not (outcome skip_retry)
//
// jobs.outcome keeps the typed outcome of the last run until the next claim;
// jobs.snoozes counts snoozes (capped by tasks.MaxSnoozes).
//
// A schedule is active, paused, completed (nothing left to fire) or invalid
// (it cannot be scheduled; status_reason says why).
package models
