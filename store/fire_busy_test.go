package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// An admin's session that holds a schedule's row (an UPDATE not committed
// yet, a client left in a transaction) must not hold up the fires of the
// other schedules in the batch: the held schedule is reported busy, with
// nothing written for it, and the rest commit at once.
func TestWriteFiresPassesOverHeldSchedules(t *testing.T) {
	t.Parallel()
	testdb.ForEachServer(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		db := st.DB()
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "d", TaskType: "sleep"})
		expr := "* * * * * *"
		var ids []int64
		for _, name := range []string{"a", "held", "c"} {
			s := models.Schedule{Name: name, JobDefinitionID: def.ID, ScheduleType: models.ScheduleCron, CronExpr: &expr, Timezone: "UTC",
				MisfirePolicy: models.MisfireFireOnce, Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive}
			require.NoError(t, db.Create(&s).Error)
			ids = append(ids, s.ID)
		}
		held := ids[1]

		admin, err := st.SQL().BeginTx(ctx, nil)
		require.NoError(t, err)
		defer func() { _ = admin.Rollback() }()
		_, err = admin.ExecContext(ctx, "UPDATE schedules SET name = 'held-renamed' WHERE id = ?", held)
		require.NoError(t, err)

		at := time.Now().UTC().Truncate(time.Second)
		p := &chimedb.WriteFiresParams{Now: at}
		for _, id := range ids {
			p.Jobs = append(p.Jobs, chimedb.FireJob{ScheduleID: id, JobDefinitionID: def.ID, ScheduledAt: at, MaxAttempts: 1})
			p.Triggers = append(p.Triggers, chimedb.TriggerRow{ScheduleID: id, LastFireAt: &at})
		}
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		res, err := st.WriteFires(wctx, p)
		require.NoError(t, err, "the batch waited on the held schedule")
		require.Equal(t, []int64{held}, res.Busy)
		require.Empty(t, res.Inactive)
		require.Equal(t, 2, res.Inserted)
		var jobs []models.Job
		require.NoError(t, db.Order("schedule_id").Find(&jobs).Error)
		require.Len(t, jobs, 2)
		require.NotEqual(t, held, *jobs[0].ScheduleID)
		require.NotEqual(t, held, *jobs[1].ScheduleID)
		var n int64
		require.NoError(t, db.Model(&models.TimeTrigger{}).Where("schedule_id = ?", held).Count(&n).Error)
		require.Zero(t, n, "nothing of the held schedule is written, its trigger included")

		// Once the admin commits, the schedule fires like any other.
		require.NoError(t, admin.Commit())
		p2 := &chimedb.WriteFiresParams{Now: at,
			Jobs:     []chimedb.FireJob{{ScheduleID: held, JobDefinitionID: def.ID, ScheduledAt: at, MaxAttempts: 1}},
			Triggers: []chimedb.TriggerRow{{ScheduleID: held, LastFireAt: &at}}}
		res, err = st.WriteFires(ctx, p2)
		require.NoError(t, err)
		require.Empty(t, res.Busy)
		require.Equal(t, 1, res.Inserted)
	})
}

// Two batches of disjoint schedules, the first held open before its
// commit as a fire prepared ahead is: the second must not wait for it.
// A read of the trigger rows that the server plans as a scan of the whole
// table locks the first batch's rows on its way (MariaDB chose that for
// an IN list of 500 ids).
func TestWriteFiresBesideAHeldBatch(t *testing.T) {
	t.Parallel()
	testdb.ForEachServer(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		db := st.DB()
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "d", TaskType: "sleep"})
		expr := "* * * * * *"
		scheds := make([]models.Schedule, 1000)
		for i := range scheds {
			scheds[i] = models.Schedule{Name: fmt.Sprintf("s%04d", i), JobDefinitionID: def.ID, ScheduleType: models.ScheduleCron,
				CronExpr: &expr, Timezone: "UTC", MisfirePolicy: models.MisfireFireOnce, Concurrency: models.ConcurrencyAllow,
				Status: models.ScheduleActive}
		}
		require.NoError(t, db.CreateInBatches(&scheds, 500).Error)
		at := time.Now().UTC().Truncate(time.Second)
		batch := func(ss []models.Schedule, at time.Time) *chimedb.WriteFiresParams {
			p := &chimedb.WriteFiresParams{Now: at}
			for _, s := range ss {
				p.Jobs = append(p.Jobs, chimedb.FireJob{ScheduleID: s.ID, JobDefinitionID: def.ID, ScheduledAt: at, MaxAttempts: 1})
				p.Triggers = append(p.Triggers, chimedb.TriggerRow{ScheduleID: s.ID, LastFireAt: &at})
			}
			return p
		}
		// Every schedule gets its trigger row first.
		res, err := st.WriteFires(ctx, batch(scheds, at))
		require.NoError(t, err)
		require.Equal(t, 1000, res.Inserted)

		next := at.Add(time.Second)
		first, second := batch(scheds[:500], next), batch(scheds[500:], next)
		for _, p := range []*chimedb.WriteFiresParams{first, second} {
			for i := range p.Triggers {
				p.Triggers[i].FromLastFireAt = &at
			}
		}
		held, release := make(chan struct{}), make(chan struct{})
		first.BeforeCommit = func(context.Context) error {
			close(held)
			<-release
			return nil
		}
		done := make(chan error, 1)
		go func() {
			_, err := st.WriteFires(ctx, first)
			done <- err
		}()
		<-held
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		res, err = st.WriteFires(wctx, second)
		close(release)
		require.NoError(t, err, "the second batch waited for the first")
		require.Equal(t, 500, res.Inserted)
		require.Empty(t, res.Busy)
		require.NoError(t, <-done)
	})
}
