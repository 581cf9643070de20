package store_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/faultproxy"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// fenceBatch is one fire of a new every-second schedule, due at.
func fenceBatch(t *testing.T, st *store.Store, name string, at time.Time) *chimedb.WriteFiresParams {
	t.Helper()
	def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: name, TaskType: "sleep"})
	expr := "* * * * * *"
	s := models.Schedule{Name: name, JobDefinitionID: def.ID, ScheduleType: models.ScheduleCron, CronExpr: &expr, Timezone: "UTC",
		MisfirePolicy: models.MisfireFireOnce, Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive}
	require.NoError(t, st.DB().Create(&s).Error)
	return &chimedb.WriteFiresParams{Now: at,
		Jobs:     []chimedb.FireJob{{ScheduleID: s.ID, JobDefinitionID: def.ID, ScheduledAt: at, MaxAttempts: 1}},
		Triggers: []chimedb.TriggerRow{{ScheduleID: s.ID, LastFireAt: &at}}}
}

func countJobs(t *testing.T, st *store.Store, scheduleID int64) int64 {
	t.Helper()
	var n int64
	require.NoError(t, st.DB().Model(&models.Job{}).Where("schedule_id = ?", scheduleID).Count(&n).Error)
	return n
}

// A fenced batch writes only while its node holds the lease by the
// database's clock: not once it expired, not when another node holds it.
func TestWriteFiresFencedByLease(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		at := time.Now().UTC().Truncate(time.Second)
		fence := &chimedb.LeaseFence{Name: chimedb.SchedulerLease, Holder: "a", IdleTimeout: 5 * time.Second}

		p := fenceBatch(t, st, "never-held", at)
		p.Fence = fence
		_, err := st.WriteFires(ctx, p)
		require.ErrorIs(t, err, chimedb.ErrLeaseLost, "no lease row yet")
		require.Zero(t, countJobs(t, st, p.Triggers[0].ScheduleID))

		// A TTL no load outlasts: before, 500 ms had to cover two INSERTs
		// and the batch on a loaded machine.
		try, err := st.TryAcquireLease(ctx, chimedb.SchedulerLease, "a", time.Minute)
		require.NoError(t, err)
		require.True(t, try.Held)
		p = fenceBatch(t, st, "held", at)
		p.Fence = fence
		res, err := st.WriteFires(ctx, p)
		require.NoError(t, err)
		require.Equal(t, 1, res.Inserted)

		// Renewed with a TTL that ends at once, and left to expire: the
		// wait is for the database's clock to pass expires_at, however
		// long that takes, not for a fixed time.
		try, err = st.TryAcquireLease(ctx, chimedb.SchedulerLease, "a", time.Millisecond)
		require.NoError(t, err)
		require.True(t, try.Held)
		p = fenceBatch(t, st, "expired", at)
		waitExpired(t, st, try.ExpiresAt)
		p.Fence = fence
		_, err = st.WriteFires(ctx, p)
		require.ErrorIs(t, err, chimedb.ErrLeaseLost, "expired by the database's clock, though no one took it")
		require.Zero(t, countJobs(t, st, p.Triggers[0].ScheduleID))

		try, err = st.TryAcquireLease(ctx, chimedb.SchedulerLease, "b", time.Minute)
		require.NoError(t, err)
		require.True(t, try.Held)
		p = fenceBatch(t, st, "taken", at)
		p.Fence = fence
		_, err = st.WriteFires(ctx, p)
		require.ErrorIs(t, err, chimedb.ErrLeaseLost, "held by b")
		require.Zero(t, countJobs(t, st, p.Triggers[0].ScheduleID))
	})
}

