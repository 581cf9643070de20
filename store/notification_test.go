package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

func notices(t *testing.T, st *store.Store) []models.Notification {
	t.Helper()
	var ns []models.Notification
	require.NoError(t, st.DB().Order("id").Find(&ns).Error)
	return ns
}

// Two paths ending one job (a recovery and a cancel racing, say) record
// one notice; a definition that wants none records none.
func TestNoticesRecordedOnceWithTheFinalState(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		def := testdb.Definition(t, st, nil)
		require.NoError(t, st.DB().Exec("UPDATE job_definitions SET notify_on = 'failure', notify_emails = 'ops@example.com' WHERE id = ?", def.ID).Error)
		old := store.DBTime(time.Now().Add(-time.Hour))
		j := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Status: models.JobRunning, NodeID: "gone", Attempt: 1, Heartbeat: &old})
		res, err := st.RecoverNode(ctx, &chimedb.RecoverNodeParams{NodeID: "gone", Now: time.Now()})
		require.NoError(t, err)
		require.Equal(t, []int64{j.ID}, res.Failed)
		// The reconciler finds nothing left; a stop through the API is refused.
		_, err = st.RecoverStalledJobs(ctx, time.Second)
		require.NoError(t, err)
		_, err = st.Admin().ControlJob(ctx, j.ID, models.ControlStop)
		require.ErrorIs(t, err, chimedb.ErrJobState)
		ns := notices(t, st)
		require.Len(t, ns, 1)
		require.Equal(t, j.ID, ns[0].JobID)
		require.Equal(t, models.JobFailed, ns[0].JobStatus)
		require.Equal(t, 1, ns[0].Attempt)
		require.Equal(t, "ops@example.com", ns[0].Recipients)

		// The completer's path writes its notice with the outcome, once even
		// when the same outcome is written twice.
		k := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Status: models.JobRunning, NodeID: "n1", Attempt: 1, Heartbeat: &old})
		out := chimedb.JobOutcome{ID: k.ID, Status: models.JobStopped, FinishedAt: time.Now(),
			Notice: &chimedb.OutcomeNotice{Attempt: 1, Recipients: "a@example.com",
				Attachments: []models.NotificationAttachment{{Name: "r.csv", Data: []byte("a,b\n")}}}}
		applied, err := st.CompleteJobs(ctx, &chimedb.CompleteJobsParams{NodeID: "n1", Outcomes: []chimedb.JobOutcome{out, out}})
		require.NoError(t, err)
		require.Equal(t, []int64{k.ID}, applied)
		ns = notices(t, st)
		require.Len(t, ns, 2)
		require.Equal(t, models.JobStopped, ns[1].JobStatus)
		require.JSONEq(t, `[{"name":"r.csv","data":"YSxiCg=="}]`, string(ns[1].Attachments))

		// notify_on = never: a cancel records nothing.
		quiet := models.JobDefinition{Name: "quiet", TaskType: "sleep", MaxAttempts: 1, NotifyOn: models.NotifyNever, NotifyEmails: "ops@example.com"}
		require.NoError(t, st.DB().Create(&quiet).Error)
		q := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: quiet.ID, Status: models.JobPending})
		_, err = st.Admin().ControlJob(ctx, q.ID, models.ControlStop)
		require.NoError(t, err)
		require.Len(t, notices(t, st), 2)

		// Retention takes a job's notices with it.
		require.NoError(t, st.DB().Exec("UPDATE jobs SET finished_at = ?, run_at = ?", old, old).Error)
		n, err := st.DeleteFinishedJobs(ctx, time.Minute, 100)
		require.NoError(t, err)
		require.Equal(t, 3, n)
		require.Empty(t, notices(t, st))
	})
}

// Of several nodes claiming at once, one gets each notice; a report from
// a node whose claim was taken over changes nothing.
func TestClaimNotificationsOneNodeEach(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		for i := range 20 {
			require.NoError(t, st.DB().Create(&models.Notification{JobID: int64(i + 1), JobStatus: models.JobFailed,
				Recipients: "ops@example.com", Status: models.NotificationPending,
				NextAttemptAt: store.DBTime(time.Now().Add(-time.Minute)), CreatedAt: store.DBTime(time.Now().Add(-time.Minute))}).Error)
		}
		var mu sync.Mutex
		got := map[int64]string{}
		var wg sync.WaitGroup
		for _, node := range []string{"a", "b", "c"} {
			wg.Go(func() {
				for {
					ds, err := st.ClaimNotifications(ctx, &models.NotificationClaim{NodeID: node, Limit: 3, Lease: time.Minute})
					if !assertNoErr(t, err) || len(ds) == 0 {
						return
					}
					mu.Lock()
					for _, d := range ds {
						if prev, dup := got[d.ID]; dup {
							t.Errorf("notice %d claimed by %s and %s", d.ID, prev, node)
						}
						got[d.ID] = node
						if d.Job != nil {
							t.Errorf("notice %d: no such job, want nil Job", d.ID)
						}
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		require.Len(t, got, 20)

		// A lease run out: another node claims the notice again; the first
		// node's late report is refused, the second's written.
		var n models.Notification
		require.NoError(t, st.DB().Take(&n).Error)
		require.Equal(t, 1, n.Attempts)
		require.NoError(t, st.DB().Exec("UPDATE notifications SET next_attempt_at = ? WHERE id = ?", store.DBTime(time.Now().Add(-time.Second)), n.ID).Error)
		ds, err := st.ClaimNotifications(ctx, &models.NotificationClaim{NodeID: "d", Limit: 1, Lease: time.Minute})
		require.NoError(t, err)
		require.Len(t, ds, 1)
		require.Equal(t, 2, ds[0].Attempts)
		mine, err := st.FinishNotification(ctx, &models.NotificationResult{ID: n.ID, Attempts: 1, Sent: true})
		require.NoError(t, err)
		require.False(t, mine)
		mine, err = st.FinishNotification(ctx, &models.NotificationResult{ID: n.ID, Attempts: 2, Error: "451 later", RetryIn: time.Hour})
		require.NoError(t, err)
		require.True(t, mine)
		require.NoError(t, st.DB().Take(&n, n.ID).Error)
		require.Equal(t, models.NotificationPending, n.Status)
		require.Equal(t, "451 later", *n.LastError)
		require.Equal(t, "d", n.NodeID)
		require.Greater(t, time.Until(n.NextAttemptAt), 50*time.Minute)
	})
}

func assertNoErr(t *testing.T, err error) bool {
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}
