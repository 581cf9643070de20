package store

import (
	"context"
	"errors"
	"time"

	"github.com/sirupsen/logrus"
	"gorm.io/gorm"
	gormlogger "gorm.io/gorm/logger"
)

// gormLogger routes GORM's lines into logrus: failed statements at debug
// (but not "record not found", which callers handle), slow queries at warn,
// and every statement at trace. Statements keep their placeholders: bound
// values can be credentials (an smtp.password row, a task's params), and
// logs travel further than the database does.
type gormLogger struct {
	log  logrus.FieldLogger
	slow time.Duration
}

// NewGormLogger returns a GORM logger that writes through log.
func NewGormLogger(log logrus.FieldLogger, slow time.Duration) gormlogger.Interface {
	return &gormLogger{log: log.WithField("component", "gorm"), slow: slow}
}

func (l *gormLogger) LogMode(gormlogger.LogLevel) gormlogger.Interface { return l }

var _ gorm.ParamsFilter = (*gormLogger)(nil)

// ParamsFilter drops the bound values before GORM renders a statement for
// Trace, so the logged SQL shows "?" where each value went.
func (l *gormLogger) ParamsFilter(_ context.Context, sql string, _ ...any) (string, []any) {
	return sql, nil
}

func (l *gormLogger) Info(_ context.Context, msg string, args ...any) {
	l.log.Infof(msg, args...)
}

func (l *gormLogger) Warn(_ context.Context, msg string, args ...any) {
	l.log.Warnf(msg, args...)
}

func (l *gormLogger) Error(_ context.Context, msg string, args ...any) {
	l.log.Errorf(msg, args...)
}

func (l *gormLogger) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), err error) {
	elapsed := time.Since(begin)
	switch {
	case err != nil && !errors.Is(err, gorm.ErrRecordNotFound) && !errors.Is(err, context.Canceled):
		sql, rows := fc()
		l.log.WithFields(logrus.Fields{"elapsed": elapsed, "rows": rows, "error": err}).Debugf("query failed: %s", truncate(sql, 500))
	case elapsed > l.slow:
		sql, rows := fc()
		l.log.WithFields(logrus.Fields{"elapsed": elapsed, "rows": rows}).Warnf("slow query: %s", truncate(sql, 500))
	default:
		if lg, ok := l.log.(*logrus.Entry); ok && lg.Logger.IsLevelEnabled(logrus.TraceLevel) {
			sql, rows := fc()
			l.log.WithFields(logrus.Fields{"elapsed": elapsed, "rows": rows}).Trace(sql)
		}
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
