package taskengine

import (
	"context"
	"fmt"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// A job another node or an admin adds with plain SQL, from a connection
// of its own (on SQLite another process, the sqlite3 shell, when there is
// one), starts while the engine idles between polls an hour apart: only
// the watch can have woken it.
func TestWatchStartsJobsAddedElsewhere(t *testing.T) {
	t.Parallel()
	for _, d := range testdb.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			scfg := testdb.MigratedConfig(t, d)
			st, err := store.Open(ctx, scfg)
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			_, err = st.Migrate(ctx)
			require.NoError(t, err)
			other, err := store.Open(ctx, scfg)
			require.NoError(t, err)
			t.Cleanup(func() { _ = other.Close() })
			def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "adhoc", DefaultParams: `{"duration":"0s"}`}).ID

			watch, err := st.WatchJobs(ctx)
			require.NoError(t, err)
			cfg := testConfig(t, nodeName(t))
			cfg.PollInterval, cfg.Watch = time.Hour, watch
			e := startEngine(t, st, cfg)
			waitClaimAfter(t, e, 0) // the claim at start has looked and found nothing

			sqlite3, _ := exec.LookPath("sqlite3")
			for range 3 {
				if d == store.SQLite && sqlite3 != "" {
					out, err := exec.Command(sqlite3, "-cmd", ".timeout 10000", scfg.DSN,
						fmt.Sprintf("INSERT INTO jobs (job_definition_id) VALUES (%d)", def)).CombinedOutput()
					require.NoError(t, err, "%s", out)
				} else {
					require.NoError(t, other.DB().Exec(`INSERT INTO jobs (job_definition_id) VALUES (?)`, def).Error)
				}
				var id int64
				require.NoError(t, st.DB().Raw(`SELECT MAX(id) FROM jobs`).Scan(&id).Error)
				waitOutcome(t, e, st, id, models.JobSucceeded)
			}
		})
	}
}

// countedWatch counts the reads of the watch it wraps.
type countedWatch struct {
	JobsWatch
	reads atomic.Int64
}

func (c *countedWatch) Changed(ctx context.Context, now time.Time) (bool, error) {
	c.reads.Add(1)
	return c.JobsWatch.Changed(ctx, now)
}

// The watch is read once per WakeInterval of the engine's clock, wakes the
// poll loop only when it saw a row added, and after a failed read waits
// watchRetry and warns once per outage.
func TestWatchLoop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testdb.Open(t, store.SQLite)
	def := testdb.Definition(t, st, nil).ID
	watch, err := st.WatchJobs(ctx)
	require.NoError(t, err)
	cw := &countedWatch{JobsWatch: watch}
	clock := clockwork.NewFakeClock()
	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.InfoLevel)
	cfg := testConfig(t, nodeName(t))
	cfg.Clock, cfg.Logger, cfg.Watch, cfg.WakeInterval = clock, log, cw, 50*time.Millisecond
	e, err := New(st, &cfg)
	require.NoError(t, err)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); e.producer.watchLoop(wctx) }()
	defer func() { cancel(); <-done }()

	bctx, bcancel := context.WithTimeout(ctx, 20*time.Second)
	defer bcancel()
	// advance moves the clock by d once the watch's timer is set, and
	// waits until it is set again: any read d brought about is over.
	advance := func(d time.Duration) {
		t.Helper()
		require.NoError(t, clock.BlockUntilContext(bctx, 1))
		clock.Advance(d)
		require.NoError(t, clock.BlockUntilContext(bctx, 1))
	}
	woken := func() bool {
		select {
		case <-e.producer.wake:
			return true
		default:
			return false
		}
	}

	for i := range 3 {
		advance(cfg.WakeInterval)
		require.Equal(t, int64(i+1), cw.reads.Load())
	}
	advance(cfg.WakeInterval - time.Millisecond)
	require.Equal(t, int64(3), cw.reads.Load(), "read before its interval")
	advance(time.Millisecond)
	require.Equal(t, int64(4), cw.reads.Load())
	require.False(t, woken(), "woken with no row added")

	testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def})
	advance(cfg.WakeInterval)
	require.True(t, woken(), "a row added did not wake the engine")
	advance(cfg.WakeInterval)
	require.False(t, woken(), "woken twice for one row")

	require.NoError(t, st.Close())
	reads := cw.reads.Load()
	advance(cfg.WakeInterval)
	require.Equal(t, reads+1, cw.reads.Load())
	advance(cfg.WakeInterval)
	require.Equal(t, reads+1, cw.reads.Load(), "read again before watchRetry after a failure")
	advance(watchRetry - cfg.WakeInterval)
	require.Equal(t, reads+2, cw.reads.Load())
	warnings := 0
	for _, en := range hook.AllEntries() {
		if en.Level == logrus.WarnLevel {
			warnings++
			require.Contains(t, en.Message, "start at the next poll")
		}
	}
	require.Equal(t, 1, warnings, "one warning per outage")
}
