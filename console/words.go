package console

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/chimesched/chime/models"
)

// States are shown with the words the API and the CLI use (pending,
// queued, ...), so what an admin reads here is what a filter, a script
// or plain SQL takes; stateHelp says each in a few words on hover.
var stateHelps = map[any]string{
	models.JobPending:   "waits to be claimed: due at run_at, or later",
	models.JobQueued:    "claimed by a node; waits for a worker there",
	models.JobRunning:   "its task runs on a node",
	models.JobPaused:    "its task is paused on its node; resume continues it",
	models.JobSucceeded: "finished: the task succeeded",
	models.JobFailed:    "finished: its last attempt failed",
	models.JobStopped:   "finished: stopped on request while it ran",
	models.JobCanceled:  "finished without a run to its end: stopped before a node took it, or canceled by its task",

	models.ScheduleActive:    "fires at its times",
	models.SchedulePaused:    "fires nothing until resumed",
	models.ScheduleCompleted: "has nothing left to fire",
	models.ScheduleInvalid:   "cannot be scheduled: see its reason",
}

func stateHelp(s any) string { return stateHelps[s] }

// statusWords is a job's or a schedule's status as the API says it.
func statusWords(s any) string {
	switch v := s.(type) {
	case models.JobStatus:
		return string(v)
	case models.ScheduleStatus:
		return string(v)
	}
	return fmt.Sprint(s)
}

// jobStatusWords is a job's status as the CLI's job list shows it (with
// the typed outcome its task chose), and a control request not acted on
// yet, since the status alone hides it.
func jobStatusWords(j models.Job) string {
	w := string(j.Status)
	switch j.Outcome {
	case models.OutcomeNone:
	case models.OutcomeCanceled:
		w += " (by task)"
	default:
		w += " (" + string(j.Outcome) + ")"
	}
	if j.Control != models.ControlNone && !j.Status.Finished() {
		w += " (" + string(j.Control) + " requested)"
	}
	return w
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// specWords says when a schedule fires, in words. It covers the common
// shapes; anything else shows the expression itself, and the page's list
// of next fire times, computed by the engine's own code, is the proof.
func specWords(s *models.Schedule) string {
	tz := ""
	if s.Timezone != "" && s.Timezone != "UTC" {
		tz = " (" + s.Timezone + " time)"
	} else {
		tz = " (UTC)"
	}
	switch s.ScheduleType {
	case models.ScheduleInterval:
		if s.IntervalSeconds == nil {
			return "interval without a length"
		}
		d, err := models.IntervalBound.Duration(int64(*s.IntervalSeconds))
		if err != nil {
			return fmt.Sprintf("every %d seconds (out of range)", *s.IntervalSeconds)
		}
		return "every " + durationWords(d)
	case models.ScheduleOnce:
		if s.RunAt == nil {
			return "once, without a time"
		}
		return "once, at " + s.RunAt.UTC().Format("2006-01-02 15:04:05 UTC")
	case models.ScheduleCron:
		if s.CronExpr == nil {
			return "cron without an expression"
		}
		if s.CronSyntax == models.SyntaxQuartz {
			// cronWords reads the standard syntax, where 1 is Monday, not Sunday.
			return "Quartz cron " + *s.CronExpr + tz
		}
		return cronWords(*s.CronExpr) + tz
	}
	return string(s.ScheduleType)
}

func durationWords(d time.Duration) string {
	units := []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "day"}, {time.Hour, "hour"}, {time.Minute, "minute"}, {time.Second, "second"}}
	for _, u := range units {
		if d >= u.d && d%u.d == 0 {
			n := int64(d / u.d)
			if n == 1 {
				return u.name
			}
			return fmt.Sprintf("%d %ss", n, u.name)
		}
	}
	return d.String()
}

var weekdays = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}

func cronWords(expr string) string {
	e := strings.TrimSpace(expr)
	switch e {
	case "@yearly", "@annually":
		return "every year on January 1 at 00:00"
	case "@monthly":
		return "on the first day of every month at 00:00"
	case "@weekly":
		return "every Sunday at 00:00"
	case "@daily", "@midnight":
		return "every day at 00:00"
	case "@hourly":
		return "every hour, on the hour"
	}
	if d, ok := strings.CutPrefix(e, "@every "); ok {
		if dur, err := time.ParseDuration(strings.TrimSpace(d)); err == nil && dur > 0 {
			return "every " + durationWords(dur)
		}
	}
	f := strings.Fields(e)
	if strings.HasPrefix(e, "TZ=") || strings.HasPrefix(e, "CRON_TZ=") || (len(f) != 5 && len(f) != 6) {
		return "cron " + e
	}
	if len(f) == 6 {
		// Seconds other than 0 are rare; the expression says them best.
		if f[0] != "0" {
			return "cron " + e
		}
		f = f[1:]
	}
	min, hour, dom, mon, dow := f[0], f[1], f[2], f[3], f[4]
	if mon != "*" {
		return "cron " + e
	}
	num := func(s string, hi int) (int, bool) {
		n, err := strconv.Atoi(s)
		return n, err == nil && n >= 0 && n <= hi
	}
	switch {
	case min == "*" && hour == "*" && dom == "*" && dow == "*":
		return "every minute"
	case strings.HasPrefix(min, "*/") && hour == "*" && dom == "*" && dow == "*":
		if n, ok := num(min[2:], 59); ok && n > 0 {
			return "every " + durationWords(time.Duration(n)*time.Minute)
		}
	case hour == "*" && dom == "*" && dow == "*":
		if m, ok := num(min, 59); ok {
			return fmt.Sprintf("every hour at minute %d", m)
		}
	}
	m, okm := num(min, 59)
	h, okh := num(hour, 23)
	if !okm || !okh {
		return "cron " + e
	}
	at := fmt.Sprintf("at %02d:%02d", h, m)
	switch {
	case dom == "*" && dow == "*":
		return "every day " + at
	case dom == "*" && (dow == "1-5" || strings.EqualFold(dow, "MON-FRI")):
		return "every weekday (Monday to Friday) " + at
	case dom == "*":
		var days []string
		for _, d := range strings.Split(dow, ",") {
			n, ok := num(d, 7)
			if !ok {
				return "cron " + e
			}
			days = append(days, weekdays[n])
		}
		return "every " + strings.Join(days, ", ") + " " + at
	case dow == "*":
		if d, ok := num(dom, 31); ok && d > 0 {
			return fmt.Sprintf("on day %d of every month %s", d, at)
		}
	}
	return "cron " + e
}
