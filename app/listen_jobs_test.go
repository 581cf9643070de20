package app

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/configs"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// On PostgreSQL a job inserted by plain SQL starts at once on a worker node
// that polls only every 30 s: the trigger's NOTIFY wakes it. Two nodes
// share the database; the insert comes from neither. After its LISTEN
// connection is killed, a node listens again.
func TestPlainSQLJobStartsOnNotify(t *testing.T) {
	t.Parallel()
	e := newNodeEnv(t, store.Postgres, 0)
	e.cfg.TaskEngine.PollInterval = configs.Duration(30 * time.Second)
	def := e.definition("d", "chatty", models.NotifyNever)
	a := e.cfg
	a.Node.ID = "a"
	b := e.cfg
	b.Node.ID = "b"
	e.cfg = a
	e.serve()
	e.cfg = b
	e.serve()
	db := e.st.DB()
	listening := func(n int) func() bool {
		return func() bool {
			var got int
			require.NoError(t, db.Raw(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
				AND application_name = ? AND wait_event = 'ClientRead'`, store.ListenApplicationName).Scan(&got).Error)
			return got == n
		}
	}
	// Each node claims once at start; wait for both to listen and to have
	// looked, so that only a wake-up can start the next job.
	waitFor(t, 10*time.Second, "both nodes to LISTEN", listening(2))
	started := func(id int64) func() bool {
		return func() bool {
			var j models.Job
			require.NoError(t, db.Take(&j, id).Error)
			return j.Status == models.JobSucceeded
		}
	}
	insert := func() int64 {
		var id int64
		require.NoError(t, db.Raw(`INSERT INTO jobs (job_definition_id) VALUES (?) RETURNING id`, def.ID).Scan(&id).Error)
		return id
	}
	// 10 s is a third of the poll interval: a job that waited for a poll
	// would not make it.
	waitFor(t, 10*time.Second, "the plain-SQL job to run", started(insert()))

	var killed int
	require.NoError(t, db.Raw(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = ?`, store.ListenApplicationName).Scan(&killed).Error)
	require.Equal(t, 2, killed)
	waitFor(t, 10*time.Second, "both nodes to LISTEN again", listening(2))
	waitFor(t, 10*time.Second, "a plain-SQL job to run after the reconnect", started(insert()))
}

// On MySQL and SQLite a job inserted by plain SQL starts on worker nodes
// that poll only every hour: they read the jobs table's primary key every
// taskengine.wake_interval. Two nodes share MySQL (one on SQLite); the
// inserts come from neither. The first job may be taken by a node's claim
// at start; the next ones only a wake-up explains.
func TestPlainSQLJobStartsOnWatch(t *testing.T) {
	t.Parallel()
	for _, d := range []store.Dialect{store.MySQL, store.SQLite} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			e := newNodeEnv(t, d, 0)
			e.cfg.TaskEngine.PollInterval = configs.Duration(time.Hour)
			def := e.definition("d", "chatty", models.NotifyNever)
			nodes := []string{"a", "b"}
			if d == store.SQLite {
				nodes = nodes[:1]
			}
			base := e.cfg
			for _, id := range nodes {
				e.cfg = base
				e.cfg.Node.ID = id
				e.serve()
			}
			db := e.st.DB()
			for range 3 {
				require.NoError(t, db.Exec(`INSERT INTO jobs (job_definition_id) VALUES (?)`, def.ID).Error)
				var id int64
				require.NoError(t, db.Raw(`SELECT MAX(id) FROM jobs`).Scan(&id).Error)
				waitFor(t, 20*time.Second, "the plain-SQL job to run", func() bool {
					var j models.Job
					require.NoError(t, db.Take(&j, id).Error)
					return j.Status == models.JobSucceeded
				})
			}
		})
	}
}

