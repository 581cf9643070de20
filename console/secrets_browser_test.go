package console_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/api"
	"github.com/chimesched/chime/configs"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/secrets"
	"github.com/chimesched/chime/store"
)

// TestBrowserSecrets: an admin sets a secret through the console's form
// and sees its name, never its value, which the node stored encrypted; it
// deletes it; a viewer is offered no Secrets page and is refused it.
func TestBrowserSecrets(t *testing.T) {
	exe := chromium(t)
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{11}, secrets.KeySize))
	for _, d := range testdb.Dialects {
		t.Run(string(d), func(t *testing.T) {
			if d == store.MySQL {
				testdb.MySQLServerDSN(t)
			}
			base, st := serveWith(t, d, func(c *configs.Config) { c.Secrets.Key = "browser:" + key })
			ctx, cancel := context.WithTimeout(browser(t, exe), 60*time.Second)
			defer cancel()
			secretsFlow(t, ctx, base, st, key)
		})
	}
}

func secretsFlow(t *testing.T, ctx context.Context, base string, st *store.Store, key string) {
	const value = "browser-secret-value\nline two"
	do(t, ctx, chromedp.Navigate(base+"/login"), chromedp.WaitVisible(css(`#token`)),
		chromedp.SendKeys(css(`#token`), testToken), chromedp.Submit(css(`#token`)), chromedp.WaitVisible(css(`#who`)))
	do(t, ctx, chromedp.Click(css(`nav a[href="/secrets"]`)), chromedp.WaitVisible(css(`#secret-form`)))
	require.Contains(t, text(t, ctx, `#secrets`), "No secret.")
	do(t, ctx,
		chromedp.SendKeys(css(`#secret-name`), "erp/password"),
		chromedp.SendKeys(css(`#secret-value`), value),
		chromedp.Click(css(`#secret-form button[type=submit]`)),
		chromedp.WaitVisible(css(`tr[data-secret="erp/password"]`)))
	html, err := chromedp.Run(ctx, chromedp.OuterHTML(css("html")))
	require.NoError(t, err)
	require.NotContains(t, html, "browser-secret-value")
	require.Contains(t, text(t, ctx, `main`), "Saved.")

	kr, err := secrets.NewKeyring("browser:"+key, nil)
	require.NoError(t, err)
	got, err := (&secrets.Source{St: st.Admin(), Keys: kr}).Secret(ctx, "erp/password")
	require.NoError(t, err)
	require.Equal(t, value, got, "the textarea's newline is kept")
	row, err := st.Admin().GetSecret(ctx, "erp/password")
	require.NoError(t, err)
	require.Equal(t, "browser", row.KeyID)
	require.NotContains(t, row.Ciphertext, "browser-secret")

	do(t, ctx, chromedp.Click(css(`tr[data-secret="erp/password"] form[action="/secrets/delete"] button`)), chromedp.WaitVisible(css(`#secrets td.muted`)))
	require.Contains(t, text(t, ctx, `#secrets`), "No secret.")
	_, err = st.Admin().GetSecret(ctx, "erp/password")
	require.Error(t, err)
	do(t, ctx, chromedp.Click(css(`form.logout button`)), chromedp.WaitVisible(css(`#token`)))

	// A viewer: no link, and the page itself is refused.
	require.NoError(t, st.Admin().CreateToken(ctx, &models.APIToken{Name: "carol", TokenSHA256: api.HashToken("chime_viewer_token_carol"), Role: models.RoleViewer}))
	do(t, ctx, chromedp.Navigate(base+"/login"), chromedp.WaitVisible(css(`#token`)),
		chromedp.SendKeys(css(`#token`), "chime_viewer_token_carol"), chromedp.Submit(css(`#token`)), chromedp.WaitVisible(css(`#who`)))
	require.Zero(t, count(t, ctx, `nav a[href="/secrets"]`), "a viewer is offered Secrets")
	do(t, ctx, chromedp.Navigate(base+"/secrets"), chromedp.WaitVisible(css(`main`)))
	require.Contains(t, text(t, ctx, `main`), "needs role admin")
	require.Zero(t, count(t, ctx, `#secret-form`))
}
