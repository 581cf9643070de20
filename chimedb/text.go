package chimedb

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Caps on the text that tasks produce, in bytes. Plugin output is outside
// input: a byte MySQL's utf8mb4 refuses, or text longer than its column,
// makes the database refuse the whole statement, and with it every other
// job's outcome in the batch. store therefore makes every such value
// storable before it writes it (see Storable), on both dialects, so that
// SQLite keeps what MySQL would keep. store's TestTextCapsMatchSchema ties them to
// the migrated columns.
const (
	// MaxErrorBytes is jobs.error, a TEXT (65,535 bytes).
	MaxErrorBytes = 65535
	// MaxLogMessageBytes is job_logs.message, a TEXT.
	MaxLogMessageBytes = 65535
	// MaxLogLevelBytes is job_logs.level, a VARCHAR(16) (ASCII levels).
	MaxLogLevelBytes = 16
	// MaxResultBytes caps jobs.result well below its MEDIUMTEXT (16 MiB):
	// an outcome batch is one statement, and with client-side interpolation
	// a statement must fit in max_allowed_packet (16 MiB on MariaDB, 4 MiB
	// on old MySQL defaults), escaping may double a value, and a task's
	// result is a summary, not a file store.
	MaxResultBytes = 1 << 20
)

// Storable returns s as a column of maxBytes can hold it on every dialect:
// invalid UTF-8 becomes U+FFFD, and a longer text is cut on a rune boundary
// and ends with a marker saying how many bytes were cut. The result is
// never longer than maxBytes. Valid text within the cap is returned as is,
// without copying.
func Storable(s string, maxBytes int) string {
	if len(s) <= maxBytes && utf8.ValidString(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= maxBytes {
		return s
	}
	// The marker's length depends on the count it reports; size it for the
	// largest count possible. A cap too small for any marker (a level)
	// just cuts.
	m := truncMarker(len(s))
	keep := maxBytes - len(m)
	if keep < 0 {
		m, keep = "", maxBytes
	}
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	if m != "" {
		m = truncMarker(len(s) - keep)
	}
	return s[:keep] + m
}

func truncMarker(cut int) string {
	return "…[truncated " + strconv.Itoa(cut) + " bytes]"
}
