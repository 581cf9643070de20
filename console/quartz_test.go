package console_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// The schedule form offers the cron syntax, the DST policy and the
// calendars, and saves them.
func TestScheduleFormSyntaxAndCalendar(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, testToken)
		defID, _ := seed(t, st, "nightly")
		cal := &models.Calendar{Name: "holidays", Kind: models.CalendarHoliday, Definition: models.JSON(`{"dates":["2030-12-25"]}`), Timezone: "UTC"}
		require.NoError(t, st.Admin().CreateCalendar(context.Background(), cal))
		c := s.client()
		csrf := s.login(c)
		_, body := s.get(c, "/schedules/new")
		require.Contains(t, body, `name="cron_syntax"`)
		require.Contains(t, body, `name="dst_policy"`)
		require.Contains(t, body, `holidays (holiday)`)

		form := url.Values{"csrf": {csrf}, "name": {"sundays"}, "job_definition_id": {itoa(defID)}, "schedule_type": {"cron"},
			"cron_expr": {"0 0 0 ? * 1"}, "cron_syntax": {"quartz"}, "dst_policy": {"once"}, "calendar_id": {itoa(cal.ID)},
			"timezone": {"UTC"}, "misfire_policy": {"fire_once"}, "concurrency": {"allow"}, "status": {"active"}}
		resp, _ := s.post(c, "/schedules/new", form)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		rows, err := st.Admin().ListSchedules(context.Background(), &chimedb.AdminListParams{Name: "sundays", Limit: 1})
		require.NoError(t, err)
		require.Len(t, rows, 1)
		require.Equal(t, models.SyntaxQuartz, rows[0].CronSyntax)
		require.Equal(t, cal.ID, *rows[0].CalendarID)
	})
}
