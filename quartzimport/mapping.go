package quartzimport

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/tasks"
)

// ErrUsage wraps a bad map file or a task type chime does not register:
// the command line is wrong, nothing was imported.
var ErrUsage = errors.New("usage")

// maxMapFile bounds the map file: a few hundred job classes at most.
const maxMapFile = 1 << 20

// ParseClassMap reads the map file: one `java.class.Name: task_type` per
// line, blank lines and lines starting with # ignored. It is the one-line
// form of a YAML mapping, read strictly (no nesting, no flow style, no
// anchors) so that every mistake gets its line number. Every task type
// must be registered in reg.
func ParseClassMap(r io.Reader, reg *tasks.Registry) (map[string]string, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxMapFile+1))
	if err != nil {
		return nil, fmt.Errorf("%w: map file: %v", ErrUsage, err)
	}
	if len(data) > maxMapFile {
		return nil, fmt.Errorf("%w: map file is longer than %d bytes", ErrUsage, maxMapFile)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxMapFile+1)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), " \t\r")
		if n == 1 {
			line = strings.TrimPrefix(line, "\ufeff")
		}
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") || trimmed == "---" {
			continue
		}
		fail := func(format string, args ...any) error {
			return fmt.Errorf("%w: map file line %d: %s", ErrUsage, n, fmt.Sprintf(format, args...))
		}
		if line != trimmed {
			return nil, fail("indented; want `java.class.Name: task_type` at the start of the line")
		}
		class, task, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fail("no colon; want `java.class.Name: task_type`")
		}
		class, task = strings.TrimSpace(class), strings.TrimSpace(task)
		if i := strings.Index(task, " #"); i >= 0 {
			task = strings.TrimSpace(task[:i])
		}
		task = unquote(task)
		class = unquote(class)
		switch {
		case !javaClassName(class):
			return nil, fail("%q is not a Java class name (want e.g. com.acme.ReportJob)", class)
		case task == "":
			return nil, fail("no task type after %q", class)
		case strings.ContainsAny(task, ":{}[],&*!|>'\"%@`"):
			return nil, fail("task type %q: want one plain word such as shell", task)
		}
		if _, dup := out[class]; dup {
			return nil, fail("%s is mapped twice", class)
		}
		if _, err := reg.New(task); err != nil {
			return nil, fail("unknown task type %q (registered: %s)", task, strings.Join(reg.Kinds(), ", "))
		}
		out[class] = task
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: map file: %v", ErrUsage, err)
	}
	return out, nil
}

// unquote strips one pair of matching YAML quotes.
func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// javaClassName accepts a binary class name: dot-separated identifiers,
// nested classes with $.
func javaClassName(s string) bool {
	if s == "" || len(s) > 1000 {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if part == "" {
			return false
		}
		for i, r := range part {
			ok := unicode.IsLetter(r) || r == '_' || r == '$' || (i > 0 && unicode.IsDigit(r))
			if !ok {
				return false
			}
		}
	}
	return true
}

// Quartz's misfire instructions (Trigger and its subclasses).
const (
	misfireIgnore = -1
	misfireSmart  = 0
	// CronTrigger
	cronFireOnceNow = 1
	cronDoNothing   = 2
	// SimpleTrigger
	simpleFireNow                     = 1
	simpleRescheduleNowExisting       = 2
	simpleRescheduleNowRemaining      = 3
	simpleRescheduleNextRemaining     = 4
	simpleRescheduleNextExisting      = 5
	repeatIndefinitely                = -1
	simpleSmartOnceOnlyFireNow        = simpleFireNow
	simpleSmartForeverNextRemaining   = simpleRescheduleNextRemaining
	simpleSmartRepeatingNowExisting   = simpleRescheduleNowExisting
	misfireUnknownInstructionExplains = "Quartz defines -1 (ignore), 0 (smart) and, per trigger type, 1-2 for cron and 1-5 for simple triggers"
)

