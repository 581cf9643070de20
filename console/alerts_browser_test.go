package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/alert"
	"github.com/chimesched/chime/api"
	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// TestBrowserAlerts runs alertsFlow in Chromium against a real node on
// each database.
func TestBrowserAlerts(t *testing.T) {
	exe := chromium(t)
	for _, d := range testdb.Dialects {
		t.Run(string(d), func(t *testing.T) {
			if d == store.MySQL {
				testdb.MySQLServerDSN(t)
			}
			base, st := serve(t, d)
			ctx, cancel := context.WithTimeout(browser(t, exe), 120*time.Second)
			defer cancel()
			do(t, ctx, chromedp.Navigate(base+"/alerts"), chromedp.WaitVisible(css(`#token`)),
				chromedp.SendKeys(css(`#token`), testToken), chromedp.Submit(css(`#token`)), chromedp.WaitVisible(css(`#alert-channels`)))
			alertsFlow(t, ctx, base, st)
			alertFormsFlow(t, ctx, base, st)
		})
	}
}

// alertsFlow, logged in: the alerts page lists a channel without its
// secrets, "Send test" reaches a real receiver with a valid signature, a
// rule written by SQL with a bad deadline shows why it is invalid, and the
// recent alerts show their delivery state as the node delivers them.
func alertsFlow(t *testing.T, ctx context.Context, base string, st *store.Store) {
	var mu sync.Mutex
	var got []string
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := alert.Verify([]byte("console-k3y"), r.Header.Get("X-Chime-Timestamp"), r.Header.Get("X-Chime-Signature"),
			body, time.Now(), time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		mu.Lock()
		got = append(got, string(body))
		mu.Unlock()
	}))
	t.Cleanup(rcv.Close)
	// received counts the requests whose body has want.
	received := func(want string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, b := range got {
			if strings.Contains(b, want) {
				n++
			}
		}
		return n
	}

	ch := models.AlertChannel{Name: "ops-hook", Kind: models.ChannelWebhook, URL: rcv.URL + "/hook?token=s3cret-token",
		SigningKey: "console-k3y", TimeoutSeconds: 5, Enabled: true}
	require.NoError(t, st.SaveAlertChannel(ctx, &ch))
	rule := models.AlertRule{Name: "failures", Event: models.EventJobFailed, Scope: models.ScopeAll, ChannelID: ch.ID, Enabled: true}
	require.NoError(t, st.SaveAlertRule(ctx, &rule))
	require.NoError(t, st.DB().Exec(`INSERT INTO alert_rules (name, event, scope, schedule_id, channel_id, params) VALUES (?, ?, ?, ?, ?, ?)`,
		"late-report", "deadline", "schedule", int64(424242), ch.ID, `{"by":"25:00"}`).Error)
	_, err := st.RecordAlerts(ctx, []chimedb.AlertRecord{{At: time.Now(), Alert: models.Alert{RuleID: rule.ID, ChannelID: ch.ID,
		Event: models.EventJobFailed, Subject: "definition:1", DedupeKey: "console-1", Summary: "nightly-report (job 1) failed (attempt 1 of 1)",
		Payload: []byte(`{"version":1,"event":"job_failed","state":"firing","summary":"nightly-report (job 1) failed","subject":"definition:1"}`)}}})
	require.NoError(t, err)

	do(t, ctx, chromedp.Navigate(base+"/alerts"), chromedp.WaitVisible(css(`#alert-channels`)))
	page := text(t, ctx, `main`)
	require.Contains(t, page, "ops-hook")
	require.Contains(t, page, "late-report")
	require.Contains(t, page, "is not a wall-clock time", "the bad rule says why")
	require.Contains(t, page, "schedule 424242 does not exist")
	require.NotContains(t, page, "s3cret-token")
	require.NotContains(t, page, "console-k3y")
	html, err := chromedp.Run(ctx, chromedp.OuterHTML(css(`html`)))
	require.NoError(t, err)
	require.NotContains(t, html, "s3cret-token")

	do(t, ctx,
		chromedp.Click(css(`form[action="/alerts/channels/`+itoa(ch.ID)+`/test"] button`)),
		chromedp.WaitVisible(css(`p.flash`)),
	)
	require.Contains(t, text(t, ctx, `p.flash`), "Test message sent.")
	require.Equal(t, 1, received(`"event":"test"`))

	// The node's dispatcher delivers the recorded alert; the page shows it sent.
	require.Eventually(t, func() bool {
		if err := chromedp.Do(ctx, chromedp.Navigate(base+"/alerts"), chromedp.WaitVisible(css(`#alerts`))); err != nil {
			return false
		}
		s, err := chromedp.Run(ctx, chromedp.Text(css(`#alerts td.delivery`)))
		return err == nil && s == "sent"
	}, 30*time.Second, 200*time.Millisecond)
	require.Contains(t, text(t, ctx, `#alerts`), "nightly-report (job 1) failed")
	require.Equal(t, 1, received(`"event":"job_failed"`), "the recorded alert, once")
	require.Equal(t, 1, received(`"event":"test"`))
}

