package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/chimesched/chime/api"
)

// table prints rows aligned in columns under a header.
func table(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	line := func(cells []string) {
		out := make([]string, len(cells))
		for i, c := range cells {
			out[i] = inertCell(c)
		}
		fmt.Fprintln(tw, strings.Join(out, "\t"))
	}
	line(header)
	for _, r := range rows {
		line(r)
	}
	return tw.Flush()
}

// inert makes text from the API safe to print on a terminal: C0 control
// characters other than newline and tab, DEL, C1 controls (U+0080-U+009F,
// which some terminals take for ESC [) and bytes that are not UTF-8 are
// written as visible escapes (\x1b, \u009b), so a job's error, a log
// line or a node id written by a task or by plain SQL cannot retitle,
// clear or rewrite the admin's terminal, or reach the clipboard (OSC 52).
// With asJSON the escapes are JSON's (\u001b), which inside a JSON
// string keep the document valid and its meaning unchanged.
func inert(s string, asJSON bool) string {
	clean := true
	for _, r := range s {
		if unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			if asJSON {
				b.WriteString(`\ufffd`)
			} else {
				fmt.Fprintf(&b, `\x%02x`, s[i])
			}
		case !unsafeRune(r):
			b.WriteString(s[i : i+size])
		case asJSON || r >= 0x80:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\x%02x`, r)
		}
		i += size
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == utf8.RuneError
}

// cellEscapes keeps a table cell on one line and in its column.
var cellEscapes = strings.NewReplacer("\n", `\n`, "\t", `\t`)

// inertCell is inert for one table cell.
func inertCell(s string) string { return inert(cellEscapes.Replace(s), false) }

// printJSON writes raw as indented JSON, for -o json.
func printJSON(w io.Writer, raw []byte) error {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		_, err = io.WriteString(w, inert(string(raw), false)+"\n")
		return err
	}
	_, err := io.WriteString(w, inert(b.String(), true)+"\n")
	return err
}

// printFields writes the keys of a JSON object in the API's order, one per
// line with aligned values: the "show" form of a single row.
func printFields(w io.Writer, raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return printJSON(w, raw)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		// A multi-line string (a task's result or error) keeps its lines,
		// each under the first, instead of one line of \n escapes.
		var lines []string
		if say, ok := fieldWords[fmt.Sprint(k)]; ok {
			lines = []string{say(v)}
		} else if s, ok := multiline(v); ok {
			lines = strings.Split(s, "\n")
		} else {
			lines = []string{cell(v)}
		}
		fmt.Fprintf(tw, "%s:\t%s\n", inertCell(fmt.Sprint(k)), inertCell(lines[0]))
		for _, l := range lines[1:] {
			fmt.Fprintf(tw, "\t%s\n", inertCell(l))
		}
	}
	return tw.Flush()
}

// fieldWords says in words the fields whose JSON a reader would have to
// decode; -o json keeps the JSON.
var fieldWords = map[string]func(json.RawMessage) string{
	"catch_up_on_resume": catchUpWords,
}

// catchUpWords says what resuming a paused schedule writes at once.
func catchUpWords(v json.RawMessage) string {
	var c api.CatchUpOnResume
	if json.Unmarshal(v, &c) != nil || c.Jobs <= 0 {
		return cell(v)
	}
	at := c.ScheduledAt.UTC().Format(time.RFC3339)
	if c.Jobs == 1 {
		return fmt.Sprintf("resuming now writes one catch-up job at once, for %s, collapsing %s; then next_fires", at, plural(c.MissedFires, "missed fire"))
	}
	return fmt.Sprintf("resuming now writes %d catch-up jobs at once, one per missed fire, the latest for %s; then next_fires", c.Jobs, at)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// multiline returns v's text when v is a JSON string of several lines.
func multiline(v json.RawMessage) (string, bool) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	s = strings.TrimRight(s, "\n")
	return s, strings.Contains(s, "\n")
}

// cell renders one JSON value for a table: strings bare, null as "-",
// objects and lists compact.
func cell(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	switch {
	case len(v) == 0 || string(v) == "null":
		return "-"
	case v[0] == '"':
		var s string
		if json.Unmarshal(v, &s) == nil {
			if s == "" {
				return "-"
			}
			return strings.ReplaceAll(s, "\n", `\n`)
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, v) == nil {
		return b.String()
	}
	return string(v)
}

func str(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func timeCell(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
