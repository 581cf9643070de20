package notify

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"mime"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/wneessen/go-mail"

	"github.com/chimesched/chime/tasks"
)

// Errors Notify returns.
var (
	ErrClosed    = errors.New("notify: mailer closed")
	ErrQueueFull = errors.New("notify: queue full, notice dropped")
)

// Mailer sends email through one SMTP server. It is safe for concurrent
// use. Its Send method satisfies tasks/email's Sender, and Notify satisfies
// tasks.Notifier.
type Mailer struct {
	cfg  Config
	tail LogTailer // nil: notices carry no log tail

	mu     sync.RWMutex // guards closed against sends on a closed queue
	closed bool
	queue  chan notice
	wg     sync.WaitGroup

	// stop ends in-flight deliveries and backoff waits when Close runs
	// out of time. It is rooted in Background because workers outlive
	// every caller's context by design.
	stop   context.Context
	cancel context.CancelFunc

	sent, failures, dropped atomic.Uint64
}

var _ tasks.Notifier = (*Mailer)(nil)

// New checks cfg and starts the workers; call Close when done. tail is
// where a queued notice (Notify) gets its job's last log lines; nil: none.
// cfg is copied; nil is the zero Config, which New refuses for want of a
// host.
func New(tail LogTailer, cfg *Config) (*Mailer, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	c = c.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	m := &Mailer{cfg: c, tail: tail, queue: make(chan notice, c.QueueSize)}
	m.stop, m.cancel = context.WithCancel(context.Background())
	for range c.Workers {
		m.wg.Go(m.work)
	}
	return m, nil
}

// Sent counts notices delivered.
func (m *Mailer) Sent() uint64 { return m.sent.Load() }

// Failures counts notices lost: given up after retries, or dropped.
func (m *Mailer) Failures() uint64 { return m.failures.Load() }

// Dropped counts notices refused because the queue was full (they are in
// Failures too).
func (m *Mailer) Dropped() uint64 { return m.dropped.Load() }

// Send delivers a plain-text message now. It satisfies tasks/email.Sender.
func (m *Mailer) Send(ctx context.Context, to []string, subject, body string) error {
	return m.SendMessage(ctx, Message{To: to, Subject: subject, Text: body})
}

// SendMessage delivers msg now, in one attempt bounded by ctx and
// Config.SendTimeout.
func (m *Mailer) SendMessage(ctx context.Context, msg Message) error {
	if len(msg.To) == 0 {
		return errors.New("notify: send: no recipients")
	}
	gm := mail.NewMsg()
	if err := gm.From(m.cfg.From); err != nil {
		return fmt.Errorf("notify: send: from %q: %w", m.cfg.From, err)
	}
	if err := gm.To(msg.To...); err != nil {
		return fmt.Errorf("notify: send: recipients: %w", err)
	}
	gm.Subject(msg.Subject)
	gm.SetDate()
	gm.SetMessageID()
	gm.SetUserAgent("chime")
	gm.SetBodyString(mail.TypeTextPlain, msg.Text)
	if msg.HTML != "" {
		gm.AddAlternativeString(mail.TypeTextHTML, msg.HTML)
	}
	for _, a := range msg.Attachments {
		ct := a.ContentType
		if ct == "" {
			ct = mime.TypeByExtension(filepath.Ext(a.Name))
		}
		if ct == "" {
			ct = "application/octet-stream"
		}
		gm.AttachReadSeeker(a.Name, bytes.NewReader(a.Data), mail.WithFileContentType(mail.ContentType(ct)))
	}

	// go-mail bounds the conversation with SendTimeout but looks at ctx
	// only while dialling; closing the connection when ctx ends makes a
	// hung server give up as soon as Close or the caller says so.
	var stops []func() bool
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	dial := func(dctx context.Context, network, addr string) (net.Conn, error) {
		var conn net.Conn
		var err error
		d := &net.Dialer{}
		if m.cfg.TLS == TLSImplicit {
			conn, err = (&tls.Dialer{NetDialer: d, Config: m.tlsConfig()}).DialContext(dctx, network, addr)
		} else {
			conn, err = d.DialContext(dctx, network, addr)
		}
		if err != nil {
			return nil, err
		}
		stops = append(stops, context.AfterFunc(ctx, func() { _ = conn.Close() }))
		return conn, nil
	}

	policy := mail.NoTLS
	if m.cfg.TLS == TLSStartTLS {
		policy = mail.TLSMandatory
	}
	opts := []mail.Option{
		mail.WithPort(m.cfg.Port),
		mail.WithTimeout(m.cfg.SendTimeout),
		mail.WithTLSPolicy(policy),
		mail.WithTLSConfig(m.tlsConfig()),
		mail.WithDialContextFunc(dial),
	}
	if m.cfg.Username != "" {
		opts = append(opts,
			mail.WithOpportunisticSMTPAuth(mail.SMTPAuthPlain, mail.SMTPAuthLogin),
			mail.WithUsername(m.cfg.Username),
			mail.WithPassword(m.cfg.Password))
	}
	client, err := mail.NewClient(m.cfg.Host, opts...)
	if err != nil {
		return fmt.Errorf("notify: smtp client: %w", err)
	}
	if err := client.DialAndSendWithContext(ctx, gm); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("notify: send via %s:%d: %w (%w)", m.cfg.Host, m.cfg.Port, ctx.Err(), err)
		}
		return fmt.Errorf("notify: send via %s:%d: %w", m.cfg.Host, m.cfg.Port, err)
	}
	return nil
}

