package store_test

import (
	"context"
	"errors"
	"github.com/chimesched/chime/chimedb"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// ListenJobs wakes its caller when a due job is inserted by plain SQL or
// set back to pending, not for claims or future retries, and listens again
// after its connection is killed.
func TestListenJobs(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.Postgres)
	db := st.DB()
	wakes, next := listen(t, st)
	// quiet: no wake-up comes. A real wait: a NOTIFY that should not be
	// sent has nothing to signal its absence.
	quiet := func(what string) {
		t.Helper()
		select {
		case <-wakes:
			t.Fatalf("woken by %s", what)
		case <-time.After(300 * time.Millisecond):
		}
	}
	next("LISTEN")

	require.NoError(t, db.Exec(`INSERT INTO job_definitions (name, task_type) VALUES ('d', 'sleep')`).Error)
	require.NoError(t, db.Exec(`INSERT INTO jobs (job_definition_id) SELECT id FROM job_definitions`).Error)
	next("a due job inserted by plain SQL")
	require.NoError(t, db.Exec(`UPDATE jobs SET status = 'queued', node_id = 'n'`).Error)
	require.NoError(t, db.Exec(`INSERT INTO jobs (job_definition_id, run_at) SELECT id, now() + interval '1 hour' FROM job_definitions`).Error)
	quiet("a claim or a job due in an hour")
	require.NoError(t, db.Exec(`UPDATE jobs SET status = 'pending', node_id = '' WHERE status = 'queued'`).Error)
	next("a job set back to pending")

	// A killed LISTEN connection is opened again, and the first thing it
	// does is wake the engine: notifications sent meanwhile are lost.
	var killed int
	require.NoError(t, db.Raw(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = ?`, store.ListenApplicationName).Scan(&killed).Error)
	require.Equal(t, 1, killed)
	next("LISTEN again")
	require.NoError(t, db.Exec(`INSERT INTO jobs (job_definition_id) SELECT id FROM job_definitions`).Error)
	next("a due job inserted after the reconnect")
}

// listen runs st.ListenJobs until the test ends, and returns its wake-ups
// and a func that waits for the next one.
func listen(t *testing.T, st *store.Store) (wakes <-chan struct{}, next func(what string)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan struct{}, 100)
	done := make(chan error, 1)
	go func() { done <- st.ListenJobs(ctx, func() { ch <- struct{}{} }) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return ch, func(what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("no wake-up after %s", what)
		}
	}
}

func TestListenJobsWithoutNotify(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.SQLite)
	err := st.ListenJobs(context.Background(), func() {})
	require.True(t, errors.Is(err, store.ErrNoNotify), "%v", err)
}

// A DSN naming a database that does not exist gets it created, as on
// MySQL, and an unparsable DSN is refused without being repeated.
func TestPostgresFirstRun(t *testing.T) {
	t.Parallel()
	dsn := testdb.CreatePostgresDatabase(t) // dropped at cleanup
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	name := strings.TrimPrefix(u.Path, "/")
	admin := testdb.Open(t, store.Postgres)
	require.NoError(t, admin.DB().Exec("DROP DATABASE "+name).Error)
	st, err := store.Open(context.Background(), store.Config{Driver: store.Postgres, DSN: dsn})
	require.NoError(t, err)
	defer st.Close()
	_, err = st.Migrate(context.Background())
	require.NoError(t, err)

	_, err = store.Open(context.Background(), store.Config{Driver: store.Postgres, DSN: "postgres://u:s3cret@[bad"})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "s3cret")
}

// A fire prepared ahead inserts its jobs before their instant and commits
// at it: the other nodes must be woken for them too, though at the INSERT
// the jobs were not due yet.
func TestListenJobsFireAhead(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.Postgres)
	_, next := listen(t, st)
	next("LISTEN")

	def := testdb.Definition(t, st, nil)
	expr := "* * * * * *"
	s := models.Schedule{Name: "s", JobDefinitionID: def.ID, ScheduleType: models.ScheduleCron, CronExpr: &expr, Timezone: "UTC",
		MisfirePolicy: models.MisfireFireOnce, Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive}
	require.NoError(t, st.DB().Create(&s).Error)
	at := store.DBTime(time.Now().Add(300 * time.Millisecond))
	p := &chimedb.WriteFiresParams{Now: at,
		Jobs:     []chimedb.FireJob{{ScheduleID: s.ID, JobDefinitionID: def.ID, ScheduledAt: at, MaxAttempts: 1}},
		Triggers: []chimedb.TriggerRow{{ScheduleID: s.ID, LastFireAt: &at}},
		// As the schedule engine's fire-ahead does: commit at the instant.
		BeforeCommit: func(context.Context) error { time.Sleep(time.Until(at)); return nil },
	}
	res, err := st.WriteFires(context.Background(), p)
	require.NoError(t, err)
	require.Equal(t, 1, res.Inserted)
	next("a fire prepared ahead committed")
}

// A multi-row INSERT calls the NOTIFY trigger's function once, not once
// per due row (00016), and wakes the listeners once.
func TestListenJobsOneNotifyPerInsert(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.Postgres)
	db := st.DB()
	def := testdb.Definition(t, st, nil)
	wakes, next := listen(t, st)
	next("LISTEN")

	var calls int64
	err := db.Transaction(func(tx *gorm.DB) error {
		// The calls of this transaction's trigger functions, counted by
		// the server (track_functions is a superuser's setting).
		if err := tx.Exec("SET LOCAL track_functions = 'pl'").Error; err != nil {
			return err
		}
		if err := tx.Exec(`INSERT INTO jobs (job_definition_id, run_at)
			SELECT ?, now() + (i - 49) * interval '1 minute' FROM generate_series(0, 99) i`, def.ID).Error; err != nil {
			return err
		}
		return tx.Raw(`SELECT coalesce(sum(calls), 0) FROM pg_stat_xact_user_functions
			WHERE funcname LIKE 'chime_jobs_notify%'`).Scan(&calls).Error
	})
	if err != nil && strings.Contains(err.Error(), "permission denied") {
		t.Skip("counting trigger calls needs a superuser:", err)
	}
	require.NoError(t, err)
	require.EqualValues(t, 1, calls, "one call for the statement")
	next("a multi-row INSERT of 50 due rows and 50 later ones")
	select {
	case <-wakes:
		t.Fatal("woken twice by one INSERT")
	case <-time.After(300 * time.Millisecond):
	}
}
