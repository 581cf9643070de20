package scheduleengine

import (
	"errors"
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/chimedb"
)

// Config configures an Engine. Zero fields take the default named in their
// comment.
type Config struct {
	// NodeID names this node in the engine's log lines. Required.
	NodeID string
	// Leadership decides whether this engine fires: in chime serve, the
	// cluster's scheduler lease judged on the database's clock
	// (cluster.Elector). Required.
	Leadership Leadership
	// Fence, when set, is the lease every fire batch checks inside its own
	// transaction (chimedb.LeaseFence): Leadership is this node's view, on
	// its own clock, of a lease the database decides; a batch whose COMMIT
	// reaches the server after the lease passed to another node (a
	// partition, a frozen process) must not land. In chime serve, the
	// scheduler lease held under NodeID. Nil: only Leadership is asked.
	Fence *chimedb.LeaseFence
	// SyncInterval is how often schedules changed by plain SQL are picked up
	// (default 2s).
	SyncInterval time.Duration
	// FullSyncInterval is how often every schedule is re-read, so deleted
	// rows and changes the updated_at scan missed are noticed (default 30s).
	FullSyncInterval time.Duration
	// MisfireThreshold is how late a fire may be and still be on time; later
	// ones follow the schedule's misfire_policy (default 5s).
	MisfireThreshold time.Duration
	// FireAllCap is the most missed fires one catch-up writes under
	// misfire_policy fire_all (default 100).
	FireAllCap int
	// BatchSize is the most fires written in one transaction (default 500).
	BatchSize int
	// BatchWait is how long a small batch waits for fires due just after
	// its first (default 2ms), so schedules due microseconds apart
	// (intervals anchored at created_at) share a transaction.
	BatchWait time.Duration
	// FireAhead, when positive, prepares each fire up to this long before
	// its instant: the batch's statements (lock, insert, trigger advance)
	// run early, in a transaction whose COMMIT waits for the instant, so
	// the fires are committed when due rather than a batch's write time
	// after it (default 0: each fire is written once due). Until that
	// COMMIT the new rows are visible to no one, and the batch holds its
	// schedules' and triggers' rows: a pause or edit that arrives in the
	// window waits for the fire and applies after it. Forbid schedules are
	// never prepared ahead. The store must let other writers go on beside
	// an open transaction, so not SQLite, whose writer excludes all others.
	// At most maxFireAhead, and below MisfireThreshold.
	FireAhead time.Duration
	// SyncPageSize is how many schedules one read of a sync returns
	// (default 10000): a sync reads them in pages by id and merges each
	// as it arrives, so a restore of a million schedules holds a page or
	// two of rows (about 600 bytes a row) beside the engine's entries.
	// Each page costs a query and the look-ups of its definitions: pages
	// of 20,000 took 12–15% less of the reader's CPU than 5,000 but held
	// 25–30 MiB more at the peak (docs/benchmarks.md); 10,000 is between.
	SyncPageSize int
	// RetryDelay is the pause before retrying a failed database round trip
	// (default 1s).
	RetryDelay time.Duration
	// OnFire, if set, is called after a commit that wrote jobs, so the
	// local task engine claims at once. It must not block.
	OnFire func()
	// OnFireCommitted, if set, is told of every on-time fire once its
	// transaction has committed: the instant it was due and the engine's
	// clock at the commit. Benchmarks read fire latency from it; it must
	// not block.
	OnFireCommitted func(due, committed time.Time)
	// Clock is the engine's only source of time (default: the real clock).
	Clock clockwork.Clock
	// Logger receives the engine's lines (default: logrus's standard logger).
	Logger logrus.FieldLogger
}

// maxFireAhead bounds Config.FireAhead: the prepared batch holds its
// schedules' rows that long, and a pause waits as long.
const maxFireAhead = 2 * time.Second

// Leadership says whether this node may fire now, and tells when that
// changes. OnChange callbacks must not block.
type Leadership interface {
	Leading() bool
	OnChange(func(leading bool))
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.SyncInterval, 2*time.Second)
	def(&c.FullSyncInterval, 30*time.Second)
	def(&c.MisfireThreshold, 5*time.Second)
	def(&c.BatchWait, 2*time.Millisecond)
	def(&c.RetryDelay, time.Second)
	if c.FireAllCap == 0 {
		c.FireAllCap = 100
	}
	if c.BatchSize == 0 {
		c.BatchSize = 500
	}
	if c.SyncPageSize == 0 {
		c.SyncPageSize = 10000
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
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("scheduleengine: "+format, args...)) }
	if c.NodeID == "" {
		bad("NodeID must not be empty")
	}
	if c.Leadership == nil {
		bad("Leadership must be set")
	}
	for i, v := range []time.Duration{c.SyncInterval, c.FullSyncInterval, c.MisfireThreshold, c.RetryDelay, c.BatchWait} {
		if v < 0 {
			bad("%s must be positive, got %s", [...]string{"SyncInterval", "FullSyncInterval", "MisfireThreshold", "RetryDelay", "BatchWait"}[i], v)
		}
	}
	if c.FireAhead < 0 || c.FireAhead > maxFireAhead || (c.FireAhead > 0 && c.FireAhead >= c.MisfireThreshold) {
		bad("FireAhead must be between 0 and %s and below MisfireThreshold (%s), got %s", maxFireAhead, c.MisfireThreshold, c.FireAhead)
	}
	if c.FireAllCap < 0 {
		bad("FireAllCap must be at least 1, got %d", c.FireAllCap)
	}
	if c.BatchSize < 0 {
		bad("BatchSize must be at least 1, got %d", c.BatchSize)
	}
	if c.SyncPageSize < 0 {
		bad("SyncPageSize must be at least 1, got %d", c.SyncPageSize)
	}
	return errors.Join(errs...)
}
