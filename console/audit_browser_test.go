package console_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/api"
	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// TestBrowserAudit: a schedule paused in the console is in the audit log
// with door console, beside a plain-SQL change with door sql; the audit
// page shows both to an admin, filtered; a viewer is neither offered the
// page nor shown it.
func TestBrowserAudit(t *testing.T) {
	exe := chromium(t)
	for _, d := range testdb.Dialects {
		t.Run(string(d), func(t *testing.T) {
			if d == store.MySQL {
				testdb.MySQLServerDSN(t)
			}
			base, st := serve(t, d)
			ctx, cancel := context.WithTimeout(browser(t, exe), 90*time.Second)
			defer cancel()
			auditFlow(t, ctx, base, st)
		})
	}
}

func auditFlow(t *testing.T, ctx context.Context, base string, st *store.Store) {
	_, schID := seed(t, st, "audited-report")
	require.NoError(t, st.Admin().CreateToken(ctx, &models.APIToken{Name: "carol", TokenSHA256: api.HashToken("chime_viewer_token_carol"), Role: models.RoleViewer}))
	login := func(token string) {
		do(t, ctx, chromedp.Navigate(base+"/login"), chromedp.WaitVisible(css(`#token`)),
			chromedp.SendKeys(css(`#token`), token), chromedp.Submit(css(`#token`)), chromedp.WaitVisible(css(`#who`)))
	}
	login(testToken)
	pause := `form[action="/schedules/` + itoa(schID) + `/pause"]`
	do(t, ctx, chromedp.Navigate(base+"/schedules/"+itoa(schID)), chromedp.WaitVisible(css(pause)),
		chromedp.Click(css(pause+` button`)),
		chromedp.WaitVisible(css(`form[action="/schedules/`+itoa(schID)+`/resume"]`)))
	require.NoError(t, st.DB().Exec(`UPDATE schedules SET status_reason = 'by hand' WHERE id = ?`, schID).Error)

	rows, err := st.ListAudit(ctx, &chimedb.AuditListParams{ObjectType: "schedule", ObjectID: itoa(schID), Limit: 10})
	require.NoError(t, err)
	require.Len(t, rows, 3, "insert by SQL, pause in the console, update by SQL")
	require.Equal(t, []string{models.AuditDoorSQL, models.AuditDoorConsole, models.AuditDoorSQL}, []string{rows[0].Door, rows[1].Door, rows[2].Door})
	require.Equal(t, api.BootstrapName, rows[1].Actor)

	do(t, ctx, chromedp.Click(css(`#nav-audit`)), chromedp.WaitVisible(css(`#audit`)))
	do(t, ctx, chromedp.Navigate(base+"/audit?object_type=schedule&object_id="+itoa(schID)), chromedp.WaitVisible(css(`#audit`)))
	require.Equal(t, 3, count(t, ctx, `#audit tr.audit-row`))
	require.Equal(t, "console", text(t, ctx, `#audit tr.audit-row:nth-child(2) td.door`))
	require.Contains(t, text(t, ctx, `#audit tr.audit-row:nth-child(2) td.changes`), "paused")
	require.Equal(t, "sql", text(t, ctx, `#audit tr.audit-row:nth-child(1) td.door`))
	require.Contains(t, text(t, ctx, `#audit tr.audit-row:nth-child(1) td.changes`), "by hand")
	do(t, ctx, chromedp.Click(css(`form.logout button`)), chromedp.WaitVisible(css(`#token`)))

	// A viewer is not offered the page, and the API refuses it anyway.
	login("chime_viewer_token_carol")
	require.Zero(t, count(t, ctx, `#nav-audit`))
	do(t, ctx, chromedp.Navigate(base+"/audit"), chromedp.WaitVisible(css(`main`)))
	require.Zero(t, count(t, ctx, `#audit`))
	require.Contains(t, text(t, ctx, `main`), "admin")
}
