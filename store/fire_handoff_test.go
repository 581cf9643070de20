package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// A fire batch with hand-off slots writes up to that many of its on-time
// jobs straight as running on the node, first attempt, and returns them
// ready to run; jobs of other task types, of forbid schedules, catch-up
// jobs and those beyond the slots are written pending as without slots. A
// fire written before is not handed off again.
func TestWriteFiresHandoff(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		db := st.DB()
		free := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "free", TaskType: "sleep", MaxAttempts: 3})
		hooked := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "hooked", TaskType: "hooked"})
		sched := func(name string, def int64, conc models.Concurrency) int64 {
			expr := "* * * * * *"
			s := models.Schedule{Name: name, JobDefinitionID: def, ScheduleType: models.ScheduleCron, CronExpr: &expr, Timezone: "UTC",
				MisfirePolicy: models.MisfireFireOnce, Concurrency: conc, Status: models.ScheduleActive}
			require.NoError(t, db.Create(&s).Error)
			return s.ID
		}
		a := sched("a", free.ID, models.ConcurrencyAllow)
		b := sched("b", free.ID, models.ConcurrencyAllow)
		c := sched("c", free.ID, models.ConcurrencyAllow)
		forbid := sched("forbid", free.ID, models.ConcurrencyForbid)
		other := sched("other", hooked.ID, models.ConcurrencyAllow)
		late := sched("late", free.ID, models.ConcurrencyAllow)

		at := time.Now().UTC().Truncate(time.Second)
		now := at.Add(3 * time.Millisecond)
		p := &chimedb.WriteFiresParams{Now: now, HandoffNode: "n1", HandoffKinds: []string{"sleep", "shell"}, HandoffSlots: 2}
		// forbid and other come first: they must not take the slots.
		for _, id := range []int64{forbid, other, a, b, c} {
			def := free.ID
			if id == other {
				def = hooked.ID
			}
			var params models.JSON
			if id == a {
				params = models.JSON(`{"duration": "0s"}`)
			}
			p.Jobs = append(p.Jobs, chimedb.FireJob{ScheduleID: id, JobDefinitionID: def, ScheduledAt: at, MaxAttempts: 1, Params: params})
		}
		p.Jobs = append(p.Jobs, chimedb.FireJob{ScheduleID: late, JobDefinitionID: free.ID, ScheduledAt: at.Add(-time.Minute), MaxAttempts: 1, CatchUp: true, MissedFires: 3})
		for _, id := range []int64{a, b, c, forbid, other, late} {
			p.Triggers = append(p.Triggers, chimedb.TriggerRow{ScheduleID: id, LastFireAt: &at})
		}
		res, err := st.WriteFires(ctx, p)
		require.NoError(t, err)
		require.Equal(t, 5, res.Inserted)
		require.Equal(t, 1, res.InsertedCatchUp)
		require.Len(t, res.HandedOff, 2)

		var rows []models.Job
		require.NoError(t, db.Order("schedule_id").Find(&rows).Error)
		require.Len(t, rows, 6)
		status := map[int64]models.Job{}
		for _, r := range rows {
			status[*r.ScheduleID] = r
		}
		for _, id := range []int64{a, b} {
			r := status[id]
			require.Equal(t, models.JobRunning, r.Status, "schedule %d handed off", id)
			require.Equal(t, "n1", r.NodeID)
			require.Equal(t, 1, r.Attempt)
			require.NotNil(t, r.StartedAt)
			require.NotNil(t, r.QueuedAt)
			require.NotNil(t, r.HeartbeatAt)
			require.WithinDuration(t, now, *r.StartedAt, time.Millisecond)
			require.True(t, r.StartedAt.Equal(*r.QueuedAt) && r.StartedAt.Equal(*r.HeartbeatAt))
		}
		for _, id := range []int64{c, forbid, other, late} {
			r := status[id]
			require.Equal(t, models.JobPending, r.Status, "schedule %d not handed off", id)
			require.Empty(t, r.NodeID)
			require.Zero(t, r.Attempt)
			require.Nil(t, r.StartedAt)
		}
		for _, j := range res.HandedOff {
			require.True(t, j.Started)
			require.NotNil(t, j.Definition)
			require.Equal(t, "sleep", j.Definition.TaskType)
			require.NoError(t, j.LoadErr)
			require.Contains(t, []int64{a, b}, *j.ScheduleID)
			require.Equal(t, status[*j.ScheduleID].ID, j.ID)
			require.Equal(t, map[int64]string{a: "a", b: "b"}[*j.ScheduleID], j.ScheduleName)
			require.Equal(t, models.JobRunning, j.Status)
			require.Equal(t, 1, j.Attempt)
			// Built from what the transaction wrote, not read back: it
			// must be the row.
			r := status[*j.ScheduleID]
			require.Equal(t, r.JobDefinitionID, j.JobDefinitionID)
			require.WithinDuration(t, r.ScheduledAt, j.ScheduledAt, time.Millisecond)
			require.WithinDuration(t, r.RunAt, j.RunAt, time.Millisecond)
			require.Equal(t, r.MaxAttempts, j.MaxAttempts)
			require.Equal(t, r.Priority, j.Priority)
			require.Equal(t, r.NodeID, j.NodeID)
			require.Equal(t, r.MissedFires, j.MissedFires)
			require.Equal(t, r.CatchUp, j.CatchUp)
			require.WithinDuration(t, *r.StartedAt, *j.StartedAt, time.Millisecond)
			require.WithinDuration(t, *r.QueuedAt, *j.QueuedAt, time.Millisecond)
			require.WithinDuration(t, *r.HeartbeatAt, *j.HeartbeatAt, time.Millisecond)
			if len(r.Params) == 0 {
				require.Empty(t, j.Params)
			} else {
				require.JSONEq(t, string(r.Params), string(j.Params))
			}
		}

		// The same fires again (a retried commit): duplicates, none handed off.
		p.Now = now.Add(time.Second)
		for i := range p.Triggers {
			p.Triggers[i].FromLastFireAt = &at
		}
		res, err = st.WriteFires(ctx, p)
		require.NoError(t, err)
		require.Equal(t, 6, res.Duplicates)
		require.Empty(t, res.HandedOff)
		var n int64
		require.NoError(t, db.Model(&models.Job{}).Where("status = ?", models.JobRunning).Count(&n).Error)
		require.EqualValues(t, 2, n)
	})
}

