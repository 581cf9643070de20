package scheduleengine

import (
	"fmt"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"

	"github.com/chimesched/chime/internal/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// BenchmarkFireHerd measures the thundering herd: 1,000 schedules due at the
// same instant, written by runOnce in batches. One op is one herd.
func BenchmarkFireHerd(b *testing.B) {
	for _, d := range testdb.Dialects {
		b.Run(string(d), func(b *testing.B) {
			st := testdb.Open(b, d)
			benchHerd(b, st, 1000)
		})
	}
}

func benchHerd(b *testing.B, st *store.Store, n int) {
	start := time.Now().UTC().Truncate(time.Minute).Add(time.Minute)
	clock := clockwork.NewFakeClockAt(start)
	log := logrus.New()
	log.SetLevel(logrus.ErrorLevel)
	e, err := New(NewDBStore(st), &Config{NodeID: "bench", Clock: clock, Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	def := models.JobDefinition{Name: "bench", TaskType: "sleep", NotifyOn: models.NotifyNever, MaxAttempts: 1}
	if err := st.DB().Create(&def).Error; err != nil {
		b.Fatal(err)
	}
	scheds := make([]models.Schedule, n)
	for i := range scheds {
		scheds[i] = models.Schedule{
			Name: fmt.Sprintf("s%d", i), JobDefinitionID: def.ID, ScheduleType: models.ScheduleCron, CronExpr: ptr("* * * * * *"),
			Timezone: "UTC", MisfirePolicy: models.MisfireFireOnce, Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive,
			CreatedAt: start,
		}
	}
	if err := st.DB().CreateInBatches(scheds, 500).Error; err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	e.tick(ctx, start) // lease, load, triggers, the first herd
	if !e.IsLeader() {
		b.Fatal("not leader")
	}
	now := start
	b.ResetTimer()
	for b.Loop() {
		now = now.Add(time.Second)
		clock.Advance(time.Second)
		if err := e.runOnce(ctx, now); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "fires/s")
	var got int64
	st.DB().Model(&models.Job{}).Count(&got)
	if want := int64(n) * int64(b.N+1); got != want {
		b.Fatalf("wrote %d jobs, want %d", got, want)
	}
}
