package store_test

import (
	"context"
	"github.com/chimesched/chime/chimedb"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// A value its column's type cannot hold fails neither a schedule read nor
// a claim: the row comes back Unreadable, naming the column, beside the
// others. SQLite keeps what plain SQL writes (text or a real past int64
// in an INTEGER column, text that is no time where no trigger watches);
// PostgreSQL's timestamptz holds 'infinity', which no Go time is. Before,
// one such row failed every read of its page: a node restored no
// schedule, or every claim that took the job failed.
func TestUnreadableRowsDoNotFailTheRead(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		db := st.DB()
		good := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "good"})
		bad := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "bad"})
		expr := "* * * * *"
		sched := func(name string, def int64) int64 {
			s := models.Schedule{Name: name, JobDefinitionID: def, ScheduleType: models.ScheduleCron, CronExpr: &expr, Timezone: "UTC",
				MisfirePolicy: models.MisfireFireOnce, Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive}
			require.NoError(t, db.Create(&s).Error)
			return s.ID
		}
		okID := sched("ok", good.ID)
		want := map[int64]string{} // schedule → the column its read names
		defCol := ""
		switch st.Dialect() {
		case store.SQLite:
			id := sched("interval", good.ID)
			require.NoError(t, db.Exec("UPDATE schedules SET interval_seconds = 1e30 WHERE id = ?", id).Error)
			want[id] = "schedules.interval_seconds holds 1e+30, which is not an integer"
			id = sched("trigger", good.ID)
			require.NoError(t, db.Exec("INSERT INTO time_triggers (schedule_id, last_fire_at) VALUES (?, 'not a time')", id).Error)
			want[id] = `time_triggers.last_fire_at holds "not a time", which is not a time`
			require.NoError(t, db.Exec("UPDATE job_definitions SET timeout_seconds = 'x' WHERE id = ?", bad.ID).Error)
			defCol = `job_definitions.timeout_seconds holds "x", which is not an integer`
		case store.Postgres:
			id := sched("infinity", good.ID)
			require.NoError(t, db.Exec("UPDATE schedules SET start_at = 'infinity' WHERE id = ?", id).Error)
			want[id] = "schedules.start_at holds"
		default:
			t.Skip("MariaDB refuses every such value")
		}
		res, err := st.LoadSchedules(ctx, &chimedb.LoadSchedulesParams{})
		require.NoError(t, err)
		seen := map[int64]bool{}
		for _, r := range res.Rows {
			seen[r.Schedule.ID] = true
			if w, ok := want[r.Schedule.ID]; ok {
				require.Contains(t, r.Schedule.Unreadable, w)
				require.Equal(t, models.ScheduleActive, r.Schedule.Status)
				continue
			}
			require.Empty(t, r.Schedule.Unreadable, "schedule %d", r.Schedule.ID)
		}
		require.True(t, seen[okID])
		for id := range want {
			require.True(t, seen[id], "schedule %d", id)
		}
		if defCol == "" {
			return
		}
		for _, def := range []int64{good.ID, bad.ID} {
			require.NoError(t, db.Exec("INSERT INTO jobs (job_definition_id) VALUES (?)", def).Error)
		}
		for _, kinds := range [][]string{nil, {"sleep"}} { // definitions read after the claim, and inside it
			claimed, err := st.ClaimJobs(ctx, &chimedb.ClaimParams{NodeID: "n1", Now: time.Now().Add(time.Second), Limit: 10, StartKinds: kinds})
			require.NoError(t, err)
			require.Len(t, claimed.Jobs, 2)
			for _, j := range claimed.Jobs {
				require.NoError(t, j.LoadErr)
				require.NotNil(t, j.Definition)
				if j.JobDefinitionID == bad.ID {
					require.Equal(t, defCol, j.Definition.Unreadable)
					require.False(t, j.Started, "a job of an unreadable definition is not started")
				} else {
					require.Empty(t, j.Definition.Unreadable)
				}
			}
			require.NoError(t, db.Exec("UPDATE jobs SET status = 'pending', node_id = ''").Error)
		}
		// A lost node's running jobs are recovered whatever their
		// definition holds: the unreadable one's as if it were gone.
		require.NoError(t, db.Exec("UPDATE job_definitions SET max_attempts = 'x' WHERE id = ?", bad.ID).Error)
		require.NoError(t, db.Exec("UPDATE jobs SET status = 'running', node_id = 'lost', attempt = 1").Error)
		rec, err := st.RecoverNode(ctx, &chimedb.RecoverNodeParams{NodeID: "lost", Now: time.Now()})
		require.NoError(t, err)
		require.Len(t, rec.Recovered, 1, "the bad definition's job, recovered as if its definition were gone")
		require.Len(t, rec.Failed, 1, "the good definition's job, out of attempts")
	})
}
