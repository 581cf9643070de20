package alert

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/metrics"
	"github.com/chimesched/chime/internal/startstop"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/notify"
)

// DispatcherConfig configures a Dispatcher; zero fields take the defaults.
type DispatcherConfig struct {
	NodeID   string
	Interval time.Duration // how often the outbox is read (default 2s)
	// Attempts is how many tries an alert gets (default 10); with Backoff
	// 10s doubled up to MaxBackoff 10m, a receiver down for about 50
	// minutes still gets it, then it is failed with its last error.
	Attempts   int
	Backoff    time.Duration
	MaxBackoff time.Duration
	// InFlight bounds the deliveries under way at once (default 16); each
	// runs on its own goroutine, so a receiver that answers slowly delays
	// only its own alerts.
	InFlight int
	// Mailer returns the SMTP mailer of the email channels, nil while
	// email is off (their alerts then wait, as notices do).
	Mailer func() *notify.Mailer
	// SelfHosts are host:port pairs chime itself listens on: a webhook
	// aimed at one is refused (an alert must not call chime's own API).
	SelfHosts []string
	Logger    logrus.FieldLogger
	Clock     clockwork.Clock
}

func (c DispatcherConfig) withDefaults() DispatcherConfig {
	if c.Interval <= 0 {
		c.Interval = 2 * time.Second
	}
	if c.Attempts <= 0 {
		c.Attempts = 10
	}
	if c.Backoff <= 0 {
		c.Backoff = 10 * time.Second
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 10 * time.Minute
	}
	if c.InFlight <= 0 {
		c.InFlight = 16
	}
	if c.Mailer == nil {
		c.Mailer = func() *notify.Mailer { return nil }
	}
	if c.Logger == nil {
		c.Logger = logrus.StandardLogger()
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	return c
}

// Dispatcher delivers the alerts outbox. Every node runs one.
type Dispatcher struct {
	st   chimedb.AlertStore
	cfg  DispatcherConfig
	wake chan struct{}
	slot chan struct{}
	wg   sync.WaitGroup
	startstop.Base
}

// NewDispatcher returns a Dispatcher of st's alerts; cfg is copied, nil
// takes every default.
func NewDispatcher(st chimedb.AlertStore, cfg *DispatcherConfig) *Dispatcher {
	var c DispatcherConfig
	if cfg != nil {
		c = *cfg
	}
	c = c.withDefaults()
	return &Dispatcher{st: st, cfg: c, wake: make(chan struct{}, 1), slot: make(chan struct{}, c.InFlight)}
}

// Start runs the dispatcher until Stop.
func (d *Dispatcher) Start(ctx context.Context) error {
	ctx, finished, ok := d.StartInit(context.WithoutCancel(ctx))
	if !ok {
		return nil
	}
	go func() {
		defer finished()
		d.run(ctx)
		d.wg.Wait()
	}()
	return nil
}

// Stop ends the dispatcher; deliveries under way get ctx's time, and one
// cut off is tried again (by any node) once its claim runs out.
func (d *Dispatcher) Stop(ctx context.Context) error {
	if err := d.Base.Stop(ctx); err != nil {
		return fmt.Errorf("alert: dispatcher %w", err)
	}
	return nil
}

// Wake makes the dispatcher read the outbox now.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *Dispatcher) run(ctx context.Context) {
	for {
		d.Pass(ctx)
		t := d.cfg.Clock.NewTimer(d.cfg.Interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-d.wake:
			t.Stop()
		case <-t.Chan():
		}
	}
}