// BenchmarkInsertToStart measures how long after a plain-SQL INSERT an
// ad-hoc job starts, with two worker nodes at the default 4 s poll: on
// PostgreSQL the NOTIFY wakes them, elsewhere the read of the jobs table
// every taskengine.wake_interval (CHIME_BENCH_WAKE_INTERVAL=0 turns it
// off: they find it at a poll, about half the interval on average). 200 jobs, one every 20 ms, from a
// connection of no node; started_at − created_at, both on this machine's
// clock. Run with -benchtime=1x.
func BenchmarkInsertToStart(b *testing.B) {
	for _, d := range []store.Dialect{store.Postgres, store.MySQL, store.SQLite} {
		b.Run(string(d), func(b *testing.B) {
			for range b.N {
				insertToStart(b, d)
			}
		})
	}
}

func insertToStart(b *testing.B, d store.Dialect) {
	scfg := testdb.Config(b, d)
	ctx := context.Background()
	st, err := store.Open(ctx, scfg)
	require.NoError(b, err)
	defer st.Close()
	_, err = st.Migrate(ctx)
	require.NoError(b, err)
	cfg, err := configs.Load("", func(string) string { return "" })
	require.NoError(b, err)
	cfg.Database.Driver, cfg.Database.DSN = string(d), scfg.DSN
	cfg.API.Addr = "127.0.0.1:0"
	cfg.ScheduleEngine.Enabled = false
	if v := os.Getenv("CHIME_BENCH_WAKE_INTERVAL"); v != "" {
		w, err := time.ParseDuration(v)
		require.NoError(b, err)
		cfg.TaskEngine.WakeInterval = configs.Duration(w)
	}
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	nodes := []string{"a", "b"}
	if d == store.SQLite {
		nodes = nodes[:1] // one node per SQLite file
	}
	var stops []func()
	for _, id := range nodes {
		c := *cfg
		c.Node.ID = id
		nctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- Serve(nctx, &c, Options{NoMigrate: true, Logger: log}) }()
		stops = append(stops, func() { cancel(); require.NoError(b, <-done) })
	}
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	db := st.DB()
	def := models.JobDefinition{Name: "noop", TaskType: "sleep", DefaultParams: models.JSON(`{"duration":"0s"}`), MaxAttempts: 1, NotifyOn: models.NotifyNever}
	require.NoError(b, db.Create(&def).Error)
	// The nodes' first claims, at start, are behind us after one poll.
	time.Sleep(cfg.TaskEngine.PollInterval.D() + time.Second) // real nodes start on their own timers
	const n = 200
	b.ResetTimer()
	// How long each INSERT took to return, its commit included: the part
	// of insert → start that no wake-up can shorten.
	took := make([]float64, 0, n)
	for range n {
		began := time.Now()
		require.NoError(b, db.Exec(`INSERT INTO jobs (job_definition_id) VALUES (?)`, def.ID).Error)
		took = append(took, float64(time.Since(began).Microseconds())/1000)
		time.Sleep(20 * time.Millisecond) // the arrival rate under test
	}
	var jobs []models.Job
	deadline := time.Now().Add(2 * cfg.TaskEngine.PollInterval.D())
	for {
		require.NoError(b, db.Where("started_at IS NOT NULL").Find(&jobs).Error)
		if len(jobs) == n || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // polling a condition
	}
	b.StopTimer()
	require.Len(b, jobs, n)
	lat := make([]float64, 0, n)
	for _, j := range jobs {
		lat = append(lat, float64(j.StartedAt.Sub(j.CreatedAt).Microseconds())/1000)
	}
	slices.Sort(lat)
	slices.Sort(took)
	at := func(v []float64, q float64) float64 { return v[min(len(v)-1, int(q*float64(len(v))))] }
	b.ReportMetric(at(lat, 0.5), "p50-ms")
	b.ReportMetric(at(lat, 0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
	b.Logf("%s, %d nodes, poll %s, wake-up %s: insert → start p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms; the INSERT itself p50 %.1f ms, p99 %.1f ms",
		d, len(nodes), cfg.TaskEngine.PollInterval.D(), cfg.TaskEngine.WakeInterval.D(), at(lat, 0.5), at(lat, 0.9), at(lat, 0.99), lat[len(lat)-1],
		at(took, 0.5), at(took, 0.99))
}
