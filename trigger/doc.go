// Package trigger computes when a schedule fires: New turns a schedules row
// (and the calendar it names) into a Trigger whose Next gives the first
// fire strictly after an instant. It is pure (models, quartzcron and
// robfig/cron's parser; no database, no scheduler), so the schedule engine,
// the API's next_fires, the CLI and the console compute the same times,
// and every node of a cluster agrees on them.
//
// A cron schedule reads cron_expr in its cron_syntax: standard (robfig's
// 5 or 6 fields and descriptors, refusing as Quartz's what only Quartz
// syntax has: ?, L, W, # and 7 fields) with the schedule's dst_policy for wall
// times that a daylight-saving change skips or repeats, or quartz
// (quartzcron: exactly Quartz 2.3.2's CronExpression, its daylight-saving
// behaviour included). A calendar's excluded times are skipped: such a
// fire is no fire at all, neither run nor missed. docs/quartz.md has the
// rules and the calendar definitions.
//
// A row is hostile input: interval_seconds and catchup_window_seconds
// become durations only through their models.Bound, a row whose times lie
// outside models.MinTime and MaxTime is refused, and Next never answers a
// fire that is not after the instant asked or lies past MaxTime.
package trigger
