package notify_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/notify"
	"github.com/chimesched/chime/notify/smtptest"
	"github.com/chimesched/chime/store"
)

// A notice refused for good (a 5xx reply, a recipient that is no address)
// is failed at once, with the reason in last_error and in the job's log,
// and counted; a sent one is marked sent.
func TestSenderGivesUpOnPermanentFailures(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		srv := smtptest.New(t)
		srv.RejectNext(smtptest.PermFailure)
		m, err := notify.New(nil, &notify.Config{Host: srv.Host, Port: srv.Port, From: "chime@example.com", TLS: notify.TLSNone})
		require.NoError(t, err)
		t.Cleanup(func() { _ = m.Close(context.Background()) })

		def := testdb.Definition(t, st, nil)
		now := store.DBTime(time.Now().Add(-time.Minute))
		var ids []int64
		for _, to := range []string{"ops@example.com", "not an address", "ops@example.com"} {
			j := testdb.Job(t, st, &testdb.JobOpts{DefinitionID: def.ID, Status: models.JobFailed, NodeID: "n1", Attempt: 1, Heartbeat: &now})
			n := models.Notification{JobID: j.ID, JobStatus: models.JobFailed, Attempt: 1, Recipients: to,
				Status: models.NotificationPending, NextAttemptAt: now, CreatedAt: now}
			require.NoError(t, st.DB().Create(&n).Error)
			ids = append(ids, n.ID)
		}
		var failures atomic.Int32
		log := logrus.New()
		log.SetLevel(logrus.PanicLevel)
		s, err := notify.NewSender(st, func() *notify.Mailer { return m }, &notify.SenderConfig{NodeID: "n1", Interval: 50 * time.Millisecond,
			Settle: time.Millisecond, Logger: log, OnFailure: func(int64, error) { failures.Add(1) }})
		require.NoError(t, err)
		require.NoError(t, s.Start(t.Context()))
		t.Cleanup(func() { _ = s.Stop(context.Background()) })

		deadline := time.Now().Add(30 * time.Second)
		var ns []models.Notification
		for {
			require.NoError(t, st.DB().Order("id").Find(&ns).Error)
			if ns[0].Status != models.NotificationPending && ns[1].Status != models.NotificationPending && ns[2].Status != models.NotificationPending {
				break
			}
			require.True(t, time.Now().Before(deadline), "notices still pending: %+v", ns)
			time.Sleep(20 * time.Millisecond) // the poll step of a wait with a deadline: the rows are the sender's only trace
		}
		require.NoError(t, s.Stop(context.Background()))
		require.Equal(t, ids[0], ns[0].ID)
		// The server refuses the first message it gets, whichever notice.
		var sent, refused int
		for _, i := range []int{0, 2} {
			require.Equal(t, 1, ns[i].Attempts)
			switch ns[i].Status {
			case models.NotificationSent:
				sent++
			case models.NotificationFailed:
				refused++
				require.Contains(t, *ns[i].LastError, "550")
			}
		}
		require.Equal(t, 1, sent)
		require.Equal(t, 1, refused)
		require.Equal(t, models.NotificationFailed, ns[1].Status)
		require.Contains(t, *ns[1].LastError, `recipient "not an address" is not an email address`)
		require.Equal(t, int32(2), failures.Load())
		require.Equal(t, 2, srv.Attempts(), "no SMTP conversation for a bad recipient")
		tail, err := st.TailLogs(context.Background(), ns[1].JobID, 5)
		require.NoError(t, err)
		require.Contains(t, tail[len(tail)-1], "notify: completion email not sent after 1 attempts")
	})
}
