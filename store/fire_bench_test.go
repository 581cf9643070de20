package store_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// BenchmarkWriteFires500 measures one fire transaction of 500 schedules in
// isolation (MariaDB): the status and trigger check, the jobs INSERT and
// the trigger advance, as the schedule engine's writer sends it for a cron herd. With
// complete=1 in the name it also marks the 500 schedules completed, as a
// herd of once schedules does.
func BenchmarkWriteFires500(b *testing.B) {
	if os.Getenv(testdb.EnvDSN) == "" {
		b.Skipf("%s not set", testdb.EnvDSN)
	}
	for _, complete := range []bool{false, true} {
		name := "cron"
		if complete {
			name = "once-complete"
		}
		b.Run(name, func(b *testing.B) {
			const n = 500
			st := testdb.Open(b, store.MySQL)
			ctx := context.Background()
			db := st.DB()
			def := models.JobDefinition{Name: "d", TaskType: "sleep", MaxAttempts: 1, NotifyOn: models.NotifyNever}
			if err := db.Create(&def).Error; err != nil {
				b.Fatal(err)
			}
			expr := "* * * * * *"
			scheds := make([]models.Schedule, n)
			for i := range scheds {
				scheds[i] = models.Schedule{Name: "s" + string(rune('a'+i%26)) + time.Duration(i).String(), JobDefinitionID: def.ID,
					ScheduleType: models.ScheduleCron, CronExpr: &expr, Timezone: "UTC", MisfirePolicy: models.MisfireFireOnce,
					Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive}
			}
			if err := db.CreateInBatches(&scheds, 500).Error; err != nil {
				b.Fatal(err)
			}
			base := time.Now().UTC().Truncate(time.Second)
			params := func(k int) *chimedb.WriteFiresParams {
				at := base.Add(time.Duration(k) * time.Second)
				next := at.Add(time.Second)
				var from *time.Time // where the previous iteration left the trigger
				if k > 0 {
					prev := at.Add(-time.Second)
					from = &prev
				}
				p := &chimedb.WriteFiresParams{Now: time.Now()}
				for _, s := range scheds {
					p.Jobs = append(p.Jobs, chimedb.FireJob{ScheduleID: s.ID, JobDefinitionID: def.ID, ScheduledAt: at, MaxAttempts: 1})
					p.Triggers = append(p.Triggers, chimedb.TriggerRow{ScheduleID: s.ID, LastFireAt: &at, NextFireAt: &next, FiredCount: int64(k + 1), FromLastFireAt: from})
					if complete {
						p.Complete = append(p.Complete, s.ID)
					}
				}
				return p
			}
			// Warm up: create the trigger rows, so the loop measures updates.
			if _, err := st.WriteFires(ctx, params(0)); err != nil {
				b.Fatal(err)
			}
			if complete {
				// Completing needs active rows every time.
				b.StopTimer()
			}
			for k := 1; k <= b.N; k++ {
				p := params(k)
				if complete {
					if err := db.Model(&models.Schedule{}).Where("1 = 1").Update("status", models.ScheduleActive).Error; err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				res, err := st.WriteFires(ctx, p)
				if complete {
					b.StopTimer()
				}
				if err != nil {
					b.Fatal(err)
				}
				if res.Inserted != n {
					b.Fatalf("inserted %d, want %d", res.Inserted, n)
				}
			}
		})
	}
}
