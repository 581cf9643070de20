package store_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/scheduleengine"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/taskengine"
	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/tasks/sleep"
)

// enginePoll is the task engine's poll in TestAdminSessionEngines: an
// admin's ad-hoc job must start within about one of these.
const enginePoll = 500 * time.Millisecond

// startEngines runs a schedule engine and a task engine on st with real
// clocks, as one node does, and stops them at cleanup.
func startEngines(t *testing.T, st *store.Store) {
	t.Helper()
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	reg := tasks.NewRegistry()
	reg.MustRegister(sleep.Kind, sleep.New)
	te, err := taskengine.New(st, &taskengine.Config{
		NodeID: "n1", Logger: log, PollInterval: enginePoll, PoolSize: 4, Registry: reg, ShutdownGrace: time.Second,
	})
	require.NoError(t, err)
	// OnFire is left unset: a fire must not wake the task engine here, so
	// that the ad-hoc job is found by the poll alone, as on another node.
	se, err := scheduleengine.New(st, &scheduleengine.Config{NodeID: "n1", Leadership: soleNode{}, Logger: log, SyncInterval: 200 * time.Millisecond})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, te.Start(ctx))
	require.NoError(t, se.Start(ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = se.Stop(ctx)
		_ = te.Stop(ctx)
	})
}

// soleNode is the Leadership of a node alone on its database: it always leads.
type soleNode struct{}

func (soleNode) Leading() bool       { return true }
func (soleNode) OnChange(func(bool)) {}

// eventually polls cond until it holds or d has passed. The engines run on
// real clocks against a real database, so the test can only wait for them.
func eventually(t *testing.T, d time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf(msg, args...)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition, not waiting a fixed time
	}
}

// TestAdminSessionEngines is the scenario end to end: an admin in a
// session at +08:00 or -05:00 (on SQLite: literals with those offsets)
// inserts an ad-hoc job and an every-second cron schedule with the README's
// minimal INSERTs. The job must run at the task engine's next poll, and the
// schedule must fire on the next seconds with no catch-up job.
func TestAdminSessionEngines(t *testing.T) {
	t.Parallel()
	for _, d := range []store.Dialect{store.SQLite, store.MySQL, store.Postgres} {
		for _, zone := range adminZones {
			t.Run(string(d)+"/"+zone, func(t *testing.T) {
				t.Parallel()
				st, cfg := openWithConfig(t, d)
				admin := adminSession(t, cfg, zone)
				startEngines(t, st)
				db := st.DB()
				ctx := context.Background()

				_, err := admin.Exec(`INSERT INTO job_definitions (name, task_type, default_params) VALUES ('hello', 'sleep', '{"duration": "1ms"}')`)
				require.NoError(t, err)

				// The ad-hoc run, by default and with run_at typed as the
				// admin's local now.
				_, err = admin.Exec(`INSERT INTO jobs (job_definition_id) VALUES ((SELECT id FROM job_definitions WHERE name = 'hello'))`)
				require.NoError(t, err)
				now, err := st.DBNow(ctx)
				require.NoError(t, err)
				local := now.In(fixedZone(t, zone))
				lit := local.Format("2006-01-02 15:04:05.000000")
				if d == store.SQLite {
					lit = local.Format("2006-01-02 15:04:05.000000-07:00")
				}
				ins := `INSERT INTO jobs (job_definition_id, run_at) VALUES ((SELECT id FROM job_definitions WHERE name = 'hello'), ?)`
				if d == store.Postgres {
					ins = strings.Replace(ins, "?", "$1", 1)
				}
				_, err = admin.Exec(ins, lit)
				require.NoError(t, err)
				// Two polls and a slow machine's margin; a zone error is hours.
				eventually(t, 2*enginePoll+5*time.Second, func() bool {
					var n int64
					require.NoError(t, db.Model(&models.Job{}).Where("schedule_id IS NULL AND status = ?", models.JobSucceeded).Count(&n).Error)
					return n == 2
				}, "the ad-hoc jobs inserted from a %s session did not run", zone)

				_, err = admin.Exec(`INSERT INTO schedules (name, job_definition_id, schedule_type, cron_expr)
					VALUES ('every-second', (SELECT id FROM job_definitions WHERE name = 'hello'), 'cron', '* * * * * *')`)
				require.NoError(t, err)
				inserted, err := st.DBNow(ctx)
				require.NoError(t, err)
				var sch models.Schedule
				require.NoError(t, db.Where("name = ?", "every-second").Take(&sch).Error)
				var fires []models.Job
				eventually(t, 10*time.Second, func() bool {
					fires = nil
					require.NoError(t, db.Where("schedule_id = ?", sch.ID).Order("scheduled_at").Find(&fires).Error)
					return len(fires) >= 2
				}, "a cron schedule inserted from a %s session did not fire", zone)
				for _, j := range fires {
					require.False(t, j.CatchUp, "fire at %s is a catch-up of %d missed fires", j.ScheduledAt, j.MissedFires)
					require.Zero(t, j.MissedFires)
					require.False(t, j.ScheduledAt.Before(inserted.Add(-2*time.Second)), "fire at %s, inserted at %s", j.ScheduledAt, inserted)
					require.True(t, j.ScheduledAt.Before(inserted.Add(10*time.Second)), "fire at %s, inserted at %s", j.ScheduledAt, inserted)
				}
				var misfired sql.NullInt64
				require.NoError(t, db.Raw(`SELECT misfired_count FROM time_triggers WHERE schedule_id = ?`, sch.ID).Scan(&misfired).Error)
				require.Zero(t, misfired.Int64)
			})
		}
	}
}
