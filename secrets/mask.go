package secrets

import (
	"encoding/json"
	"slices"
	"strings"
)

// Mask is what a secret's value is replaced by in what a task logs.
const Mask = "********"

// MinMasked is the shortest value (or line of a value) masked: a shorter
// one would mask ordinary text all over a job's output while hiding
// little (docs/security.md says so).
const MinMasked = 4

// Masker replaces the values of the secrets a job used wherever they
// appear in its log lines, its result and its error. It is best effort: a
// task that transforms a value (encodes, splits or reverses it) gets the
// transformed text through.
type Masker struct {
	r *strings.Replacer
}

// NewMasker masks each value, each of its lines (a line printed on its own
// is caught too) and its JSON-escaped form; nil when there is nothing to
// mask.
func NewMasker(values []string) *Masker {
	var olds []string
	add := func(s string) {
		if len(s) >= MinMasked && !slices.Contains(olds, s) {
			olds = append(olds, s)
		}
	}
	for _, v := range values {
		add(v)
		for _, l := range strings.FieldsFunc(v, func(r rune) bool { return r == '\n' || r == '\r' || r == 0 }) {
			add(l)
		}
		if b, err := json.Marshal(v); err == nil {
			add(string(b[1 : len(b)-1]))
		}
	}
	if len(olds) == 0 {
		return nil
	}
	// The longest first: at one position the Replacer takes the first old
	// string that matches.
	slices.SortFunc(olds, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(olds))
	for _, o := range olds {
		pairs = append(pairs, o, Mask)
	}
	return &Masker{r: strings.NewReplacer(pairs...)}
}

// Mask returns s with every value masked; s itself on a nil Masker.
func (m *Masker) Mask(s string) string {
	if m == nil {
		return s
	}
	return m.r.Replace(s)
}
