package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/startstop"
)

// leaseStore is what an Elector needs from the database.
type leaseStore = chimedb.LeaseStore

// ElectorConfig configures an Elector.
type ElectorConfig struct {
	// Name is the lease row, e.g. chimedb.SchedulerLease. Required.
	Name string
	// Holder is this node's id. Required.
	Holder string
	// TTL is the lease's lifetime from each renewal, in database time.
	TTL time.Duration
	// Renew is how often the lease is renewed, or a standby tries to take it.
	Renew time.Duration
	// Margin is how long before the lease can expire the holder stops
	// leading. Must be less than TTL.
	Margin time.Duration
	// Timeout bounds one renewal call.
	Timeout time.Duration
	Clock   clockwork.Clock
	Logger  logrus.FieldLogger
}

// Elector holds one lease for this node, or stands by for it. It is the
// schedule engine's Leadership, and cheap to ask: no call touches the
// database except the renewal loop.
//
// Leadership is judged twice. The database decides who may take the lease
// (expires_at against its own clock). The holder decides, on its own
// monotonic clock, when to stop: at the start of the renewal request that
// last succeeded, plus TTL, minus Margin. The database set expires_at to its
// now + TTL when it executed that request, which was after the request
// started, so the holder always stops at least Margin before any other node
// can take the lease, whatever the nodes' wall clocks say.
//
// It is a startstop.Service: Start runs the renewal loop until Stop or
// Start's ctx ends, and a stopped elector starts again.
type Elector struct {
	cfg ElectorConfig
	st  leaseStore
	log logrus.FieldLogger

	startstop.Base
	mu       sync.Mutex
	held     bool      // the last renewal succeeded
	until    time.Time // on cfg.Clock: lead until then
	leading  bool      // the state last published to onChange
	onChange []func(bool)
	failures int    // consecutive failed renewals, for the log
	stopping bool   // the run has ended: losing the lead is not worth a warning
	release  bool   // the last run ended holding the lease: Stop gives it back
	warned   string // the holder and expiry last reported as no live node's (the renewal loop's own)
}

// NewElector returns an elector for one lease; it does nothing until Start.
// A nil cfg is refused like an incomplete one: Name, Holder, TTL and Renew
// have no defaults.
func NewElector(st leaseStore, cfg *ElectorConfig) (*Elector, error) {
	if st == nil {
		return nil, errors.New("cluster: NewElector: nil store")
	}
	var c ElectorConfig
	if cfg != nil {
		c = *cfg
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	if c.Logger == nil {
		c.Logger = logrus.StandardLogger()
	}
	if c.Timeout <= 0 {
		c.Timeout = max(c.TTL/2, time.Second)
	}
	return &Elector{cfg: c, st: st, log: c.Logger.WithField("lease", c.Name)}, nil
}

func (c *ElectorConfig) validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("cluster: elector %q: "+format, append([]any{c.Name}, args...)...))
	}
	if c.Name == "" {
		bad("Name is required")
	}
	if c.Holder == "" {
		bad("Holder is required")
	}
	if c.TTL <= 0 || c.Renew <= 0 {
		bad("TTL (%s) and Renew (%s) must be positive", c.TTL, c.Renew)
	}
	if c.Margin < 0 || c.Margin >= c.TTL {
		bad("Margin (%s) must be at least 0 and shorter than TTL (%s)", c.Margin, c.TTL)
	}
	return errors.Join(errs...)
}

// Leading reports whether this node holds the lease now. It turns false by
// itself when the deadline passes without a renewal, even while the renewal
// is still waiting for the database.
func (e *Elector) Leading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.held && e.cfg.Clock.Now().Before(e.until)
}

// OnChange registers fn to be called with the new state each time this node
// gains or loses the lease. Calls come from the elector's goroutine, in
// order, and must not block; register before Start to see every change.
func (e *Elector) OnChange(fn func(leading bool)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.onChange = append(e.onChange, fn)
}

// Start runs the renewal loop until Stop or ctx ends. Calling it again
// while running does nothing; a stopped elector, whichever way it
// stopped, starts afresh.
func (e *Elector) Start(ctx context.Context) error {
	ctx, finished, ok := e.StartInit(ctx)
	if !ok {
		return nil
	}
	e.mu.Lock()
	e.stopping = false
	e.mu.Unlock()
	go func() {
		defer finished()
		e.run(ctx)
		e.standDown()
	}()
	return nil
}

// standDown ends a run: the node leads no more, and says so at once. The
// lease row is left as it is: Stop gives it back, and a run that ended
// with its context (a crash, as far as the others can tell) lets it
// expire.
func (e *Elector) standDown() {
	e.mu.Lock()
	e.release = e.held
	e.held = false
	e.stopping = true
	e.mu.Unlock()
	e.publish()
}

