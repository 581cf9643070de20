package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// table prints rows aligned in columns under a header.
func table(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// printJSON writes raw as indented JSON, for -o json.
func printJSON(w io.Writer, raw []byte) error {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		_, err = w.Write(raw)
		return err
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
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
		fmt.Fprintf(tw, "%s:\t%s\n", k, cell(v))
	}
	return tw.Flush()
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

func intCell[T ~int | ~int64](v *T) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprint(*v)
}
