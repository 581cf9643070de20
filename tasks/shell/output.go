package shell

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/sirupsen/logrus"
)

const (
	tailBytes   = 64 << 10 // kept per stream for the result
	maxLogLines = 1000     // logged per stream; job_logs is not an archive
	maxLineLen  = 4 << 10  // a longer line is logged truncated
)

// tail keeps the last max bytes written to it.
type tail struct {
	max   int
	buf   []byte
	total int64
}

func (t *tail) Write(p []byte) (int, error) {
	t.total += int64(len(p))
	t.buf = append(t.buf, p...)
	// Compact at 2*max so the copy is amortised over max bytes of input.
	if len(t.buf) > 2*t.max {
		n := copy(t.buf, t.buf[len(t.buf)-t.max:])
		t.buf = t.buf[:n]
	}
	return len(p), nil
}

func (t *tail) String() string {
	b := t.buf
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if cut := t.total - int64(len(b)); cut > 0 {
		s = fmt.Sprintf("[... %d bytes cut ...]\n", cut) + s
	}
	return s
}

// lastLine is the last non-empty line, for the error message.
func (t *tail) lastLine() string {
	s := strings.TrimSpace(t.String())
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// lineLogger logs each line written to it, up to maxLogLines.
type lineLogger struct {
	entry     *logrus.Entry
	level     logrus.Level
	stream    string
	partial   []byte
	truncated bool
	lines     int
}

func (l *lineLogger) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.add(p)
			break
		}
		l.add(p[:i])
		l.flush()
		p = p[i+1:]
	}
	return n, nil
}

func (l *lineLogger) add(p []byte) {
	room := maxLineLen - len(l.partial)
	if len(p) > room {
		p, l.truncated = p[:max(room, 0)], true
	}
	l.partial = append(l.partial, p...)
}

func (l *lineLogger) flush() {
	line := strings.ToValidUTF8(string(bytes.TrimRight(l.partial, "\r")), "\uFFFD")
	if l.truncated {
		line += " [line truncated]"
	}
	l.partial, l.truncated = l.partial[:0], false
	l.lines++
	switch {
	case l.lines <= maxLogLines:
		l.entry.WithField("stream", l.stream).Log(l.level, line)
	case l.lines == maxLogLines+1:
		l.entry.WithField("stream", l.stream).Warnf("shell: further %s lines not logged (limit %d); the result keeps the tail", l.stream, maxLogLines)
	}
}

// close logs a last line that had no newline.
func (l *lineLogger) close() {
	if len(l.partial) > 0 || l.truncated {
		l.flush()
	}
}

// drain copies r into both sinks until EOF or error; a closed pipe is the
// normal end.
func drain(r io.Reader, t *tail, l *lineLogger) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			_, _ = t.Write(buf[:n])
			_, _ = l.Write(buf[:n])
		}
		if err != nil {
			l.close()
			return
		}
	}
}