// Without slots, or without a node, a fire writes every job pending and
// reads no definition.
func TestWriteFiresNoHandoff(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		db := st.DB()
		free := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "free", TaskType: "sleep"})
		expr := "* * * * * *"
		s := models.Schedule{Name: "a", JobDefinitionID: free.ID, ScheduleType: models.ScheduleCron, CronExpr: &expr, Timezone: "UTC",
			MisfirePolicy: models.MisfireFireOnce, Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive}
		require.NoError(t, db.Create(&s).Error)
		at := time.Now().UTC().Truncate(time.Second)
		for i, p := range []*chimedb.WriteFiresParams{
			{HandoffNode: "n1", HandoffKinds: []string{"sleep"}}, // no slots
			{HandoffKinds: []string{"sleep"}, HandoffSlots: 5},   // no node
		} {
			at := at.Add(time.Duration(i) * time.Second)
			p.Now = at
			p.Jobs = []chimedb.FireJob{{ScheduleID: s.ID, JobDefinitionID: free.ID, ScheduledAt: at, MaxAttempts: 1}}
			p.Triggers = []chimedb.TriggerRow{{ScheduleID: s.ID, LastFireAt: &at}}
			if i > 0 {
				prev := at.Add(-time.Second)
				p.Triggers[0].FromLastFireAt = &prev
			}
			res, err := st.WriteFires(ctx, p)
			require.NoError(t, err)
			require.Equal(t, 1, res.Inserted)
			require.Empty(t, res.HandedOff)
		}
		var n int64
		require.NoError(t, db.Model(&models.Job{}).Where("status = ?", models.JobPending).Count(&n).Error)
		require.EqualValues(t, 2, n)
	})
}

