package trigger

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/robfig/cron/v3"
)

// Field names of a standard expression of 5 or 6 fields, and of Quartz's 7.
var (
	fields5 = []string{"minute", "hour", "day-of-month", "month", "day-of-week"}
	fields6 = append([]string{"second"}, fields5...)
	fields7 = append(fields6[:6:6], "year")
)

// dayNames are the day-of-week names both syntaxes take; Quartz's nL
// ("FRIL", the last Friday) is built on them.
var dayNames = map[string]bool{"SUN": true, "MON": true, "TUE": true, "WED": true, "THU": true, "FRI": true, "SAT": true}

// QuartzSyntaxError is a cron expression given in the standard syntax that
// uses what only Quartz syntax has: a "?", L, W or #, or a seventh field.
// Every valid Quartz expression has a "?" (Quartz wants exactly one of
// day-of-month and day-of-week to be one), so none of them passes as
// standard, where robfig would read "?" as "*" and day-of-week 1 as Monday
// (Quartz's Sunday).
type QuartzSyntaxError struct {
	// What gives it away, such as `"?" in day-of-month`.
	What string
	// Standard is how the standard syntax says it, where it can.
	Standard string
	// DayNumbers: the day-of-week field has numbers, which the two
	// syntaxes count differently.
	DayNumbers bool
}

// Error names the schedule's cron_syntax column (the API's field, the
// CLI's --cron-syntax); Explain lets another surface name its own switch.
func (e *QuartzSyntaxError) Error() string {
	return e.Explain("set cron_syntax to quartz (--cron-syntax quartz)")
}

// Explain is the message, with fix saying how to choose Quartz syntax
// where it is shown.
func (e *QuartzSyntaxError) Explain(fix string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s is Quartz syntax, not standard: if the expression is Quartz's, %s", e.What, fix)
	if e.DayNumbers {
		b.WriteString("; mind the days: Quartz counts day-of-week 1-7 from Sunday (1 is Sunday), standard 0-6 (1 is Monday)")
	}
	b.WriteString("; ")
	b.WriteString(e.Standard)
	return b.String()
}

// parseStandard reads expr (trimmed, @every and TZ= already dealt with)
// in the standard syntax. It is the one gate of that syntax for the
// engine, the API, the CLI and the console, so what it refuses as Quartz
// is refused everywhere alike. Its errors name the field at fault and
// never carry Go's strconv wording.
func parseStandard(expr string) (cron.Schedule, error) {
	if strings.HasPrefix(expr, "@") {
		return cronParser.Parse(expr) // descriptors; robfig's words are plain
	}
	fields := strings.Fields(expr)
	var names []string
	switch len(fields) {
	case 5:
		names = fields5
	case 6:
		names = fields6
	case 7:
		names = fields7
	default:
		return nil, fmt.Errorf("%d fields: standard syntax has 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first", len(fields))
	}
	if q := quartzMarks(fields, names); q != nil {
		return nil, q
	}
	// robfig/cron reads a field of commas alone as a list of no values
	// and accepts it; its Next then walks second by second through its
	// five-year limit looking for a match, minutes of CPU for one row.
	for i, f := range fields {
		if strings.Trim(f, ",") == "" {
			return nil, fmt.Errorf("%s field %q: a list with no values", names[i], f)
		}
	}
	sched, err := cronParser.Parse(expr)
	if err != nil {
		return nil, fieldError(fields, names, err)
	}
	return sched, nil
}

// quartzMarks is the first sign that fields are Quartz's: seven of them,
// then L, W or #, then "?". Only "?" is something robfig would accept.
func quartzMarks(fields, names []string) *QuartzSyntaxError {
	dow := fields[len(fields)-1] // Quartz's day-of-week is the sixth of 6 or 7, or the last if the seconds were left out
	if len(fields) == 7 {
		dow = fields[5]
	}
	q := &QuartzSyntaxError{DayNumbers: strings.ContainsAny(dow, "0123456789")}
	if len(fields) == 7 {
		q.What, q.Standard = "7 fields (a year last)", "standard syntax has 5 fields, or 6 with seconds first, and no year"
		return q
	}
	for i, f := range fields {
		for _, item := range strings.Split(f, ",") {
			if quartzItem(item) {
				q.What, q.Standard = fmt.Sprintf("%q in %s", item, names[i]), "standard syntax has no L, W or #"
				return q
			}
		}
	}
	for i, f := range fields {
		if strings.Contains(f, "?") {
			q.What, q.Standard = fmt.Sprintf("%q in %s", "?", names[i]), `in standard syntax, write * for "?"`
			return q
		}
	}
	return nil
}

