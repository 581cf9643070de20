package console_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// The definition and schedule forms edit priority (empty on a schedule:
// the definition's), refuse one out of range at its field, and the
// schedule and job pages show it.
func TestPriorityForms(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, testToken)
		defID, schID := seed(t, st, "nightly")
		c := s.client()
		csrf := s.login(c)
		ctx := context.Background()

		_, body := s.get(c, "/definitions/"+itoa(defID)+"/edit")
		require.Regexp(t, `name="priority"[^>]*value="5"`, body, "the column's default, prefilled")
		def := url.Values{"csrf": {csrf}, "name": {"nightly-def"}, "task_type": {"sleep"}, "default_params": {`{"duration": "10ms"}`},
			"max_attempts": {"1"}, "retry_backoff_seconds": {"10"}, "timeout_seconds": {"0"}, "notify_on": {"never"}, "priority": {"11"}}
		resp, body := s.post(c, "/definitions/"+itoa(defID)+"/edit", def)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
		require.Regexp(t, `class="field-error" id="e-priority">priority must be from 1`, body)
		def.Set("priority", "8")
		resp, body = s.post(c, "/definitions/"+itoa(defID)+"/edit", def)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
		d, err := st.Admin().GetDefinition(ctx, defID)
		require.NoError(t, err)
		require.Equal(t, 8, d.Priority)

		_, body = s.get(c, "/schedules/"+itoa(schID))
		require.Contains(t, body, `id="schedule-priority">the definition's (8)`)
		sch := url.Values{"csrf": {csrf}, "name": {"nightly"}, "job_definition_id": {itoa(defID)}, "schedule_type": {"cron"},
			"cron_expr": {"*/5 * * * *"}, "timezone": {"UTC"}, "misfire_policy": {"fire_once"}, "concurrency": {"allow"}, "status": {"active"},
			"priority": {"3"}}
		resp, body = s.post(c, "/schedules/"+itoa(schID)+"/edit", sch)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
		got, err := st.Admin().GetSchedule(ctx, schID)
		require.NoError(t, err)
		require.Equal(t, 3, *got.Priority)
		_, body = s.get(c, "/schedules/"+itoa(schID)+"/edit")
		require.Regexp(t, `name="priority"[^>]*value="3"`, body)
		_, body = s.get(c, "/schedules/"+itoa(schID))
		require.Contains(t, body, `id="schedule-priority">3<`)
		sch.Set("priority", "")
		resp, body = s.post(c, "/schedules/"+itoa(schID)+"/edit", sch)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
		got, err = st.Admin().GetSchedule(ctx, schID)
		require.NoError(t, err)
		require.Nil(t, got.Priority, "empty: the definition's")

		j := &models.Job{ScheduleID: &schID, JobDefinitionID: defID, ScheduledAt: time.Now(), RunAt: time.Now(), MaxAttempts: 1, Priority: 9}
		require.NoError(t, st.Admin().InsertJob(ctx, j, "hello"))
		_, body = s.get(c, "/jobs/"+itoa(j.ID))
		require.Contains(t, body, `id="job-priority">9<`)
	})
}