// With HandoffQueued, a fire writes past its running slots up to that many
// more of its hand-off jobs queued on the node (attempt 0, no started_at),
// returned not started; the rest stay pending. Given back (ReleaseJobs),
// a queued one is pending again with no attempt used.
func TestWriteFiresHandoffQueued(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		db := st.DB()
		free := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "free", TaskType: "sleep", MaxAttempts: 3})
		var ids []int64
		at := time.Now().UTC().Truncate(time.Second)
		now := at.Add(3 * time.Millisecond)
		p := &chimedb.WriteFiresParams{Now: now, HandoffNode: "n1", HandoffKinds: []string{"sleep"}, HandoffSlots: 1, HandoffQueued: 2}
		for _, name := range []string{"a", "b", "c", "d"} {
			expr := "* * * * * *"
			s := models.Schedule{Name: name, JobDefinitionID: free.ID, ScheduleType: models.ScheduleCron, CronExpr: &expr, Timezone: "UTC",
				MisfirePolicy: models.MisfireFireOnce, Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive}
			require.NoError(t, db.Create(&s).Error)
			ids = append(ids, s.ID)
			p.Jobs = append(p.Jobs, chimedb.FireJob{ScheduleID: s.ID, JobDefinitionID: free.ID, ScheduledAt: at, MaxAttempts: 3})
			p.Triggers = append(p.Triggers, chimedb.TriggerRow{ScheduleID: s.ID, LastFireAt: &at})
		}
		res, err := st.WriteFires(ctx, p)
		require.NoError(t, err)
		require.Equal(t, 4, res.Inserted)
		require.Len(t, res.HandedOff, 3)

		rows := map[int64]models.Job{}
		var all []models.Job
		require.NoError(t, db.Find(&all).Error)
		for _, r := range all {
			rows[*r.ScheduleID] = r
		}
		require.Equal(t, models.JobRunning, rows[ids[0]].Status)
		require.Equal(t, 1, rows[ids[0]].Attempt)
		for _, id := range ids[1:3] {
			r := rows[id]
			require.Equal(t, models.JobQueued, r.Status, "schedule %d queued on the node", id)
			require.Equal(t, "n1", r.NodeID)
			require.Zero(t, r.Attempt)
			require.Nil(t, r.StartedAt)
			require.Nil(t, r.HeartbeatAt)
			require.NotNil(t, r.QueuedAt)
			require.WithinDuration(t, now, *r.QueuedAt, time.Millisecond)
		}
		require.Equal(t, models.JobPending, rows[ids[3]].Status, "past the slots and the queued")
		var queued []int64
		for i, j := range res.HandedOff {
			r := rows[*j.ScheduleID]
			require.Equal(t, r.ID, j.ID)
			require.Equal(t, r.Status, j.Status)
			require.Equal(t, r.Attempt, j.Attempt)
			require.Equal(t, i == 0, j.Started)
			require.NotNil(t, j.Definition)
			if !j.Started {
				require.Nil(t, j.StartedAt)
				queued = append(queued, j.ID)
			}
		}

		// A queued job never started: given back, its attempt is not used.
		got, err := st.ReleaseJobs(ctx, &chimedb.ReleaseJobsParams{NodeID: "n1", IDs: queued, Now: now, Reason: "test"})
		require.NoError(t, err)
		require.ElementsMatch(t, queued, got)
		for _, id := range queued {
			j := testdb.GetJob(t, st, id)
			require.Equal(t, models.JobPending, j.Status)
			require.Zero(t, j.Attempt)
			require.Empty(t, j.NodeID)
		}
	})
}