// Stop ends the loop and gives the lease back if this node held it when
// the loop ended, so a standby takes over at once. It is safe to call more
// than once, or before Start.
func (e *Elector) Stop(ctx context.Context) error {
	stopped, _ := e.StopInit()
	if err := startstop.Wait(ctx, stopped); err != nil {
		return fmt.Errorf("stop %s elector: %w", e.cfg.Name, err)
	}
	e.mu.Lock()
	release := e.release
	e.release = false
	e.mu.Unlock()
	if !release {
		return nil
	}
	if err := e.st.ReleaseLease(ctx, e.cfg.Name, e.cfg.Holder); err != nil {
		return fmt.Errorf("stop %s elector: %w; a standby takes over when it expires", e.cfg.Name, err)
	}
	e.log.Info("released the lease")
	return nil
}

func (e *Elector) run(ctx context.Context) {
	for {
		start := e.cfg.Clock.Now()
		e.renew(ctx)
		// Renew every Renew from start to start, not Renew after a slow
		// call returns, so a loaded database does not stretch the period.
		wait := max(e.cfg.Renew-e.cfg.Clock.Since(start), 0)
		e.mu.Lock()
		if e.held {
			// Wake at the deadline too, so OnChange hears of a lost lease
			// on time even when renewals keep failing.
			wait = min(wait, max(e.until.Sub(e.cfg.Clock.Now()), 0))
		}
		e.mu.Unlock()
		timer := e.cfg.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.Chan():
		}
	}
}

// renew makes one attempt to take or keep the lease, then publishes any
// change. It is the loop's body, kept apart so tests can drive it.
func (e *Elector) renew(ctx context.Context) {
	start := e.cfg.Clock.Now()
	rctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	try, err := e.st.TryAcquireLease(rctx, e.cfg.Name, e.cfg.Holder, e.cfg.TTL)
	cancel()
	held := err == nil && try.Held
	e.mu.Lock()
	if err == nil {
		e.failures = 0
	}
	switch {
	case err != nil:
		// Keep the old deadline: the lease may or may not have been renewed,
		// and only the deadline we know is safe. Log the first failure and
		// every tenth: an outage should read clearly, not flood the log.
		e.failures++
		if ctx.Err() == nil && (e.failures == 1 || e.failures%10 == 0) {
			e.log.WithError(err).WithField("failures", e.failures).Warn("could not renew or acquire the lease; retrying every heartbeat")
		}
	case held:
		e.held, e.until = true, start.Add(e.cfg.TTL-e.cfg.Margin)
	default:
		e.held = false
	}
	e.mu.Unlock()
	switch {
	case held:
		e.log.WithField("expires_at", try.ExpiresAt).Trace("lease renewed")
	case err == nil:
		e.judge(try)
	}
	e.publish()
}

// judge logs what a standby found wrong with the lease row: an expiry it
// cut (see chimedb.MaxLeaseTTLs), and a holder that is no live node.
// Each is said once per holder and expiry, not at every renewal.
func (e *Elector) judge(try *chimedb.LeaseTry) {
	log := e.log.WithFields(logrus.Fields{"holder": try.Holder, "expires_at": try.ExpiresAt})
	if try.Cut != "" {
		log.WithField("was", try.Cut).Warnf("the lease's expires_at lay more than %d TTLs (%s each) past the database's clock; "+
			"cut to the database's now + TTL: a node takes the lease over then, unless its holder renews it", chimedb.MaxLeaseTTLs, e.cfg.TTL)
	}
	key := try.Holder + "\x00" + try.ExpiresAt.String()
	if try.Holder == "" || try.HolderLive || key == e.warned {
		if try.HolderLive {
			e.warned = ""
		}
		return
	}
	e.warned = key
	log.Warn("the lease is held by no live node (none of that id in nodes, or it is dead or stopped); " +
		"it expires at expires_at by the database's clock, and a node takes it over then")
}

// publish calls onChange if Leading differs from the last state published.
func (e *Elector) publish() {
	now := e.Leading()
	e.mu.Lock()
	if now == e.leading {
		e.mu.Unlock()
		return
	}
	e.leading = now
	fns := slices.Clone(e.onChange)
	stopping := e.stopping
	e.mu.Unlock()
	switch {
	case now:
		e.log.WithField("node_id", e.cfg.Holder).Info("acquired the lease; this node leads")
	case stopping:
		e.log.WithField("node_id", e.cfg.Holder).Info("giving up the lease: this node is stopping")
	default:
		e.log.WithField("node_id", e.cfg.Holder).Warn("no longer holds the lease; standing by")
	}
	for _, fn := range fns {
		fn(now)
	}
}
