package app

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/configs"
	"github.com/chimesched/chime/internal/metrics"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/notify"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/tasks/email"
)

// settings keeps a node in step with the configurations table. Rows are
// written by the API (checked at the door) and by admins with plain SQL,
// so every read checks every row again: a bad row is logged with its key
// and reason, once per change, and ignored, and the value the node had
// stays. Nothing a row says can stop the node.
type settings struct {
	base *configs.Config // file, environment and flags: what rows apply to
	st   *store.Store
	log  *logrus.Logger

	mu      sync.Mutex
	current *configs.Config   // what the node runs with now
	warned  map[string]string // row name → the message last logged for it
	readErr bool              // the last read failed (logged once per outage)
}

func newSettings(base *configs.Config, st *store.Store, log *logrus.Logger) *settings {
	return &settings{base: base, st: st, log: log, current: base, warned: map[string]string{}}
}

// load reads the table and returns the configuration the rows make,
// logging each refused row.
func (s *settings) load(ctx context.Context) (*configs.Config, error) {
	rows, err := s.st.Admin().ListConfigurations(ctx)
	if err != nil {
		return nil, err
	}
	return s.apply(rows), nil
}

func (s *settings) apply(rows []models.Configuration) *configs.Config {
	m := make(map[string]string, len(rows))
	for _, r := range rows {
		m[strings.TrimSpace(r.Name)] = r.Value
	}
	next, refused := s.base.WithSettings(m)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(refused) > 0 {
		// A refused row keeps the value the node runs with, not the
		// file's: a typo in a live row must not undo the last good one.
		for _, e := range refused {
			if v, ok := s.current.Value(e.Key); ok && !configs.IsFileOnly(e.Key) {
				m[e.Key] = v
			} else {
				delete(m, e.Key)
			}
		}
		next, _ = s.base.WithSettings(m)
	}
	seen := map[string]bool{}
	for _, e := range refused {
		seen[e.Key] = true
		msg := e.Error()
		if s.warned[e.Key] == msg {
			continue
		}
		s.warned[e.Key] = msg
		s.log.WithFields(logrus.Fields{"key": e.Key, "reason": e.Reason}).
			Warnf("configurations row refused and ignored; the node keeps its current value: %s", msg)
	}
	for k := range s.warned {
		if !seen[k] {
			delete(s.warned, k)
		}
	}
	return next
}

// hooks apply live settings to a running node. A nil hook means the part
// is not running on this node (a scheduler-only node has no task engine).
type hooks struct {
	poolSize      func(int) error
	pollInterval  func(time.Duration) error
	retentionDays func(int) error
	smtp          func(configs.SMTP) error
	logLevel      func(string) error
}

// update applies next's live keys through h and logs the others as
// waiting for a restart. A hook that fails keeps the old value.
func (s *settings) update(next *configs.Config, h hooks) {
	s.mu.Lock()
	cur := s.current
	s.mu.Unlock()
	applied := *next
	change := func(key string, hook func() error, keep func()) {
		from, _ := cur.Value(key)
		to, _ := next.Value(key)
		if from == to {
			return
		}
		fields := logrus.Fields{"key": key, "from": configs.RedactValue(key, from), "to": configs.RedactValue(key, to)}
		if hook == nil {
			return
		}
		if err := hook(); err != nil {
			keep()
			s.log.WithFields(fields).WithError(err).Error("live setting not applied; the node keeps its current value")
			return
		}
		s.log.WithFields(fields).Info("live setting applied")
	}
	if h.poolSize != nil {
		change("taskengine.pool_size", func() error { return h.poolSize(next.TaskEngine.PoolSize) },
			func() { applied.TaskEngine.PoolSize = cur.TaskEngine.PoolSize })
	}
	if h.pollInterval != nil {
		change("taskengine.poll_interval", func() error { return h.pollInterval(next.TaskEngine.PollInterval.D()) },
			func() { applied.TaskEngine.PollInterval = cur.TaskEngine.PollInterval })
	}
	if h.retentionDays != nil {
		change("retention_days", func() error { return h.retentionDays(next.RetentionDays) },
			func() { applied.RetentionDays = cur.RetentionDays })
	}
	if h.logLevel != nil {
		change("log.level", func() error { return h.logLevel(next.Log.Level) },
			func() { applied.Log.Level = cur.Log.Level })
	}
	if h.smtp != nil && next.SMTP != cur.SMTP {
		if err := h.smtp(next.SMTP); err != nil {
			applied.SMTP = cur.SMTP
			s.log.WithError(err).WithField("smtp_host", next.SMTP.Host).Error("new smtp settings not applied; email keeps the previous ones")
		} else {
			s.log.WithField("smtp_host", next.SMTP.Host).Info("live setting applied: smtp")
		}
	}
	for _, key := range configs.Keys() {
		if configs.IsLive(key) {
			continue
		}
		from, _ := cur.Value(key)
		to, _ := next.Value(key)
		if from != to {
			s.log.WithFields(logrus.Fields{"key": key, "from": configs.RedactValue(key, from), "to": configs.RedactValue(key, to)}).
				Warn("configurations row changed a setting that takes effect at restart")
		}
	}
	s.mu.Lock()
	s.current = &applied
	s.mu.Unlock()
}

