package taskengine

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// With the paper's 4 s poll, jobs written as due now and followed by Wake
// (what the schedule engine does after a fire) start in milliseconds. The
// test reports p50/p99 of started_at − scheduled_at; its only assertion is
// that the median is far below the poll interval, i.e. that Wake, not the
// poll, started them.
func TestStartLatenessWithWake(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		db := st.DB()
		def := testdb.Definition(t, st, &testdb.DefinitionOpts{Name: "tick", DefaultParams: `{"duration":"0s"}`}).ID
		cfg := testConfig(t, nodeName(t))
		cfg.PollInterval = 4 * time.Second
		e := startEngine(t, st, cfg)
		waitClaimAfter(t, e, 0) // the first (startup) claim is over: only Wake claims from here
		const n = 40
		ids := make([]int64, 0, n)
		for i := 0; i < n; i++ {
			at := store.DBTime(time.Now())
			j := models.Job{JobDefinitionID: def, ScheduledAt: at, RunAt: at, Status: models.JobPending}
			require.NoError(t, db.Create(&j).Error)
			// One job per wake, each claim seen through before the next
			// job: the fires of a schedule engine come one by one.
			mark := claimMark(e)
			e.Wake()
			ids = append(ids, j.ID)
			waitClaimAfter(t, e, mark)
		}
		lat := make([]time.Duration, 0, n)
		for _, id := range ids {
			j := waitOutcome(t, e, st, id, models.JobSucceeded)
			lat = append(lat, j.StartedAt.Sub(j.ScheduledAt))
		}
		p50, p99 := percentiles(lat)
		t.Logf("start lateness over %d jobs (poll 4s, Wake on insert): p50=%v p99=%v", n, p50, p99)
		require.Less(t, p50, time.Second, "jobs waited for the poll: Wake did not work")
	})
}

func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2], s[min(len(s)-1, len(s)*99/100)]
}
