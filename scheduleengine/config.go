package scheduleengine

import (
	"errors"
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"
)

// Config configures an Engine. Zero fields take the default named in their
// comment (see WithDefaults).
type Config struct {
	// NodeID names this process as the lease holder. Required.
	NodeID string
	// SyncInterval is how often schedules changed by plain SQL are picked up
	// (default 2s).
	SyncInterval time.Duration
	// FullSyncInterval is how often every schedule is re-read, which is how
	// deleted rows and changes missed by the updated_at scan are noticed
	// (default 30s).
	FullSyncInterval time.Duration
	// MisfireThreshold is how late a fire may be and still count as on time;
	// later fires are misfires handled by the schedule's misfire_policy
	// (default 5s).
	MisfireThreshold time.Duration
	// FireAllCap is the most missed fires written per schedule and catch-up
	// under misfire_policy fire_all (default 100).
	FireAllCap int
	// BatchSize is the most fires written in one transaction (default 500).
	BatchSize int
	// BatchWait is how long a lone fire handed over by gocron waits for
	// others before it is written, so schedules due microseconds apart share
	// a transaction (default 2ms). A herd due in the same instant does not
	// wait: the first hand-over sweeps every schedule due (doc.go).
	BatchWait time.Duration
	// LeaseName is the row in leases that elects the firing node
	// (default "scheduler").
	LeaseName string
	// LeaseTTL is how long a lease lasts without renewal; a standby takes
	// over within about this long after the leader dies (default 15s). The
	// leader renews it every LeaseTTL/3.
	LeaseTTL time.Duration
	// Leadership, when set, decides whether this engine fires: in a cluster
	// it is the scheduler lease judged on the database's clock
	// (cluster.Elector). The engine then never writes the lease row itself,
	// and LeaseName is unused. Nil: the engine keeps its own lease row on its
	// own clock, as a standalone engine (and its tests) do.
	Leadership Leadership
	// RetryDelay is the pause after a failed database round trip before the
	// engine tries again (default 1s).
	RetryDelay time.Duration
	// OnFire, if set, is called after a commit that wrote at least one job,
	// so the local task engine can claim at once instead of at its next
	// poll. It must not block: app wires a non-blocking channel send here.
	OnFire func()
	// Clock is the engine's only source of time (default: the real clock).
	Clock clockwork.Clock
	// Logger receives the engine's lines (default: logrus's standard logger).
	Logger logrus.FieldLogger
}

// Leadership says whether this node may fire now, and tells when that
// changes. OnChange callbacks must not block.
type Leadership interface {
	Leading() bool
	OnChange(func(leading bool))
}

// WithDefaults returns a copy of c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.SyncInterval == 0 {
		c.SyncInterval = 2 * time.Second
	}
	if c.FullSyncInterval == 0 {
		c.FullSyncInterval = 30 * time.Second
	}
	if c.MisfireThreshold == 0 {
		c.MisfireThreshold = 5 * time.Second
	}
	if c.FireAllCap == 0 {
		c.FireAllCap = 100
	}
	if c.BatchSize == 0 {
		c.BatchSize = 500
	}
	if c.BatchWait == 0 {
		c.BatchWait = 2 * time.Millisecond
	}
	if c.LeaseName == "" {
		c.LeaseName = "scheduler"
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = 15 * time.Second
	}
	if c.RetryDelay == 0 {
		c.RetryDelay = time.Second
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	if c.Logger == nil {
		c.Logger = logrus.StandardLogger()
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.NodeID == "" {
		bad("scheduleengine: NodeID must not be empty")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"SyncInterval", c.SyncInterval}, {"FullSyncInterval", c.FullSyncInterval},
		{"MisfireThreshold", c.MisfireThreshold}, {"LeaseTTL", c.LeaseTTL}, {"RetryDelay", c.RetryDelay},
		{"BatchWait", c.BatchWait},
	} {
		if d.v < 0 {
			bad("scheduleengine: %s must be positive, got %s", d.name, d.v)
		}
	}
	if c.FireAllCap < 0 {
		bad("scheduleengine: FireAllCap must be at least 1, got %d", c.FireAllCap)
	}
	if c.BatchSize < 0 {
		bad("scheduleengine: BatchSize must be at least 1, got %d", c.BatchSize)
	}
	if c.LeaseTTL > 0 && c.LeaseTTL < time.Second {
		// Renewal every TTL/3 must survive one slow database round trip.
		bad("scheduleengine: LeaseTTL must be at least 1s, got %s", c.LeaseTTL)
	}
	return errors.Join(errs...)
}