func (m *Mailer) tlsConfig() *tls.Config {
	if m.cfg.TLSConfig != nil {
		return m.cfg.TLSConfig
	}
	return &tls.Config{ServerName: m.cfg.Host, MinVersion: tls.VersionTLS12}
}

// Notify queues a completion notice for job and returns at once. With no
// recipients it does nothing. When the queue is full the notice is dropped,
// logged and counted, and ErrQueueFull returned.
func (m *Mailer) Notify(_ context.Context, job *tasks.Job, r tasks.Result) error {
	if len(job.Notify.Emails) == 0 {
		job.Log().Warn("notify: the definition asks for email but lists no notify_emails")
		return nil
	}
	n := newNotice(job, r)
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return ErrClosed
	}
	select {
	case m.queue <- n:
		return nil
	default:
		m.dropped.Add(1)
		m.fail(n, ErrQueueFull)
		return ErrQueueFull
	}
}

// Close stops taking notices and waits for the queue to drain. If ctx ends
// first, deliveries in flight are cut off, what is left is counted as lost,
// and ctx's error is returned. Safe to call more than once.
func (m *Mailer) Close(ctx context.Context) error {
	m.mu.Lock()
	if !m.closed {
		m.closed = true
		close(m.queue)
	}
	m.mu.Unlock()

	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	defer m.cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		m.cancel()
		<-done
		return fmt.Errorf("notify: close: %w", ctx.Err())
	}
}

func (m *Mailer) work() {
	for n := range m.queue {
		m.deliver(n)
	}
}

func (m *Mailer) deliver(n notice) {
	msg := Message{
		To:          n.to,
		Subject:     n.subject(m.cfg.SubjectPrefix),
		Text:        n.text(m.logTail(n.id)),
		Attachments: n.attachments,
	}
	backoff := m.cfg.Backoff
	var err error
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(m.stop, m.cfg.SendTimeout)
		err = m.SendMessage(ctx, msg)
		cancel()
		if err == nil {
			m.sent.Add(1)
			m.logger(n).Debug("notify: completion email sent")
			return
		}
		if attempt >= m.cfg.Attempts || permanent(err) || !m.wait(backoff) {
			break
		}
		m.logger(n).WithError(err).Warnf("notify: completion email failed, retry %d of %d in %v",
			attempt, m.cfg.Attempts-1, backoff)
		backoff *= 2
	}
	m.fail(n, err)
}

// permanent reports a 5xx reply: the server has said no, not "later".
func permanent(err error) bool {
	var se *mail.SendError
	return errors.As(err, &se) && se.ErrorCode() >= 500
}

func (m *Mailer) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-m.stop.Done():
		return false
	}
}

func (m *Mailer) logTail(jobID int64) ([]string, error) {
	if m.tail == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(m.stop, m.cfg.SendTimeout)
	defer cancel()
	return m.tail.TailLogs(ctx, jobID, m.cfg.LogTailLines)
}

func (m *Mailer) logger(n notice) *logrus.Entry {
	return m.cfg.Logger.WithFields(logrus.Fields{"job_id": n.id, "schedule_id": n.scheduleID})
}

func (m *Mailer) fail(n notice, err error) {
	m.failures.Add(1)
	m.logger(n).WithError(err).WithField("to", n.to).Error("notify: completion email not sent")
	n.job.Log().WithError(err).Warn("notify: completion email not sent")
	if m.cfg.OnFailure != nil {
		m.cfg.OnFailure(n.id, err)
	}
}