// takeWhile has node b try the lease until it holds it or done closes,
// each try bounded by a short timeout (a takeover that waits on a fenced
// transaction blocks in the database), and reports when it got it.
func takeWhile(ctx context.Context, st *store.Store, done <-chan struct{}) <-chan time.Time {
	got := make(chan time.Time, 1)
	go func() {
		for {
			c, cancel := context.WithTimeout(ctx, time.Second)
			try, err := st.TryAcquireLease(c, chimedb.SchedulerLease, "b", time.Minute)
			cancel()
			if err == nil && try.Held {
				got <- time.Now()
				return
			}
			select {
			case <-done:
				close(got)
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return got
}

// heldOpen has holder a take the lease with ttl and starts a fenced batch
// of a new schedule that stops before its COMMIT until release is closed;
// it returns once the batch has passed its fence, with the lease as a
// last renewed it. The fence must come within ttl of the take, which a
// loaded machine does not promise: a batch that finds the lease expired
// already is tried again with twice the TTL, until one passes.
func heldOpen(t *testing.T, st *store.Store, name string, ttl time.Duration, fence *chimedb.LeaseFence) (
	p *chimedb.WriteFiresParams, try *chimedb.LeaseTry, release chan struct{}, errc chan error) {
	t.Helper()
	ctx := context.Background()
	at := time.Now().UTC().Truncate(time.Second)
	for i := 0; ; i++ {
		p = fenceBatch(t, st, fmt.Sprintf("%s-%d", name, i), at)
		p.Fence = fence
		inTx := make(chan struct{})
		release, errc = make(chan struct{}), make(chan error, 1)
		p.BeforeCommit = func(context.Context) error {
			close(inTx)
			<-release // the COMMIT is held up
			return nil
		}
		var err error
		try, err = st.TryAcquireLease(ctx, chimedb.SchedulerLease, fence.Holder, ttl)
		require.NoError(t, err)
		require.True(t, try.Held)
		go func() {
			_, err := st.WriteFires(ctx, p)
			errc <- err
		}()
		select {
		case <-inTx:
			return p, try, release, errc
		case err := <-errc:
			require.ErrorIs(t, err, chimedb.ErrLeaseLost, "the batch failed before its COMMIT")
			t.Logf("the batch reached its fence after the lease's %s had passed; again with twice the TTL", ttl)
			ttl *= 2
		}
	}
}

// waitExpired waits until the database's clock has passed expiresAt.
func waitExpired(t *testing.T, st *store.Store, expiresAt time.Time) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		now, err := st.DBNow(context.Background())
		require.NoError(t, err)
		if now.After(expiresAt) {
			return
		}
		require.True(t, time.Now().Before(deadline), "the database's clock never passed %v", expiresAt)
		time.Sleep(5 * time.Millisecond) // the poll step of a wait with a deadline
	}
}

// The partition the issue saw: a lease holder's fire transaction whose
// COMMIT reaches the server only after the lease expired and another node
// took it. The fence's shared lock holds the takeover back while the
// transaction lives; the server ends the transaction once it has waited
// IdleTimeout for its client; then the takeover goes through, and the late
// COMMIT is refused: nothing of the batch is written.
func TestFencedCommitAfterTakeoverIsRefused(t *testing.T) {
	t.Parallel()
	testdb.ForEachServer(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		// The COMMIT is held up in the network.
		p, _, release, errc := heldOpen(t, st, "late", time.Second,
			&chimedb.LeaseFence{Name: chimedb.SchedulerLease, Holder: "a", IdleTimeout: time.Second})
		stop := make(chan struct{})
		defer close(stop)
		select {
		case <-takeWhile(ctx, st, stop):
		case <-time.After(30 * time.Second):
			t.Fatal("b never took the expired lease: the server kept the cut-off transaction")
		}
		close(release)
		err := <-errc
		require.Error(t, err, "a COMMIT that arrived after b took the lease went through")
		require.Zero(t, countJobs(t, st, p.Triggers[0].ScheduleID), "the late batch wrote its fire")
		l, err := st.GetLease(ctx, chimedb.SchedulerLease)
		require.NoError(t, err)
		require.Equal(t, "b", l.Holder)
	})
}