// quartzItem reports whether one item of a list is Quartz's L (last), W
// (nearest weekday) or # (n-th weekday): "L", "L-3", "LW", "15W", "6L",
// "FRIL", "6#3". Month and day names (JUL, WED) are not.
func quartzItem(item string) bool {
	if strings.Contains(item, "#") {
		return true
	}
	for _, a := range strings.FieldsFunc(strings.ToUpper(item), func(r rune) bool { return r == '-' || r == '/' }) {
		last := a[len(a)-1]
		switch {
		case a == "L" || a == "LW":
			return true
		case len(a) > 1 && (last == 'L' || last == 'W') && allDigits(a[:len(a)-1]):
			return true
		case len(a) == 4 && last == 'L' && dayNames[a[:3]]:
			return true
		}
	}
	return false
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// fieldError turns robfig's refusal of fields into one that names the
// field: each field is tried alone, the others "*".
func fieldError(fields, names []string, err error) error {
	for i, f := range fields {
		probe := make([]string, len(fields))
		for j := range probe {
			probe[j] = "*"
		}
		probe[i] = f
		if _, e := cronParser.Parse(strings.Join(probe, " ")); e != nil {
			return fmt.Errorf("%s field %q: %s", names[i], f, fieldProblem(names[i], f, e))
		}
	}
	return errors.New(plain(err.Error()))
}

// fieldProblem says what is wrong with field f, which robfig refused with e.
func fieldProblem(name, f string, e error) string {
	msg := e.Error()
	if strings.HasPrefix(msg, "failed to parse int from ") {
		if p := badAtom(name, f); p != "" {
			return p
		}
	}
	msg = plain(msg)
	if name == "day-of-week" && strings.Contains(msg, "above maximum (6)") {
		msg += "; standard syntax counts day-of-week 0-6 from Sunday: write 0 or SUN for Sunday"
	}
	return msg
}

// badAtom finds the part of f that is neither a number nor a name, as
// robfig reads a field: a list of ranges a, a-b or *, each with an
// optional /step.
func badAtom(name, f string) string {
	kind := "a number"
	switch name {
	case "month":
		kind = "a number or a month name (JAN-DEC)"
	case "day-of-week":
		kind = "a number or a day name (SUN-SAT)"
	}
	for _, item := range strings.FieldsFunc(f, func(r rune) bool { return r == ',' }) {
		rng, step, hasStep := strings.Cut(item, "/")
		atoms := strings.Split(rng, "-")
		if atoms[0] == "*" || atoms[0] == "?" {
			atoms = nil // robfig reads what follows a star as the star
		}
		for _, a := range atoms {
			if p := atomProblem(a, item, kind, name); p != "" {
				return p
			}
		}
		if hasStep {
			if p := atomProblem(step, item, "a number", ""); p != "" {
				return "step " + p
			}
		}
	}
	return ""
}

// atomProblem says what is wrong with a, one number or name of item.
func atomProblem(a, item, kind, field string) string {
	_, err := strconv.Atoi(a)
	switch {
	case a == "":
		return fmt.Sprintf("%q has an empty part", item)
	case err == nil || isName(field, a):
		return ""
	case allDigits(strings.TrimPrefix(a, "+")):
		return fmt.Sprintf("%q is too large", a)
	}
	return fmt.Sprintf("%q is not %s", a, kind)
}

func isName(field, a string) bool {
	switch field {
	case "month":
		switch strings.ToUpper(a) {
		case "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC":
			return true
		}
	case "day-of-week":
		return dayNames[strings.ToUpper(a)]
	}
	return false
}

// plain drops Go's strconv wording from a robfig message, should one
// reach here: "failed to parse int from x: strconv.Atoi: parsing ..."
// reads "failed to parse int from x".
func plain(msg string) string {
	if i := strings.Index(msg, ": strconv."); i >= 0 {
		return msg[:i]
	}
	return msg
}
