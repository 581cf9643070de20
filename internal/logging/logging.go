// Package logging builds chime's logrus logger from configuration. It imports
// only logrus and the standard library.
package logging

import (
	"fmt"
	"io"
	"strings"

	"github.com/sirupsen/logrus"
)

// New returns a logger writing to w in format ("text" or "json") at level.
func New(w io.Writer, format, level string) (*logrus.Logger, error) {
	l := logrus.New()
	l.SetOutput(w)
	lvl, err := logrus.ParseLevel(strings.ToLower(level))
	if err != nil {
		return nil, fmt.Errorf("log.level: %w", err)
	}
	l.SetLevel(lvl)
	switch format {
	case "json":
		l.SetFormatter(&logrus.JSONFormatter{TimestampFormat: "2006-01-02T15:04:05.000000Z07:00"})
	case "text", "":
		l.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, TimestampFormat: "2006-01-02T15:04:05.000Z07:00"})
	default:
		return nil, fmt.Errorf("log.format: unknown format %q", format)
	}
	return l, nil
}
