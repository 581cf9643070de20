package quartzimport

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
)

// Outcome is what the import did with one Quartz object.
type Outcome string

const (
	// Created: written to chime's database.
	Created Outcome = "created"
	// WouldCreate: --dry-run; it would have been created.
	WouldCreate Outcome = "would create"
	// Unchanged: chime already has it, the same (an earlier import).
	Unchanged Outcome = "unchanged"
	// Conflict: chime has an object of that name that differs; left alone.
	Conflict Outcome = "conflict"
	// NotMapped: it has no chime equivalent or is unreadable; Detail says why.
	NotMapped Outcome = "not mapped"
)

// Line is one object of the report.
type Line struct {
	// Kind is calendar, definition or schedule.
	Kind string
	// Name is the chime name (GROUP.NAME for jobs and triggers).
	Name string
	// Source is the Quartz object, e.g. "CRON trigger reports.month-end".
	Source  string
	Outcome Outcome
	// Detail says why for conflict and not mapped.
	Detail string
	// Notes are what differs from Quartz in what was mapped.
	Notes []string
}

// Report is what an import did, in order: calendars, definitions, schedules.
type Report struct {
	Lines  []Line
	DryRun bool
}

func (r *Report) add(l Line) *Line {
	r.Lines = append(r.Lines, l)
	return &r.Lines[len(r.Lines)-1]
}

// Count returns how many lines have outcome o.
func (r *Report) Count(o Outcome) int {
	n := 0
	for _, l := range r.Lines {
		if l.Outcome == o {
			n++
		}
	}
	return n
}

// Complete reports whether everything was mapped: no conflict, nothing
// left out. `chime import quartz` exits 1 when it is not.
func (r *Report) Complete() bool {
	return r.Count(Conflict) == 0 && r.Count(NotMapped) == 0
}

// Print writes one line per object and the totals. Names and reasons come
// from the Quartz store, so control characters are quoted away.
func (r *Report) Print(w io.Writer) error {
	width := 0
	for _, l := range r.Lines {
		width = max(width, len(l.Kind)+1+len(safe(l.Name)))
	}
	var b strings.Builder
	for _, l := range r.Lines {
		head := l.Kind + " " + safe(l.Name)
		fmt.Fprintf(&b, "%-*s  %s", width, head, l.Outcome)
		if l.Detail != "" {
			b.WriteString(": " + safe(l.Detail))
		}
		if l.Source != "" {
			b.WriteString("  [" + safe(l.Source) + "]")
		}
		b.WriteByte('\n')
		for _, n := range l.Notes {
			fmt.Fprintf(&b, "%-*s    note: %s\n", width, "", safe(n))
		}
	}
	made := Created
	if r.DryRun {
		made = WouldCreate
	}
	var totals []string
	for _, o := range []Outcome{made, Unchanged, Conflict, NotMapped} {
		totals = append(totals, fmt.Sprintf("%s %d", o, r.Count(o)))
	}
	if r.DryRun {
		b.WriteString("dry run, nothing written: ")
	}
	b.WriteString(strings.Join(totals, ", ") + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// safe quotes text with control or invisible characters, so a hostile row
// cannot rewrite the terminal or forge report lines.
func safe(s string) string {
	for _, r := range s {
		if unicode.IsControl(r) || !unicode.IsPrint(r) && r != ' ' {
			q := strconv.Quote(s)
			return q[1 : len(q)-1]
		}
	}
	return s
}