// Without an idle timeout (MySQL has none) the takeover waits for the
// fenced transaction instead: the old holder's commit lands before the
// lease passes, never after it.
func TestFencedTransactionHoldsTakeoverBack(t *testing.T) {
	t.Parallel()
	testdb.ForEachServer(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		p, try, release, errc := heldOpen(t, st, "slow", 300*time.Millisecond,
			&chimedb.LeaseFence{Name: chimedb.SchedulerLease, Holder: "a"})
		// Past the expiry by the database's clock, b's takeovers wait for
		// a's transaction: none may get the lease, however long it tries.
		waitExpired(t, st, try.ExpiresAt)
		stop := make(chan struct{})
		got := takeWhile(ctx, st, stop)
		select {
		case <-got:
			t.Fatal("b took the lease while a's fenced transaction was open")
		case <-time.After(2 * time.Second): // a few takeovers' time: the assertion cannot fail for the machine's slowness
		}
		committed := time.Now()
		close(release)
		require.NoError(t, <-errc)
		require.Equal(t, int64(1), countJobs(t, st, p.Triggers[0].ScheduleID))
		select {
		case took := <-got:
			require.True(t, took.After(committed), "b took the lease at %s, before a's commit at %s", took, committed)
		case <-time.After(10 * time.Second):
			t.Fatal("b never took the lease after a's commit")
		}
		close(stop)
		// A batch of a now refused.
		p2 := fenceBatch(t, st, "after", time.Now().UTC().Truncate(time.Second))
		p2.Fence = p.Fence
		_, err := st.WriteFires(ctx, p2)
		require.True(t, errors.Is(err, chimedb.ErrLeaseLost), "%v", err)
	})
}

// A holder cut off in the middle of renewing its lease must not leave the
// row locked: the others take the lease once it expires, not once the
// server drops the cut-off connection. The partition falls after the
// renewal's UPDATE, before the read that follows it (which, in one
// transaction with the UPDATE, kept the row locked).
func TestLeaseRenewalCutOffHoldsNothing(t *testing.T) {
	t.Parallel()
	for _, d := range testdb.ServerDialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st, cfg := testdb.OpenConfig(t, d)
			ctx := context.Background()
			try, err := st.TryAcquireLease(ctx, chimedb.SchedulerLease, "a", time.Second)
			require.NoError(t, err)
			require.True(t, try.Held)

			target := cfg.DSN
			if d == store.Postgres {
				u, err := url.Parse(cfg.DSN)
				require.NoError(t, err)
				target = u.Host
			} else {
				target = target[strings.Index(target, "tcp(")+4:]
				target = target[:strings.Index(target, ")")]
			}
			p, err := faultproxy.Start(target)
			require.NoError(t, err)
			defer func() { _ = p.Close() }()
			pcfg := cfg
			pcfg.DSN = strings.Replace(cfg.DSN, target, p.Addr(), 1)
			pst, err := store.Open(ctx, pcfg)
			require.NoError(t, err)
			defer pst.Close()

			p.BlackholeWhen([]byte("SELECT holder, expires_at FROM leases"))
			renewed := make(chan struct{})
			go func() {
				defer close(renewed)
				c, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				_, _ = pst.TryAcquireLease(c, chimedb.SchedulerLease, "a", time.Second)
			}()
			stop := make(chan struct{})
			defer close(stop)
			select {
			case <-takeWhile(ctx, st, stop):
			case <-time.After(15 * time.Second):
				t.Fatal("b could not take the lease while a's renewal was cut off")
			}
			p.Heal()
			<-renewed
		})
	}
}

// On PostgreSQL the holder renews its lease beside its own open fire
// batches: a batch held open (fire-ahead) must not hold the renewal back
// (MySQL's shared lock does, for as long as the batch is open).
func TestLeaseRenewalBesideFencedBatch(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.Postgres)
	ctx := context.Background()
	try, err := st.TryAcquireLease(ctx, chimedb.SchedulerLease, "a", time.Minute)
	require.NoError(t, err)
	require.True(t, try.Held)
	p := fenceBatch(t, st, "ahead", time.Now().UTC().Truncate(time.Second))
	p.Fence = &chimedb.LeaseFence{Name: chimedb.SchedulerLease, Holder: "a", IdleTimeout: time.Minute}
	inTx, release := make(chan struct{}), make(chan struct{})
	p.BeforeCommit = func(context.Context) error {
		close(inTx)
		<-release
		return nil
	}
	errc := make(chan error, 1)
	go func() {
		_, err := st.WriteFires(ctx, p)
		errc <- err
	}()
	<-inTx
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	try, err = st.TryAcquireLease(c, chimedb.SchedulerLease, "a", time.Minute)
	cancel()
	close(release)
	require.NoError(t, err, "the renewal waited for the open batch")
	require.True(t, try.Held)
	require.NoError(t, <-errc)
}