// alertFormsFlow, logged in as the admin: the page's forms create a
// webhook channel and a queue rule; a refused channel is shown again with
// the error at its field and without the secrets typed; a refused rule
// says why. Then a viewer is offered neither form, an editor only the
// rule's (the API's rules: channels are the admins').
func alertFormsFlow(t *testing.T, ctx context.Context, base string, st *store.Store) {
	do(t, ctx, chromedp.Navigate(base+"/alerts"), chromedp.WaitVisible(css(`#alert-channels`)),
		clickLive(`#new-channel summary`), chromedp.WaitVisible(css(`#f-channel-name`)),
		chromedp.SendKeys(css(`#f-channel-name`), "form-hook"),
		chromedp.SendKeys(css(`#f-url`), "ftp://example.com/hook?token=refused-s3cret"),
		chromedp.SendKeys(css(`#f-signing_key`), "form-signing-k3y"),
		chromedp.Submit(css(`#f-channel-name`)), chromedp.WaitVisible(css(`#e-url`)))
	require.Contains(t, text(t, ctx, `#e-url`), "only http and https")
	html, err := chromedp.Run(ctx, chromedp.OuterHTML(css(`html`)))
	require.NoError(t, err)
	require.NotContains(t, html, "refused-s3cret", "a refused form shows no secret back")
	require.NotContains(t, html, "form-signing-k3y")
	require.Contains(t, html, `value="form-hook"`, "the rest is kept")

	do(t, ctx, chromedp.SendKeys(css(`#f-url`), "https://hooks.example.com/chime?token=kept-s3cret"),
		chromedp.SendKeys(css(`#f-signing_key`), "form-signing-k3y"),
		setValue("f-timeout_seconds", "7"),
		chromedp.Submit(css(`#f-channel-name`)), chromedp.WaitVisible(css(`p.flash`)))
	require.Contains(t, text(t, ctx, `p.flash`), "Channel created.")
	require.Contains(t, text(t, ctx, `#alert-channels`), "form-hook")
	html, err = chromedp.Run(ctx, chromedp.OuterHTML(css(`html`)))
	require.NoError(t, err)
	require.NotContains(t, html, "kept-s3cret")
	require.NotContains(t, html, "form-signing-k3y")
	chans, err := st.ListAlertChannels(ctx)
	require.NoError(t, err)
	var made *models.AlertChannel
	for i := range chans {
		if chans[i].Name == "form-hook" {
			made = &chans[i]
		}
	}
	require.NotNil(t, made)
	require.Equal(t, "https://hooks.example.com/chime?token=kept-s3cret", made.URL)
	require.Equal(t, "form-signing-k3y", made.SigningKey)
	require.Equal(t, 7, made.TimeoutSeconds)

	// A rule the API refuses says why; a good one is listed.
	do(t, ctx, clickLive(`#new-rule summary`), chromedp.WaitVisible(css(`#f-rule-name`)),
		chromedp.SendKeys(css(`#f-rule-name`), "flapping"), setValue("f-event", "lease_flapping"), setValue("f-channel", "form-hook"),
		chromedp.SendKeys(css(`#f-params`), `{"max_changes": 0, "within_seconds": 3600}`),
		chromedp.Submit(css(`#f-rule-name`)), chromedp.WaitVisible(css(`#e-params`)))
	require.Contains(t, text(t, ctx, `#e-params`), "params.max_changes: 0 is not within 1-1000")
	do(t, ctx, chromedp.Navigate(base+"/alerts"), chromedp.WaitVisible(css(`#alert-rules`)),
		clickLive(`#new-rule summary`), chromedp.WaitVisible(css(`#f-rule-name`)),
		chromedp.SendKeys(css(`#f-rule-name`), "etl-fails"), setValue("f-event", "job_failed"), setValue("f-channel", "form-hook"),
		setValue("f-scope", "queue"), chromedp.SendKeys(css(`#f-queue`), "etl"), setValue("f-throttle_seconds", "600"),
		chromedp.Submit(css(`#f-rule-name`)), chromedp.WaitVisible(css(`p.flash`)))
	require.Contains(t, text(t, ctx, `p.flash`), "Rule created.")
	rules := text(t, ctx, `#alert-rules`)
	require.Contains(t, rules, "etl-fails")
	require.Contains(t, rules, "queue etl")
	require.Contains(t, rules, "600s")

	// Who is offered what.
	for _, tk := range []struct {
		name, token string
		role        models.Role
	}{{"vera", "chime_viewer_token_vera", models.RoleViewer}, {"eddie", "chime_editor_token_eddie", models.RoleEditor}} {
		require.NoError(t, st.Admin().CreateToken(ctx, &models.APIToken{Name: tk.name, TokenSHA256: api.HashToken(tk.token), Role: tk.role}))
	}
	login := func(token string) {
		do(t, ctx, clickLive(`form.logout button`), chromedp.WaitVisible(css(`#token`)),
			chromedp.SendKeys(css(`#token`), token), chromedp.Submit(css(`#token`)), chromedp.WaitVisible(css(`#who`)),
			chromedp.Navigate(base+"/alerts"), chromedp.WaitVisible(css(`#alert-channels`)))
	}
	login("chime_viewer_token_vera")
	require.Zero(t, count(t, ctx, `form[action="/alerts/channels"]`), "a viewer is offered the channel form")
	require.Zero(t, count(t, ctx, `form[action="/alerts/rules"]`), "a viewer is offered the rule form")
	login("chime_editor_token_eddie")
	require.Zero(t, count(t, ctx, `form[action="/alerts/channels"]`), "an editor is offered the channel form")
	require.Equal(t, 1, count(t, ctx, `form[action="/alerts/rules"]`))
}
