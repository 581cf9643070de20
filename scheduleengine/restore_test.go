package scheduleengine

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// pagedStore records the pages of each full read and runs hook before a
// page is read.
type pagedStore struct {
	*store.Store
	mu    sync.Mutex
	reads [][]int64 // ids returned, one slice per full read
	calls []int64   // AfterID of every full read's page, in order
	hook  func(ctx context.Context, p *chimedb.LoadSchedulesParams)
}

func (s *pagedStore) LoadSchedules(ctx context.Context, p *chimedb.LoadSchedulesParams) (*chimedb.LoadSchedulesResult, error) {
	s.mu.Lock()
	hook := s.hook
	s.mu.Unlock()
	if hook != nil {
		hook(ctx, p)
	}
	res, err := s.Store.LoadSchedules(ctx, p)
	if err != nil || p.ChangedSince != nil {
		return res, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, p.AfterID)
	if p.AfterID == 0 {
		s.reads = append(s.reads, nil)
	}
	for _, r := range res.Rows {
		s.reads[len(s.reads)-1] = append(s.reads[len(s.reads)-1], r.Schedule.ID)
	}
	return res, nil
}

// A restore reads the schedules in pages, each a read of its own: rows
// inserted and edited while it runs must each be seen exactly once by it,
// and an edit to a row whose page was already read must reach the engine
// at the next sync, even when a later page holds a row updated long after
// the edit (the watermark must not skip past it).
func TestPagedRestoreSeesEveryScheduleOnce(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ps := &pagedStore{Store: st}
		b := setupWithClock(t, ps, "n1", newClock(), func(c *Config) { c.SyncPageSize = 3 })
		start := b.clock.Now()
		var scheds []models.Schedule
		for i := range 10 {
			scheds = append(scheds, b.schedule(t, models.Schedule{Name: "s" + string(rune('a'+i)), ScheduleType: models.ScheduleCron,
				CronExpr: ptr("0 0 1 1 *")}, start.Add(-time.Hour)))
		}
		var added models.Schedule
		var once sync.Once
		ps.hook = func(_ context.Context, p *chimedb.LoadSchedulesParams) {
			if p.ChangedSince != nil || p.AfterID == 0 {
				return
			}
			once.Do(func() {
				// After the first page: edit a row already read, and add one
				// updated a minute after the edit.
				db := st.DB()
				require.NoError(t, db.Model(&models.Schedule{}).Where("id = ?", scheds[0].ID).
					Updates(map[string]any{"cron_expr": "0 0 2 1 *", "updated_at": store.DBTime(start)}).Error)
				added = models.Schedule{Name: "added", JobDefinitionID: b.def.ID, ScheduleType: models.ScheduleCron, CronExpr: ptr("0 0 1 1 *"),
					Timezone: "UTC", MisfirePolicy: models.MisfireFireOnce, Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive,
					CreatedAt: store.DBTime(start), UpdatedAt: store.DBTime(start.Add(time.Minute))}
				require.NoError(t, db.Create(&added).Error)
			})
		}

		b.at(t, start.Add(time.Second))
		ps.mu.Lock()
		require.NotEmpty(t, ps.reads)
		first := ps.reads[0]
		ps.mu.Unlock()
		want := []int64{added.ID}
		for _, s := range scheds {
			want = append(want, s.ID)
		}
		slices.Sort(want)
		require.Equal(t, want, first, "the first full read returns each schedule once, in id order, the one added during it too")
		for _, id := range want {
			triggerOf(t, st, id) // the leader created every trigger row
		}

		b.at(t, start.Add(3*time.Second)) // the next sync, a ChangedSince read
		edited := reload(t, st, scheds[0])
		require.Equal(t, specHash(&edited, nil), triggerOf(t, st, edited.ID).SpecHash,
			"the edit made during the paged read reached the engine at the next sync")
	})
}

// A node that starts leading while a read begun as a standby is in flight
// stops that read and starts the one it needs, instead of reading every
// remaining page first.
func TestLeadDuringReadStartsAFreshRead(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ps := &pagedStore{Store: st}
		lead := &switchLeadership{}
		b := setupWithClock(t, ps, "n1", newClock(), func(c *Config) { c.SyncPageSize = 2; c.Leadership = lead })
		start := b.clock.Now()
		for i := range 9 {
			b.schedule(t, models.Schedule{Name: "s" + string(rune('a'+i)), ScheduleType: models.ScheduleCron, CronExpr: ptr("0 0 1 1 *")}, start.Add(-time.Hour))
		}
		entered, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		ps.hook = func(_ context.Context, p *chimedb.LoadSchedulesParams) {
			if p.ChangedSince == nil && p.AfterID > 0 {
				once.Do(func() {
					close(entered)
					<-release
				})
			}
		}
		require.NoError(t, b.e.Start(context.WithoutCancel(t.Context())))
		b.started = true
		<-entered // the standby's read holds its second page
		lead.set(true)
		require.Eventually(t, func() bool { return b.e.IsLeader() }, 10*time.Second, time.Millisecond)
		close(release)
		b.at(t, start.Add(time.Second))
		ps.mu.Lock()
		defer ps.mu.Unlock()
		require.GreaterOrEqual(t, len(ps.reads), 2)
		require.Equal(t, []int64{0}, ps.calls[:1], "the standby's read got its first page")
		require.Equal(t, int64(0), ps.calls[1], "then, leading, a fresh read from the start: the standby's stopped")
		require.Len(t, ps.reads[1], 9)
	})
}
