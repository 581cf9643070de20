package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// TestAlertChannelsNeverShowSecrets: a channel's URL token, signing key
// and header values go in and never come out, in any answer.
func TestAlertChannelsNeverShowSecrets(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		var tested []string
		b := setupWith(t, st, func(c *Config) {
			c.TestAlertChannel = func(_ context.Context, ch *models.AlertChannel) error {
				tested = append(tested, ch.Name)
				if ch.Name == "down" {
					return errors.New("POST to channel down: connection refused (https://hooks.example.com/T0/B0/s3cretpath)")
				}
				return nil
			}
		})
		const secretURL = "https://hooks.example.com/T0/B0/s3cretpath"
		rec := b.call("POST", "/api/v1/alert-channels", `{"name":"ops","kind":"webhook","url":"`+secretURL+`",
			"signing_key":"whsec-k3y","headers":{"Authorization":"Bearer t0ken"}}`)
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		var ch AlertChannelView
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &ch))
		require.Equal(t, "https://hooks.example.com/…", ch.URL)
		require.True(t, ch.URLSet)
		require.True(t, ch.SigningKeySet)
		require.Equal(t, []string{"Authorization"}, ch.HeaderNames)
		answers := []string{rec.Body.String()}
		for _, path := range []string{"/api/v1/alert-channels", "/api/v1/alert-rules", "/api/v1/alerts"} {
			rec := b.call("GET", path, "")
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			answers = append(answers, rec.Body.String())
		}
		rec = b.call("PATCH", fmt.Sprintf("/api/v1/alert-channels/%d", ch.ID), `{"timeout_seconds":3}`)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		answers = append(answers, rec.Body.String())
		cs, err := st.ListAlertChannels(context.Background())
		require.NoError(t, err)
		require.Equal(t, secretURL, cs[0].URL, "a PATCH without url keeps it")
		require.Equal(t, 3, cs[0].TimeoutSeconds)

		rec = b.call("POST", "/api/v1/alert-channels", `{"name":"down","kind":"slack","url":"`+secretURL+`"}`)
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &ch))
		rec = b.call("POST", fmt.Sprintf("/api/v1/alert-channels/%d/test", ch.ID), "")
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		require.JSONEq(t, `{"sent":false,"error":"POST to channel down: connection refused (…)"}`, rec.Body.String())
		answers = append(answers, rec.Body.String())
		require.Equal(t, []string{"down"}, tested)
		for _, a := range answers {
			for _, secret := range []string{"s3cretpath", "whsec-k3y", "t0ken"} {
				require.NotContains(t, a, secret)
			}
		}
	})
}

