package notify_test

import (
	"context"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/notify"
	"github.com/chimesched/chime/notify/smtptest"
	"github.com/chimesched/chime/store"
)

// A run's final state is emailed as its workflow's notify_on asks, through
// the outbox and a real SMTP conversation: the notice is recorded in the
// transaction that ends the run, and the email says the run's status,
// reason and each step's state. A run that ends as the workflow does not
// ask records no notice.
func TestRunFinalStateIsEmailed(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		ctx := t.Context()
		srv := smtptest.New(t)
		m, err := notify.New(nil, &notify.Config{Host: srv.Host, Port: srv.Port, From: "chime@example.com", TLS: notify.TLSNone})
		require.NoError(t, err)
		t.Cleanup(func() { _ = m.Close(context.Background()) })

		d := testdb.Definition(t, st, nil)
		_, err = st.CreateWorkflow(ctx, &chimedb.WorkflowSpec{Name: "w", NotifyOn: "bogus", Steps: []chimedb.StepSpec{{Name: "a", DefinitionID: d.ID}}})
		require.ErrorIs(t, err, chimedb.ErrInvalid)
		g, err := st.CreateWorkflow(ctx, &chimedb.WorkflowSpec{Name: "etl", NotifyOn: models.NotifyFailure, NotifyEmails: " ops@example.com ",
			Steps: []chimedb.StepSpec{{Name: "extract", DefinitionID: d.ID}, {Name: "load", DefinitionID: d.ID}},
			Edges: []chimedb.EdgeSpec{{From: "extract", To: "load"}}})
		require.NoError(t, err)
		require.Equal(t, "ops@example.com", g.NotifyEmails)

		end := func(status models.JobStatus) *models.WorkflowRun {
			run, err := st.StartRun(ctx, &chimedb.StartRunParams{WorkflowID: g.ID, StartedBy: "test"})
			require.NoError(t, err)
			for {
				var jobs []models.Job
				require.NoError(t, st.DB().Where("run_id = ? AND status = ?", run.ID, models.JobPending).Find(&jobs).Error)
				if len(jobs) == 0 {
					break
				}
				j := jobs[0]
				now := store.DBTime(time.Now())
				require.NoError(t, st.DB().Exec("UPDATE jobs SET status = ?, node_id = 'n', attempt = 1, started_at = ?, heartbeat_at = ? WHERE id = ?",
					models.JobRunning, now, now, j.ID).Error)
				msg := "no rows to extract"
				_, err := st.CompleteJobs(ctx, &chimedb.CompleteJobsParams{NodeID: "n", Outcomes: []chimedb.JobOutcome{
					{ID: j.ID, RunID: run.ID, Status: status, FinishedAt: now, Error: &msg}}})
				require.NoError(t, err)
			}
			var got models.WorkflowRun
			require.NoError(t, st.DB().First(&got, run.ID).Error)
			return &got
		}
		ok := end(models.JobSucceeded)
		require.Equal(t, models.RunSucceeded, ok.Status)
		failed := end(models.JobFailed)
		require.Equal(t, models.RunFailed, failed.Status)

		var ns []models.Notification
		require.NoError(t, st.DB().Where("run_id IS NOT NULL").Find(&ns).Error)
		require.Len(t, ns, 1, "notify_on failure: the succeeded run records no notice")
		require.Equal(t, failed.ID, *ns[0].RunID)
		require.Equal(t, -failed.ID, ns[0].JobID)
		require.EqualValues(t, models.RunFailed, ns[0].JobStatus)

		log := logrus.New()
		log.SetLevel(logrus.PanicLevel)
		s, err := notify.NewSender(st, func() *notify.Mailer { return m }, &notify.SenderConfig{NodeID: "n1", Interval: 50 * time.Millisecond,
			Settle: time.Millisecond, Logger: log})
		require.NoError(t, err)
		require.NoError(t, s.Start(t.Context()))
		t.Cleanup(func() { _ = s.Stop(context.Background()) })
		deadline := time.Now().Add(30 * time.Second)
		for {
			require.NoError(t, st.DB().First(&ns[0], ns[0].ID).Error)
			if ns[0].Status != models.NotificationPending {
				break
			}
			require.True(t, time.Now().Before(deadline), "the run's notice is still pending: %+v", ns[0])
			time.Sleep(20 * time.Millisecond) // the poll step of a wait with a deadline: the row is the sender's only trace
		}
		require.NoError(t, s.Stop(context.Background()))
		require.Equal(t, models.NotificationSent, ns[0].Status, "last error: %v", ns[0].LastError)

		msgs := srv.Messages()
		require.Len(t, msgs, 1)
		require.Equal(t, []string{"ops@example.com"}, msgs[0].To)
		require.Contains(t, msgs[0].Header("Subject"), "workflow etl run 2 failed (started by test)")
		body := msgs[0].Text()
		require.Contains(t, body, "Reason:")
		require.Contains(t, body, "step extract failed")
		require.Regexp(t, `extract\s+failed\s+job \d+`, body)
		require.Regexp(t, `load\s+skipped\s+-`, body)
	})
}