// misfirePolicy maps a trigger's MISFIRE_INSTR to chime's misfire_policy.
// approx says what differs from Quartz, "" when it is exact; docs/quartz.md
// has the same table.
func misfirePolicy(kind string, instr int64, repeatCount int64) (p models.MisfirePolicy, approx string, err error) {
	if instr == misfireIgnore {
		return models.MisfireFireAll, "Quartz fires every missed time; chime writes each, up to scheduleengine's cap", nil
	}
	switch kind {
	case "CRON":
		switch instr {
		case misfireSmart, cronFireOnceNow:
			return models.MisfireFireOnce, "", nil
		case cronDoNothing:
			return models.MisfireSkip, "", nil
		}
	case "SIMPLE":
		if instr == misfireSmart {
			switch repeatCount {
			case 0:
				instr = simpleSmartOnceOnlyFireNow
			case repeatIndefinitely:
				instr = simpleSmartForeverNextRemaining
			default:
				instr = simpleSmartRepeatingNowExisting
			}
		}
		switch instr {
		case simpleFireNow:
			return models.MisfireFireOnce, "", nil
		case simpleRescheduleNowExisting, simpleRescheduleNowRemaining:
			return models.MisfireFireOnce, "Quartz fires now and moves the later fires to count from now; chime fires once now and keeps the original times", nil
		case simpleRescheduleNextRemaining:
			return models.MisfireSkip, "", nil
		case simpleRescheduleNextExisting:
			return models.MisfireSkip, "Quartz keeps the full repeat count after a misfire, so it ends later; chime ends at the original last time", nil
		}
	}
	return "", "", fmt.Errorf("unknown misfire instruction %d for a %s trigger (%s)", instr, kind, misfireUnknownInstructionExplains)
}

// misfireName names an instruction as Quartz's constants do, for the report.
func misfireName(kind string, instr, repeatCount int64) string {
	names := map[int64]string{misfireIgnore: "IGNORE_MISFIRE_POLICY", misfireSmart: "SMART_POLICY"}
	switch kind {
	case "CRON":
		names[cronFireOnceNow], names[cronDoNothing] = "FIRE_ONCE_NOW", "DO_NOTHING"
	case "SIMPLE":
		names[simpleFireNow] = "FIRE_NOW"
		names[simpleRescheduleNowExisting] = "RESCHEDULE_NOW_WITH_EXISTING_REPEAT_COUNT"
		names[simpleRescheduleNowRemaining] = "RESCHEDULE_NOW_WITH_REMAINING_REPEAT_COUNT"
		names[simpleRescheduleNextRemaining] = "RESCHEDULE_NEXT_WITH_REMAINING_COUNT"
		names[simpleRescheduleNextExisting] = "RESCHEDULE_NEXT_WITH_EXISTING_COUNT"
	}
	n, ok := names[instr]
	if !ok {
		return fmt.Sprint(instr)
	}
	if instr == misfireSmart && kind == "SIMPLE" {
		switch repeatCount {
		case 0:
			n += " (FIRE_NOW for a one-shot trigger)"
		case repeatIndefinitely:
			n += " (RESCHEDULE_NEXT_WITH_REMAINING_COUNT when repeating for ever)"
		default:
			n += " (RESCHEDULE_NOW_WITH_EXISTING_REPEAT_COUNT with a repeat count)"
		}
	}
	return fmt.Sprintf("%d %s", instr, n)
}

// cronZone is the IANA name of a CRON trigger's TIME_ZONE_ID, a Java zone
// ID: Java's old three-letter IDs and its GMT+hh:mm zones are no IANA names
// (blob.go maps the same for calendars). note says what was read how.
func cronZone(id string) (name, note string, err error) {
	if n, ok := javaShortIDs[id]; ok {
		return n, fmt.Sprintf("Java's time zone ID %s read as %s", id, n), nil
	}
	m := customZone.FindStringSubmatch(id)
	if m == nil {
		return id, "", nil
	}
	if m[3] != "00" {
		return "", "", fmt.Errorf("time zone %s has no IANA name (IANA's fixed zones are whole hours); change the trigger's zone first", id)
	}
	h, _ := strconv.Atoi(m[2])
	switch {
	case h == 0:
		name = "UTC"
	case m[1] == "+":
		name = "Etc/GMT-" + strconv.Itoa(h) // IANA's sign is the other way round
	default:
		name = "Etc/GMT+" + strconv.Itoa(h)
	}
	return name, fmt.Sprintf("Java's time zone %s read as %s", id, name), nil
}

// quartzDefaultPriority is Trigger.DEFAULT_PRIORITY.
const quartzDefaultPriority = 5

// applyPriority carries a trigger's PRIORITY over to its schedule. Quartz's
// default leaves the schedule's priority NULL, so the definition's decides,
// as it does for schedules made in chime. Quartz takes any int; chime's
// range is models.PriorityMin..PriorityMax, so others are clamped into it,
// which keeps their order only where they stay apart: the note says so.
func applyPriority(s *models.Schedule, priority int64) (note string) {
	if priority == quartzDefaultPriority {
		s.Priority = nil
		return ""
	}
	p := min(max(priority, models.PriorityMin), models.PriorityMax)
	v := int(p)
	s.Priority = &v
	if p != priority {
		return fmt.Sprintf("Quartz priority %d clamped to %d (chime's priorities are %d..%d)",
			priority, p, models.PriorityMin, models.PriorityMax)
	}
	return ""
}
