package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

func TestListNotifications(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st)
		for i, n := range []models.Notification{
			{JobID: 7, JobStatus: models.JobFailed, Attempt: 1, Recipients: "ops@example.com", Status: models.NotificationSent},
			{JobID: 8, JobStatus: models.JobCanceled, Recipients: "ops@example.com", Status: models.NotificationPending},
			{JobID: 7, JobStatus: models.JobFailed, Attempt: 2, Recipients: "ops@example.com", Status: models.NotificationFailed},
		} {
			n.NextAttemptAt = store.DBTime(n.NextAttemptAt)
			require.NoError(t, st.DB().Create(&n).Error, i)
		}
		page := func(q string) List[models.Notification] {
			rec := b.call("GET", "/api/v1/notifications"+q, "")
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			var l List[models.Notification]
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &l))
			return l
		}
		all := page("")
		require.Len(t, all.Items, 3)
		require.Equal(t, int64(8), all.Items[1].JobID, "newest first")

		first := page("?job_id=7&limit=1")
		require.Len(t, first.Items, 1)
		require.Equal(t, 2, first.Items[0].Attempt)
		require.NotEmpty(t, first.NextCursor)
		second := page(fmt.Sprintf("?job_id=7&limit=1&cursor=%s", first.NextCursor))
		require.Len(t, second.Items, 1)
		require.Equal(t, 1, second.Items[0].Attempt)
		require.Empty(t, second.NextCursor)

		pending := page("?status=pending")
		require.Len(t, pending.Items, 1)
		require.Equal(t, models.JobCanceled, pending.Items[0].JobStatus)

		for _, q := range []string{"?job_id=x", "?job_id=-1", "?status=lost", "?job=7"} {
			require.Equal(t, http.StatusBadRequest, b.call("GET", "/api/v1/notifications"+q, "").Code, q)
		}
	})
}