// TestAlertBadInput: what the issue lists as hostile input is a 400 that
// names the field, or a 409.
func TestAlertBadInput(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st)
		def := testdb.Definition(t, st, nil)
		for _, c := range []struct{ body, field string }{
			{`{"name":"a","kind":"webhook","url":"ftp://example.com/x"}`, "url"},
			{`{"name":"a","kind":"webhook","url":"file:///etc/passwd"}`, "url"},
			{`{"name":"a","kind":"webhook","url":"https://u:p@example.com/"}`, "url"},
			{`{"name":"a","kind":"pager","url":"https://example.com/"}`, "kind"},
			{`{"name":"a","kind":"webhook","url":"https://example.com/","timeout_seconds":3600}`, "timeout_seconds"},
			{`{"name":"a","kind":"webhook","url":"https://example.com/","headers":{"X-Chime-Signature":"x"}}`, "headers"},
			{`{"name":"a","kind":"email"}`, "recipients"},
		} {
			rec := b.call("POST", "/api/v1/alert-channels", c.body)
			require.Equal(t, http.StatusBadRequest, rec.Code, c.body)
			var e Error
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e))
			require.Equal(t, c.field, e.Field, "%s: %s", c.body, e.Error)
		}
		rec := b.call("POST", "/api/v1/alert-channels", `{"name":"ops","kind":"email","recipients":"ops@example.com"}`)
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		every := 60
		s := models.Schedule{Name: "s", JobDefinitionID: def.ID, ScheduleType: models.ScheduleInterval, IntervalSeconds: &every,
			Timezone: "UTC", MisfirePolicy: models.MisfireFireOnce, Concurrency: models.ConcurrencyAllow, Status: models.ScheduleActive}
		require.NoError(t, st.Admin().CreateSchedule(context.Background(), &s))
		sched := fmt.Sprint(s.ID)
		for _, c := range []struct{ body, want string }{
			{`{"name":"r","event":"deadline","scope":"schedule","schedule_id":` + sched + `,"channel":"ops","params":{"by":"25:00"}}`, "25:00"},
			{`{"name":"r","event":"deadline","scope":"schedule","schedule_id":` + sched + `,"channel":"ops","params":{"by":"07:00","time_zone":"Europe/Atlantis"}}`, "Europe/Atlantis"},
			{`{"name":"r","event":"deadline","scope":"all","channel":"ops","params":{"by":"07:00"}}`, "scope"},
			{`{"name":"r","event":"job_failed","channel":"ops","throttle_seconds":-1}`, "throttle_seconds"},
			{`{"name":"r","event":"job_failed","channel":"nope"}`, "does not exist"},
			{`{"name":"r","event":"job_failed","scope":"definition","definition_id":999999,"channel":"ops"}`, "definition 999999 does not exist"},
			{`{"name":"r","event":"slow","channel":"ops","params":{"median_factor":0.5}}`, "median_factor"},
			{`{"name":"r","event":"slow","channel":"ops","params":{"max_seconds":5,"bogus":1}}`, "bogus"},
			{`{"name":"r","event":"lease_flaps","channel":"ops"}`, "event"},
			{`{"name":"r","event":"lease_flapping","channel":"ops","params":{"max_changes":3}}`, "params.within_seconds: 0"},
			{`{"name":"r","event":"lease_flapping","channel":"ops","params":{"max_changes":3,"within_seconds":600,"lease":"x"}}`, "params.lease"},
			{`{"name":"r","event":"job_failed","scope":"queue","channel":"ops"}`, "queue: a queue name"},
			{`{"name":"r","event":"job_failed","scope":"workflow","workflow_id":999999,"channel":"ops"}`, "workflow 999999 does not exist"},
			{`{"name":"r","event":"job_failed","scope":"team","channel":"ops"}`, `scope: \"team\"`},
		} {
			rec := b.call("POST", "/api/v1/alert-rules", c.body)
			require.Equal(t, http.StatusBadRequest, rec.Code, c.body)
			require.Contains(t, rec.Body.String(), c.want)
		}
		rec = b.call("POST", "/api/v1/alert-rules", `{"name":"etl","event":"job_failed","scope":"queue","queue":"etl","channel":"ops"}`)
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		require.Contains(t, rec.Body.String(), `"queue":"etl"`)
		rec = b.call("POST", "/api/v1/alert-rules", `{"name":"flaps","event":"lease_flapping","channel":"ops","params":{"max_changes":3,"within_seconds":3600}}`)
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		rec = b.call("POST", "/api/v1/alert-rules", `{"name":"late","event":"deadline","scope":"schedule","schedule_id":`+sched+
			`,"channel":"ops","params":{"by":"07:00","time_zone":"Europe/Berlin"},"throttle_seconds":0}`)
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		var rl models.AlertRule
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &rl))
		rec = b.call("DELETE", fmt.Sprintf("/api/v1/alert-channels/%d", rl.ChannelID), "")
		require.Equal(t, http.StatusConflict, rec.Code, "a channel a rule sends to")
		rec = b.call("PATCH", fmt.Sprintf("/api/v1/alert-rules/%d", rl.ID), `{"params":{"by":"06:30"}}`)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		require.Contains(t, rec.Body.String(), `"by":"06:30"`)
		// The schedule deleted under the rule by plain SQL: the rule shows why it is invalid.
		require.NoError(t, st.DB().Exec("DELETE FROM schedules WHERE id = ?", s.ID).Error)
		rec = b.call("GET", "/api/v1/alert-rules", "")
		require.Equal(t, http.StatusOK, rec.Code)
		require.Contains(t, rec.Body.String(), "does not exist (deleted?)")
		rec = b.call("DELETE", fmt.Sprintf("/api/v1/alert-rules/%d", rl.ID), "")
		require.Equal(t, http.StatusNoContent, rec.Code)
		rec = b.call("GET", "/api/v1/alerts?status=bogus", "")
		require.Equal(t, http.StatusBadRequest, rec.Code)
	})
}
