package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/mail"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/internal/startstop"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/tasks"
)

// OutboxStore is the notifications table as the Sender uses it; the store
// implements it.
type OutboxStore interface {
	ClaimNotifications(ctx context.Context, p *models.NotificationClaim) ([]models.NotificationDelivery, error)
	FinishNotification(ctx context.Context, r *models.NotificationResult) (bool, error)
	LogTailer
}

// SenderConfig configures a Sender; zero fields take the defaults.
type SenderConfig struct {
	NodeID string // recorded on each notice this node tries
	// Interval is how often the outbox is read for due notices (default 2s).
	Interval time.Duration
	// Settle is how long a notice waits after it was recorded before its
	// first try (default 2s), so the job's last log lines, written in
	// batches after the outcome, are in the email's log tail.
	Settle time.Duration
	// Attempts is how many tries a notice gets, the first included
	// (default 10); then it is failed with its last error.
	Attempts int
	// Backoff is the wait before the first retry, doubled after each,
	// jittered, capped by MaxBackoff (defaults 30s and 1h: ten tries span
	// about three hours of SMTP outage).
	Backoff    time.Duration
	MaxBackoff time.Duration
	// MaxAge fails notices recorded longer ago than this instead of sending
	// them (default 24h): the mail about a job of last week, sent the day
	// SMTP is finally set up, misleads more than it informs.
	MaxAge time.Duration
	// Batch is how many notices one read claims (default 10).
	Batch  int
	Logger logrus.FieldLogger
	Clock  clockwork.Clock
	// OnFailure is called for each notice given up, for metrics.
	OnFailure func(jobID int64, err error)
}