// watch re-reads the table every interval on clock until ctx ends.
func (s *settings) watch(ctx context.Context, clock clockwork.Clock, interval time.Duration, h hooks) {
	t := clock.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.Chan():
		}
		s.reload(ctx, h)
	}
}

func (s *settings) reload(ctx context.Context, h hooks) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	next, err := s.load(rctx)
	if err != nil {
		if ctx.Err() == nil && !s.readErr {
			s.log.WithError(err).Warn("cannot read the configurations table; keeping the current settings")
		}
		s.readErr = true
		return
	}
	s.readErr = false
	s.update(next, h)
}

// liveMailer is the node's email: the outbox sender's mailer and the email
// task's Sender. SMTP settings change at run time by swapping the mailer
// behind it; with no smtp.host, email is off as when none was configured.
type liveMailer struct {
	log  *logrus.Logger
	tail notify.LogTailer

	mu      sync.RWMutex
	m       *notify.Mailer
	retired sync.WaitGroup // mailers swapped out, draining their queues
}

var _ email.Sender = (*liveMailer)(nil)

func (l *liveMailer) get() *notify.Mailer {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.m
}

// Send implements email.Sender.
func (l *liveMailer) Send(ctx context.Context, to []string, subject, body string) error {
	m := l.get()
	if m == nil {
		return email.ErrNotConfigured
	}
	return m.Send(ctx, to, subject, body)
}

// set builds a mailer for c (none when c.Host is empty) and swaps it in.
// The old one drains its queue in the background. A c the mailer refuses
// leaves the current one in place.
func (l *liveMailer) set(c configs.SMTP) error {
	var m *notify.Mailer
	if c.Host != "" {
		var err error
		m, err = notify.New(l.tail, &notify.Config{
			Host: c.Host, Port: c.Port, Username: c.Username, Password: c.Password, From: c.From, TLS: c.TLS,
			Logger:    l.log,
			OnFailure: func(int64, error) { metrics.NotificationFailures.Inc() },
		})
		if err != nil {
			return fmt.Errorf("smtp: %w", err)
		}
	}
	l.mu.Lock()
	old := l.m
	l.m = m
	l.mu.Unlock()
	if old != nil {
		l.retired.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := old.Close(ctx); err != nil {
				l.log.WithError(err).Warn("previous smtp mailer closed before its queue drained")
			}
		})
	}
	return nil
}

// Close closes the current mailer and waits for the retired ones.
func (l *liveMailer) Close(ctx context.Context) error {
	l.mu.Lock()
	m := l.m
	l.m = nil
	l.mu.Unlock()
	var err error
	if m != nil {
		err = m.Close(ctx)
	}
	done := make(chan struct{})
	go func() { l.retired.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return err
}
