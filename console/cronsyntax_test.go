package console_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

// A Quartz expression with the standard syntax selected: the form and its
// live preview say it is Quartz's and how to choose that syntax, instead
// of previewing it as standard (where 1 is Monday).
func TestScheduleFormQuartzUnderStandardSyntax(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, testToken)
		defID, _ := seed(t, st, "nightly")
		c := s.client()
		csrf := s.login(c)
		form := url.Values{"csrf": {csrf}, "name": {"noon"}, "job_definition_id": {itoa(defID)}, "schedule_type": {"cron"},
			"cron_expr": {"0 0 12 ? * 1"}, "cron_syntax": {"standard"}, "dst_policy": {"once"},
			"timezone": {"UTC"}, "misfire_policy": {"fire_once"}, "concurrency": {"allow"}, "status": {"active"}}

		type answer struct {
			Fires []string `json:"fires"`
			Error string   `json:"error"`
			Field string   `json:"field"`
		}
		for expr, what := range map[string]string{"0 0 12 ? * 1": `"?" in day-of-month is Quartz syntax`, "0 15 10 * * 6L": `"6L" in day-of-week is Quartz syntax`} {
			form.Set("cron_expr", expr)
			resp, body := s.post(c, "/schedules/preview", form)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			var preview answer
			require.NoError(t, json.Unmarshal([]byte(body), &preview), body)
			require.Empty(t, preview.Fires, expr)
			require.Equal(t, "cron_expr", preview.Field, expr)
			require.Contains(t, preview.Error, what, expr)
			require.Contains(t, preview.Error, "set cron_syntax to quartz", expr)
			require.NotContains(t, preview.Error, "strconv", expr)

			resp, body = s.post(c, "/schedules/new", form)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode)
			require.Regexp(t, `(?s)id="e-cron_expr">[^<]*set cron_syntax to quartz`, body)
		}

		// Choosing quartz previews Quartz's Sundays.
		form.Set("cron_expr", "0 0 12 ? * 1")
		form.Set("cron_syntax", "quartz")
		_, body := s.post(c, "/schedules/preview", form)
		var preview answer
		require.NoError(t, json.Unmarshal([]byte(body), &preview), body)
		require.NotEmpty(t, preview.Fires, body)
		for _, f := range preview.Fires {
			at, err := time.Parse(time.RFC3339, f)
			require.NoError(t, err)
			require.Equal(t, time.Sunday, at.Weekday(), f)
		}
	})
}