func (o SenderConfig) withDefaults() SenderConfig {
	if o.Interval <= 0 {
		o.Interval = 2 * time.Second
	}
	if o.Settle <= 0 {
		o.Settle = 2 * time.Second
	}
	if o.Attempts <= 0 {
		o.Attempts = 10
	}
	if o.Backoff <= 0 {
		o.Backoff = 30 * time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = time.Hour
	}
	if o.MaxAge <= 0 {
		o.MaxAge = 24 * time.Hour
	}
	if o.Batch <= 0 {
		o.Batch = 10
	}
	if o.Logger == nil {
		o.Logger = logrus.StandardLogger()
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	return o
}

// Sender mails the completion notices of the notifications table (the
// outbox) through a Mailer. Every node with SMTP configured runs one; each
// notice is claimed by one node at a time (see store.ClaimNotifications),
// rendered when it is sent — after its job is final and its log written —
// and tried until sent, refused for good (a 5xx reply, bad recipients), or
// out of attempts. A notice whose sender dies mid-try is tried again by
// any node once the claim's lease runs out, so delivery is at least once.
type Sender struct {
	mailer func() *Mailer
	st     OutboxStore
	cfg    SenderConfig
	wake   chan struct{}
	startstop.Base
}

// NewSender returns a Sender of st's notices through whatever mailer
// returns at each pass, so SMTP settings changed while the node runs apply
// to the next notice (a fixed mailer m: func() *Mailer { return m }).
// While mailer returns nil (email off), notices stay in the outbox for a
// node, or a later setting, that can send them. Start runs it. cfg is
// copied; nil takes every default.
func NewSender(st OutboxStore, mailer func() *Mailer, cfg *SenderConfig) (*Sender, error) {
	if st == nil || mailer == nil {
		return nil, errors.New("notify: NewSender: a store and a mailer are required")
	}
	var c SenderConfig
	if cfg != nil {
		c = *cfg
	}
	return &Sender{mailer: mailer, st: st, cfg: c.withDefaults(), wake: make(chan struct{}, 1)}, nil
}

// Start runs the sender until Stop. Only ctx's values are kept: a notice
// in flight when the serve context ends still gets Stop's grace.
func (s *Sender) Start(ctx context.Context) error {
	ctx, finished, ok := s.StartInit(context.WithoutCancel(ctx))
	if !ok {
		return nil
	}
	go func() {
		defer finished()
		s.run(ctx)
	}()
	return nil
}

// Wake makes the sender read the outbox now.
func (s *Sender) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Stop ends the sender and waits for the try in flight, which Stop's ctx
// may cut off; a notice cut off is tried again at the next start (on any
// node). Safe to call more than once, and before Start.
func (s *Sender) Stop(ctx context.Context) error {
	if err := s.Base.Stop(ctx); err != nil {
		return fmt.Errorf("notify: sender %w", err)
	}
	return nil
}

func (s *Sender) run(ctx context.Context) {
	for {
		n := s.pass(ctx)
		if ctx.Err() != nil {
			return
		}
		if n >= s.cfg.Batch {
			continue // more may be due
		}
		t := s.cfg.Clock.NewTimer(s.cfg.Interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.wake:
			t.Stop()
		case <-t.Chan():
		}
	}
}

// pass claims due notices and tries each; it returns how many it claimed.
func (s *Sender) pass(ctx context.Context) int {
	m := s.mailer()
	if m == nil {
		return 0
	}
	ds, err := s.st.ClaimNotifications(ctx, &models.NotificationClaim{
		NodeID: s.cfg.NodeID, Limit: s.cfg.Batch, Settle: s.cfg.Settle, Lease: lease(m), MaxAge: s.cfg.MaxAge,
	})
	if err != nil {
		if ctx.Err() == nil {
			s.cfg.Logger.WithError(err).Warn("notify: reading the outbox failed; retrying")
		}
		return 0
	}
	for i := range ds {
		s.try(ctx, m, &ds[i])
	}
	return len(ds)
}

// lease outlasts one try: reading the log tail and one SMTP conversation,
// each bounded by the mailer's SendTimeout.
func lease(m *Mailer) time.Duration { return 2*m.cfg.SendTimeout + 30*time.Second }

// try sends one claimed notice and records how it went.
func (s *Sender) try(ctx context.Context, m *Mailer, d *models.NotificationDelivery) {
	log := s.cfg.Logger.WithFields(logrus.Fields{"job_id": d.JobID, "notification_id": d.ID, "attempt": d.Attempts})
	res := &models.NotificationResult{ID: d.ID, JobID: d.JobID, Attempts: d.Attempts}
	if d.RunID != nil {
		res.JobID = 0 // a run's notice: there is no job whose log tells the try
	}
	err := s.send(ctx, m, d)
	switch {
	case err == nil:
		res.Sent = true
		res.JobLog = "notify: completion email sent to " + d.Recipients
	case ctx.Err() != nil:
		// Shutdown cut the try off: it is not the notice's fault, try it
		// again soon, on whichever node is up.
		res.Error, res.RetryIn = "interrupted: the node stopped during the try: "+err.Error(), time.Millisecond
	case d.Attempts >= s.cfg.Attempts || isPermanent(err):
		res.Error = err.Error()
		res.JobLog = fmt.Sprintf("notify: completion email not sent after %d attempts: %v", d.Attempts, err)
	default:
		res.Error, res.RetryIn = err.Error(), s.backoff(d.Attempts)
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	mine, ferr := s.st.FinishNotification(fctx, res)
	switch {
	case ferr != nil:
		// The claim's lease runs out and the notice is tried again: at worst
		// a second email, never none.
		log.WithError(ferr).Error("notify: recording the try failed")
	case !mine:
		log.Warn("notify: the notice was claimed by another node while this one tried it")
	case res.Sent:
		log.Debug("notify: completion email sent")
	case res.RetryIn > 0:
		log.WithError(err).Warnf("notify: completion email failed; retry in %v", res.RetryIn.Round(time.Millisecond))
	default:
		log.WithError(err).WithField("to", d.Recipients).Error("notify: completion email not sent")
		m.failures.Add(1)
		if s.cfg.OnFailure != nil {
			s.cfg.OnFailure(d.JobID, err)
		}
	}
}

// errPermanent marks a notice that no retry can send.
var errPermanent = errors.New("permanent")

func isPermanent(err error) bool { return errors.Is(err, errPermanent) || permanent(err) }

func (s *Sender) send(ctx context.Context, m *Mailer, d *models.NotificationDelivery) error {
	if d.RunID != nil {
		return s.sendRun(ctx, m, d)
	}
	if d.Job == nil {
		return fmt.Errorf("%w: job %d no longer exists", errPermanent, d.JobID)
	}
	to, err := recipients(d.Recipients)
	if err != nil {
		return err
	}
	n := deliveryNotice(d, to)
	if len(d.Attachments) > 0 {
		var as []models.NotificationAttachment
		if err := json.Unmarshal(d.Attachments, &as); err != nil {
			return fmt.Errorf("%w: attachments unreadable: %w", errPermanent, err)
		}
		for _, a := range as {
			n.attachments = append(n.attachments, tasks.Attachment{Name: a.Name, ContentType: a.ContentType, Data: a.Data})
		}
	}
	tctx, cancel := context.WithTimeout(ctx, m.cfg.SendTimeout)
	tail, tailErr := s.st.TailLogs(tctx, d.JobID, m.cfg.LogTailLines)
	cancel()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	msg := Message{To: n.to, Subject: n.subject(m.cfg.SubjectPrefix), Text: n.text(tail, tailErr), Attachments: n.attachments}
	sctx, cancel := context.WithTimeout(ctx, m.cfg.SendTimeout)
	defer cancel()
	if err := m.SendMessage(sctx, msg); err != nil {
		return err
	}
	m.sent.Add(1)
	return nil
}

// recipients parses notifications.recipients, which an admin's SQL may
// have filled with anything: a bad address fails the notice, naming it.
func recipients(s string) ([]string, error) {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		if _, err := mail.ParseAddress(a); err != nil {
			return nil, fmt.Errorf("%w: recipient %q is not an email address: %w", errPermanent, a, err)
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no recipients", errPermanent)
	}
	return out, nil
}

// backoff is the wait after failed try number attempt: Backoff doubled
// per earlier retry, within ±20%, capped. attempt comes from
// notifications.attempts, which SQL may set to anything: below 1 it counts
// as the first (a negative shift panics).
func (s *Sender) backoff(attempt int) time.Duration {
	d := s.cfg.Backoff << min(max(attempt-1, 0), 20)
	if d <= 0 || d > s.cfg.MaxBackoff {
		d = s.cfg.MaxBackoff
	}
	d = time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
	return max(min(d, s.cfg.MaxBackoff), time.Millisecond)
}

// deliveryNotice renders a claimed notice the way Notify renders a queued
// one, from the job's row as it is now: final, with its result and error.
func deliveryNotice(d *models.NotificationDelivery, to []string) notice {
	j := d.Job
	n := notice{
		id:          j.ID,
		definition:  d.DefinitionName,
		schedule:    d.ScheduleName,
		taskType:    d.TaskType,
		node:        j.NodeID,
		scheduledAt: j.ScheduledAt,
		attempt:     d.Attempt,
		max:         d.MaxAttempts,
		to:          to,
		result:      tasks.Result{Status: string(d.JobStatus)},
	}
	if j.ScheduleID != nil {
		n.scheduleID = *j.ScheduleID
	}
	if j.Error != nil && *j.Error != "" {
		n.result.Err = errors.New(*j.Error)
	}
	if j.Result != nil {
		n.result.Output = *j.Result
	}
	if j.StartedAt != nil {
		n.result.StartedAt = *j.StartedAt
	}
	if j.FinishedAt != nil {
		n.result.FinishedAt = *j.FinishedAt
	}
	return n
}

// sendRun sends a workflow run's notice (docs/workflows.md): its final
// state, reason and each step's state, from the rows as they are now.
func (s *Sender) sendRun(ctx context.Context, m *Mailer, d *models.NotificationDelivery) error {
	if d.Run == nil {
		return fmt.Errorf("%w: run %d no longer exists", errPermanent, *d.RunID)
	}
	to, err := recipients(d.Recipients)
	if err != nil {
		return err
	}
	msg := Message{To: to, Subject: runSubject(d, m.cfg.SubjectPrefix), Text: runText(d)}
	sctx, cancel := context.WithTimeout(ctx, m.cfg.SendTimeout)
	defer cancel()
	if err := m.SendMessage(sctx, msg); err != nil {
		return err
	}
	m.sent.Add(1)
	return nil
}