// Pass claims as many due alerts as there are free delivery slots and
// starts their deliveries; it returns how many it started. Tests call it
// (and Wait) to deliver on their own schedule.
func (d *Dispatcher) Pass(ctx context.Context) int {
	free := d.cfg.InFlight - len(d.slot)
	if free <= 0 {
		return 0
	}
	chans, err := d.st.ListAlertChannels(ctx)
	if err != nil {
		if ctx.Err() == nil {
			d.cfg.Logger.WithError(err).Warn("alert: reading the channels failed; retrying")
		}
		return 0
	}
	byID := make(map[int64]models.AlertChannel, len(chans))
	maxTimeout := 10
	for _, c := range chans {
		byID[c.ID] = c
		maxTimeout = max(maxTimeout, min(c.TimeoutSeconds, models.MaxAlertTimeoutSeconds))
	}
	as, err := d.st.ClaimAlerts(ctx, &models.NotificationClaim{NodeID: d.cfg.NodeID, Limit: free,
		Lease: time.Duration(maxTimeout)*time.Second + 30*time.Second})
	if err != nil {
		if ctx.Err() == nil {
			d.cfg.Logger.WithError(err).Warn("alert: reading the outbox failed; retrying")
		}
		return 0
	}
	for i := range as {
		a := as[i]
		c, ok := byID[a.ChannelID]
		d.slot <- struct{}{}
		d.wg.Add(1)
		go func() {
			defer func() { <-d.slot; d.wg.Done() }()
			var cp *models.AlertChannel
			if ok {
				cp = &c
			}
			d.try(ctx, &a, cp)
		}()
	}
	return len(as)
}

// Wait waits for the deliveries under way.
func (d *Dispatcher) Wait() { d.wg.Wait() }

// errPermanent marks a try no retry can fix.
var errPermanent = errors.New("permanent")

