// Package quartzcron parses Quartz cron expressions and computes their fire
// times exactly as Quartz 2.3.2's org.quartz.CronExpression does, so that
// schedules brought from Quartz keep firing when they did.
//
//	e, err := quartzcron.Parse("0 15 10 ? * 6L", loc) // 10:15 on the last Friday of every month
//	next := e.Next(time.Now())                       // zero time when it never fires again
//
// The syntax is six or seven fields: seconds, minutes, hours, day-of-month,
// month, day-of-week, and an optional year. Day-of-week counts 1-7 from
// SUNDAY (standard cron counts 0-6 from Sunday, so "1" is Monday there).
// Exactly one of the two day fields must be '?'. docs/quartz.md lists the
// special characters.
//
// The parser and the search are ports of Quartz's, quirks included: Quartz
// accepts some odd input ("5X" in the seconds is 5, "MON-FRI/2" ignores the
// step) and its answers around daylight-saving changes come from
// java.util.GregorianCalendar's lenient arithmetic, which calendar.go and
// zone.go reproduce. testdata/quartz_fixture.json holds fire times and error
// messages that real Quartz computed (testdata/gen regenerates it); the
// tests compare against all of it.
//
// Where chime differs from Quartz on purpose: an expression with a field
// that yields no value, and "0W" and "L-28W" to "L-30W" (which make Quartz
// loop for ever), are refused; the last year is fixed at MaxYear instead of Quartz's JVM start
// year + 100; one Next gives up (zero time) after maxSteps steps.
//
// An Expression is immutable after Parse and safe for concurrent use.
package quartzcron
