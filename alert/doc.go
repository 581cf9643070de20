// Package alert tells people what went wrong, or did not happen, in
// chime: rules (alert_rules rows) watch for events — jobs that failed,
// ran out of retries, recovered, were canceled, caught up missed fires or
// were rescued from a lost node; schedules that missed a deadline; runs
// far slower than usual; backlogs; lost nodes — and each occurrence is
// recorded in the alerts outbox, then delivered to the rule's channel
// (alert_channels: email, a signed webhook, a Slack-compatible incoming
// webhook). docs/alerts.md is the user's guide, the payload and the
// signature.
//
// An Evaluator judges the rules. Only the node holding the maintenance
// lease runs it (its Leading func), on an injected clock. It records each
// occurrence under a dedupe key of rule, subject and occurrence, so a
// pass repeated after a crash, or by the next leader, records nothing
// twice; conditions that clear (deadline met late, slow run ended, backlog
// drained) get a "resolved" alert. Throttling keeps, per rule and subject,
// one alert per window; the ones it holds back are kept as suppressed and
// counted in the next one sent.
//
// A Dispatcher on every node claims due alerts (as notify's Sender claims
// notices) and delivers each on a goroutine of its own, so a slow or dead
// receiver holds up neither the engines nor the other channels. Tries are
// bounded (attempts, backoff, per-channel timeout, a bounded read of the
// response, no redirects).
//
// alert imports chimedb, models, notify (the SMTP mailer), trigger (a
// schedule's fire times, for deadlines), internal/metrics and
// internal/startstop; never the store, an engine or a door.
package alert