func (d *Dispatcher) try(ctx context.Context, a *models.Alert, c *models.AlertChannel) {
	name := "unknown"
	if c != nil {
		name = c.Name
	}
	log := d.cfg.Logger.WithFields(logrus.Fields{"alert_id": a.ID, "channel": name, "attempt": a.Attempts})
	res := &models.NotificationResult{ID: a.ID, Attempts: a.Attempts}
	var err error
	switch {
	case c == nil:
		err = fmt.Errorf("%w: channel %d does not exist", errPermanent, a.ChannelID)
	case c.Invalid != "":
		err = fmt.Errorf("%w: channel %s is invalid: %s", errPermanent, c.Name, c.Invalid)
	case !c.Enabled:
		err = fmt.Errorf("%w: channel %s is disabled", errPermanent, c.Name)
	default:
		err = d.deliver(ctx, c, a)
	}
	switch {
	case err == nil:
		res.Sent = true
	case ctx.Err() != nil:
		res.Error, res.RetryIn = "interrupted: the node stopped during the try: "+err.Error(), time.Millisecond
	case a.Attempts >= d.cfg.Attempts || errors.Is(err, errPermanent):
		res.Error = err.Error()
	default:
		res.Error, res.RetryIn = err.Error(), d.backoff(a.Attempts)
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	mine, ferr := d.st.FinishAlert(fctx, res)
	switch {
	case ferr != nil:
		log.WithError(ferr).Error("alert: recording the try failed; it will be tried again")
	case !mine:
		log.Warn("alert: the alert was claimed by another node while this one tried it")
	case res.Sent:
		metrics.AlertsSent.WithLabelValues(name).Inc()
		log.Debug("alert: sent")
	case res.RetryIn > 0:
		log.WithError(err).Warnf("alert: delivery failed; retry in %v", res.RetryIn.Round(time.Millisecond))
	default:
		metrics.AlertsFailed.WithLabelValues(name).Inc()
		log.WithError(err).Error("alert: not delivered, given up")
	}
}

func (d *Dispatcher) backoff(attempt int) time.Duration {
	b := d.cfg.Backoff << min(max(attempt-1, 0), 20)
	if b <= 0 || b > d.cfg.MaxBackoff {
		b = d.cfg.MaxBackoff
	}
	return max(time.Duration(float64(b)*(0.8+0.4*rand.Float64())), time.Millisecond)
}

// deliver sends alert a through c: the payload as recorded, with the
// row's id and suppressed count filled in.
func (d *Dispatcher) deliver(ctx context.Context, c *models.AlertChannel, a *models.Alert) error {
	var p Payload
	if err := json.Unmarshal(a.Payload, &p); err != nil {
		return fmt.Errorf("%w: payload unreadable: %w", errPermanent, err)
	}
	p.AlertID, p.Suppressed, p.ID = a.ID, a.Suppressed, a.DedupeKey
	return d.Send(ctx, c, &p)
}

// Send delivers p through c now, once: what the dispatcher does for each
// try, and what `chime alert test` does.
func (d *Dispatcher) Send(ctx context.Context, c *models.AlertChannel, p *Payload) error {
	switch c.Kind {
	case models.ChannelEmail:
		m := d.cfg.Mailer()
		if m == nil {
			return errors.New("email is not set up on this node (smtp: in chime.yaml)")
		}
		var to []string
		for _, r := range strings.Split(c.Recipients, ",") {
			if r = strings.TrimSpace(r); r != "" {
				to = append(to, r)
			}
		}
		sctx, cancel := context.WithTimeout(ctx, time.Duration(max(c.TimeoutSeconds, 1))*time.Second)
		defer cancel()
		return m.SendMessage(sctx, notify.Message{To: to, Subject: emailSubject(p), Text: emailText(p)})
	case models.ChannelWebhook:
		body, err := json.Marshal(p)
		if err != nil {
			return fmt.Errorf("%w: %w", errPermanent, err)
		}
		return d.post(ctx, c, body, true, p.ID)
	case models.ChannelSlack:
		body, err := json.Marshal(map[string]string{"text": slackText(p)})
		if err != nil {
			return fmt.Errorf("%w: %w", errPermanent, err)
		}
		return d.post(ctx, c, body, false, p.ID)
	}
	return fmt.Errorf("%w: kind %q", errPermanent, c.Kind)
}

// maxResponseBytes is how much of a receiver's answer is read: enough for
// an error message, never a 100 MB body.
const maxResponseBytes = 64 << 10

var errRedirect = errors.New("redirect refused: a webhook must answer itself, not send chime elsewhere")

func (d *Dispatcher) post(ctx context.Context, c *models.AlertChannel, body []byte, sign bool, id string) error {
	if err := models.CheckURL(c.URL); err != nil {
		return fmt.Errorf("%w: %w", errPermanent, err)
	}
	u, _ := url.Parse(c.URL)
	if d.isSelf(u) {
		return fmt.Errorf("%w: url: points at chime itself", errPermanent)
	}
	headers, err := c.HeaderMap()
	if err != nil {
		return fmt.Errorf("%w: %w", errPermanent, err)
	}
	timeout := time.Duration(min(max(c.TimeoutSeconds, 1), models.MaxAlertTimeoutSeconds)) * time.Second
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: url: not a URL", errPermanent)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "chime-alerts/1")
	req.Header.Set("X-Chime-Alert-Id", id)
	if sign {
		ts := d.cfg.Clock.Now().Unix()
		req.Header.Set("X-Chime-Timestamp", strconv.FormatInt(ts, 10))
		if c.SigningKey != "" {
			req.Header.Set("X-Chime-Signature", Sign([]byte(c.SigningKey), ts, body))
		}
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		// url.Error repeats the URL, which may hold a token: keep the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if errors.Is(err, errRedirect) {
			return fmt.Errorf("%w: %w", errPermanent, err)
		}
		return fmt.Errorf("POST to channel %s: %w", c.Name, err)
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBytes))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	err = fmt.Errorf("channel %s answered %s: %s", c.Name, resp.Status, strings.ToValidUTF8(strings.TrimSpace(string(snippet)), "?"))
	if resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != 408 && resp.StatusCode != 429 {
		return fmt.Errorf("%w: %w", errPermanent, err)
	}
	return err
}

// isSelf reports whether u names a host:port chime listens on.
func (d *Dispatcher) isSelf(u *url.URL) bool {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	for _, s := range d.cfg.SelfHosts {
		h, p, err := net.SplitHostPort(s)
		if err != nil || p != port {
			continue
		}
		if strings.EqualFold(h, u.Hostname()) || ((h == "" || h == "0.0.0.0" || h == "::") && isLoopbackName(u.Hostname())) ||
			(isLoopbackName(h) && isLoopbackName(u.Hostname())) {
			return true
		}
	}
	return false
}

func isLoopbackName(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// httpClient follows no redirect (a loop, or a hop to somewhere the admin
// did not name) and shares connections between deliveries.
var httpClient = &http.Client{
	Transport: func() http.RoundTripper {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 4
		t.ResponseHeaderTimeout = time.Duration(models.MaxAlertTimeoutSeconds) * time.Second
		return t
	}(),
	CheckRedirect: func(*http.Request, []*http.Request) error { return errRedirect },
}
