package console_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/api"
	"github.com/chimesched/chime/app"
	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/configs"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

// EnvScreenshots names a directory: when set, the browser test saves the
// screenshots shown in the README there (make screenshots).
const EnvScreenshots = "CHIME_CONSOLE_SCREENSHOTS"

// chromium finds Debian's chromium; without it the browser tests skip on
// a laptop and fail in CI, which must never pass by skipping.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed; scripts/test.sh installs it (apt-get install chromium)")
	}
	t.Skip("chromium is not installed; the browser tests need it")
	return ""
}

func browser(t *testing.T, exe string) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1366, 768),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelB(); cancelA() })
	// Starting the browser is part of the first action; do it now.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")))
	return ctx
}

// serve runs `chime serve` (app.Serve) on a fresh database of dialect d,
// and returns its base URL and a store on the same database for checks.
func serve(t *testing.T, d store.Dialect) (string, *store.Store) {
	t.Helper()
	return serveWith(t, d, nil)
}

// serveWith is serve with change applied to the node's configuration.
func serveWith(t *testing.T, d store.Dialect, change func(*configs.Config)) (string, *store.Store) {
	t.Helper()
	scfg := testdb.MigratedConfig(t, d)
	cfg, err := configs.Load("", func(string) string { return "" })
	require.NoError(t, err)
	cfg.Database.Driver, cfg.Database.DSN = string(d), scfg.DSN
	cfg.Node.ID = "node-" + string(d)
	// A port of our own: app.Serve does not tell which one :0 got.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	cfg.API.Addr, cfg.API.Token = addr, testToken
	cfg.TaskEngine.PollInterval = configs.Duration(100 * time.Millisecond)
	cfg.TaskEngine.ControlInterval = configs.Duration(100 * time.Millisecond)
	cfg.Cluster.Heartbeat = configs.Duration(250 * time.Millisecond)
	cfg.ShutdownGrace = configs.Duration(2 * time.Second)
	if change != nil {
		change(cfg)
	}
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Serve(ctx, cfg, app.Options{Logger: log}) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	base := "http://" + addr
	// The node migrates and starts in the background: poll until it answers.
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 20*time.Second, 50*time.Millisecond)
	st, err := store.Open(context.Background(), scfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return base, st
}

type css = chromedp.CSS

// do runs steps in the browser, failing the test on the first error.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, steps...))
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(css(sel)))
	require.NoError(t, err)
	return s
}

// setValue sets a form control's value as a user's choice would, change
// event included. (chromedp's SetValue reads the value back and fails on a
// select.)
func setValue(id, value string) chromedp.Action[chromedp.Void] {
	js := fmt.Sprintf(`(() => { const e = document.getElementById(%q); e.value = %q;
		e.dispatchEvent(new Event("change", {bubbles: true})); return e.value; })()`, id, value)
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		got, err := chromedp.Evaluate[string](js)(ctx, t)
		if err == nil && got != value {
			err = fmt.Errorf("%s: value is %q, not %q", id, got, value)
		}
		return err
	})
}

// clickLive clicks what sel finds at the moment of the click. The job list
// replaces its rows every few seconds, so a node chromedp found a moment
// earlier may be gone by its click ("No node with given id found").
func clickLive(sel string) chromedp.Action[chromedp.Void] {
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false; e.click(); return true; })()`, sel)
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		ok, err := chromedp.Evaluate[bool](js)(ctx, t)
		if err == nil && !ok {
			err = fmt.Errorf("click %s: no such element", sel)
		}
		return err
	})
}

func colorScheme(scheme string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
		return err
	})
}

func jobStatus(t *testing.T, st *store.Store, id int64) models.JobStatus {
	t.Helper()
	j, err := st.Admin().GetJob(context.Background(), id)
	require.NoError(t, err)
	return j.Status
}

func adHoc(t *testing.T, st *store.Store, defID int64, params string) int64 {
	t.Helper()
	now := time.Now()
	j := &models.Job{JobDefinitionID: defID, ScheduledAt: now, RunAt: now, MaxAttempts: 1, Params: models.JSON(params)}
	require.NoError(t, st.Admin().InsertJob(context.Background(), j, "started by the browser test"))
	return j.ID
}

func TestBrowser(t *testing.T) {
	exe := chromium(t)
	shots := os.Getenv(EnvScreenshots)
	for _, d := range testdb.Dialects {
		t.Run(string(d), func(t *testing.T) {
			if d == store.MySQL {
				testdb.MySQLServerDSN(t)
			}
			base, st := serve(t, d)
			bctx := browser(t, exe)
			ctx, cancel := context.WithTimeout(bctx, 90*time.Second)
			defer cancel()
			browserFlow(t, ctx, base, st)
			if shots != "" && d == store.SQLite {
				screenshots(t, ctx, base, st, shots)
			}
		})
	}
}

// TestBrowserRoles logs in as a viewer and as an operator and checks what
// each is offered, and that a revoked token's session ends.
func TestBrowserRoles(t *testing.T) {
	exe := chromium(t)
	for _, d := range testdb.Dialects {
		t.Run(string(d), func(t *testing.T) {
			if d == store.MySQL {
				testdb.MySQLServerDSN(t)
			}
			base, st := serve(t, d)
			ctx, cancel := context.WithTimeout(browser(t, exe), 60*time.Second)
			defer cancel()
			rolesFlow(t, ctx, base, st)
		})
	}
}

func browserFlow(t *testing.T, ctx context.Context, base string, st *store.Store) {
	defID, schID := seed(t, st, "nightly-report")

	// Log in.
	do(t, ctx, chromedp.Navigate(base+"/schedules"), chromedp.WaitVisible(css(`#token`)))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	require.Contains(t, loc, "/login")
	do(t, ctx, chromedp.SendKeys(css(`#token`), testToken), chromedp.Submit(css(`#token`)), chromedp.WaitVisible(css(`#schedules`)))
	// The schedule written by plain SQL is listed.
	got := text(t, ctx, `#schedules`)
	require.Contains(t, got, "nightly-report")
	require.Contains(t, got, "every 5 minutes")

	// Create a schedule through the form, with one field error first.
	do(t, ctx,
		chromedp.Click(css(`a[href="/schedules/new"]`)),
		chromedp.WaitVisible(css(`#f-name`)),
		chromedp.SendKeys(css(`#f-name`), "browser-made"),
		setValue(`f-job_definition_id`, itoa(defID)),
		chromedp.SendKeys(css(`#f-cron_expr`), "61 * * * *"),
		// The preview shows the API's verdict while typing.
		chromedp.WaitVisible(css(`#preview-error`)),
		chromedp.Click(css(`#schedule-form button[type=submit]`)),
		chromedp.WaitVisible(css(`#e-cron_expr`)),
	)
	require.Contains(t, text(t, ctx, `#e-cron_expr`), "cron_expr")
	do(t, ctx,
		setValue(`f-cron_expr`, ""),
		chromedp.SendKeys(css(`#f-cron_expr`), "*/10 * * * *"),
		chromedp.WaitVisible(css(`#preview-fires time`)),
		chromedp.Click(css(`#schedule-form button[type=submit]`)),
		chromedp.WaitVisible(css(`#h-fires`)),
	)
	got = text(t, ctx, `main`)
	require.Contains(t, got, "browser-made")
	require.Contains(t, got, "every 10 minutes")
	rows, err := st.Admin().ListSchedules(ctx, &chimedb.AdminListParams{Name: "browser-made", Limit: 1})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	made := rows[0].ID

	// Pause it and see the row change in the database.
	do(t, ctx,
		chromedp.Click(css(`form[action="/schedules/`+itoa(made)+`/pause"] button`)),
		chromedp.WaitVisible(css(`form[action="/schedules/`+itoa(made)+`/resume"]`)),
	)
	sch, err := st.Admin().GetSchedule(ctx, made)
	require.NoError(t, err)
	require.Equal(t, models.SchedulePaused, sch.Status)

	// Open a failed job and read its error and log.
	failDef := definition(t, st, "fails", `{"duration": "10ms", "fail": true}`)
	failed := adHoc(t, st, failDef, `{"duration": "10ms", "fail": true}`)
	require.Eventually(t, func() bool { return jobStatus(t, st, failed) == models.JobFailed }, 20*time.Second, 50*time.Millisecond)
	do(t, ctx,
		chromedp.Navigate(base+"/jobs?status=failed"),
		chromedp.WaitVisible(css(`#jobs a[href="/jobs/`+itoa(failed)+`"]`)),
		clickLive(`#jobs a[href="/jobs/`+itoa(failed)+`"]`),
		chromedp.WaitVisible(css(`#job-error`)),
	)
	require.Contains(t, text(t, ctx, `#job-error`), "failing as asked")
	require.Contains(t, text(t, ctx, `#job-log`), "started by the browser test")

	// Stop a running sleep job.
	running := adHoc(t, st, defID, `{"duration": "5m"}`)
	require.Eventually(t, func() bool { return jobStatus(t, st, running) == models.JobRunning }, 20*time.Second, 50*time.Millisecond)
	do(t, ctx,
		chromedp.Navigate(base+"/jobs/"+itoa(running)),
		chromedp.WaitVisible(css(`#follow-note`)),
	)
	// A running job offers what a running job can do: pause or stop it.
	acts := text(t, ctx, `#job-actions`)
	require.Contains(t, acts, "Pause")
	require.Contains(t, acts, "Stop")
	for _, no := range []string{"Run again", "Reset", "force"} {
		require.NotContains(t, acts, no)
	}
	require.Equal(t, "running", text(t, ctx, `#job-status`), "the API's word for it")
	do(t, ctx, chromedp.Click(css(`form[action="/jobs/`+itoa(running)+`/stop"] button`)))
	require.Eventually(t, func() bool { return jobStatus(t, st, running) == models.JobStopped }, 20*time.Second, 50*time.Millisecond)
	// The page follows the job and shows its end without a reload by hand,
	// with what a finished job offers.
	do(t, ctx, chromedp.WaitNotPresent(css(`#follow-note`)), chromedp.WaitVisible(css(`form[action="/jobs/`+itoa(running)+`/again"]`)))
	require.Equal(t, "stopped", text(t, ctx, `#job-status`))
	require.NotContains(t, text(t, ctx, `#job-actions`), "Stop")

	// The definition page, from the list: its fields, masked secrets, its
	// schedules, and links on to them.
	secretDef := definition(t, st, "with-secret", `{"duration": "10ms", "env": {"DB_PASSWORD": "hunter2"}}`)
	do(t, ctx,
		chromedp.Navigate(base+"/definitions"),
		chromedp.WaitVisible(css(`#definitions a[href="/definitions/`+itoa(defID)+`"]`)),
		chromedp.Click(css(`#definitions a[href="/definitions/`+itoa(defID)+`"]`)),
		chromedp.WaitVisible(css(`#definition-params`)),
	)
	require.Contains(t, text(t, ctx, `#definition`), "sleep")
	got = text(t, ctx, `#definition-schedules`)
	require.Contains(t, got, "nightly-report")
	require.Contains(t, got, "browser-made")
	do(t, ctx,
		chromedp.Click(css(`#definition-schedules a[href="/schedules/`+itoa(schID)+`"]`)),
		chromedp.WaitVisible(css(`#h-fires`)),
		chromedp.Click(css(`a[href="/definitions/`+itoa(defID)+`"]`)),
		chromedp.WaitVisible(css(`#definition-params`)),
		chromedp.Navigate(base+"/definitions/"+itoa(secretDef)),
		chromedp.WaitVisible(css(`#definition-params`)),
	)
	got = text(t, ctx, `#definition-params`)
	require.Contains(t, got, `"DB_PASSWORD": "********"`)
	require.NotContains(t, text(t, ctx, `body`), "hunter2")

	// Queues: running, limit and rate shown; Pause stops new starts and
	// the page says so; Resume opens it again.
	require.NoError(t, st.DB().Exec(`INSERT INTO queues (name, max_running, rate_limit, rate_period_ms) VALUES ('erp', 2, 100, 60000)`).Error)
	do(t, ctx,
		chromedp.Click(css(`a[href="/queues"]`)),
		chromedp.WaitVisible(css(`#queues tr[data-queue="erp"]`)),
	)
	row := text(t, ctx, `#queues tr[data-queue="erp"]`)
	require.Contains(t, row, "100 per 60000 ms")
	require.Contains(t, row, "open")
	do(t, ctx,
		chromedp.Click(css(`form[action="/queues/erp/pause"] button`)),
		chromedp.WaitVisible(css(`form[action="/queues/erp/resume"]`)),
	)
	require.Contains(t, text(t, ctx, `#queues tr[data-queue="erp"] .state`), "paused")
	var paused bool
	require.NoError(t, st.DB().Raw(`SELECT paused FROM queues WHERE name = 'erp'`).Scan(&paused).Error)
	require.True(t, paused)
	do(t, ctx,
		chromedp.Click(css(`form[action="/queues/erp/resume"] button`)),
		chromedp.WaitVisible(css(`form[action="/queues/erp/pause"]`)),
	)

	// Nodes: tags shown; Drain asks the node to stop claiming and the page
	// says so; Undrain lets it claim again.
	require.NoError(t, st.RegisterNode(t.Context(), &chimedb.RegisterNodeParams{ID: "gpu-1", Roles: "worker", Tags: "gpu,zone:eu"}))
	do(t, ctx,
		chromedp.Navigate(base+"/nodes"),
		chromedp.WaitVisible(css(`#nodes tr[data-node="gpu-1"]`)),
	)
	require.Contains(t, text(t, ctx, `#nodes tr[data-node="gpu-1"] .tags`), "gpu,zone:eu")
	do(t, ctx,
		chromedp.Click(css(`form[action="/nodes/gpu-1/drain"] button`)),
		chromedp.WaitVisible(css(`form[action="/nodes/gpu-1/undrain"]`)),
	)
	require.Contains(t, text(t, ctx, `#nodes tr[data-node="gpu-1"] .drain`), "draining")
	var drain string
	require.NoError(t, st.DB().Raw(`SELECT drain FROM nodes WHERE id = 'gpu-1'`).Scan(&drain).Error)
	require.Equal(t, "draining", drain)
	do(t, ctx,
		chromedp.Click(css(`form[action="/nodes/gpu-1/undrain"] button`)),
		chromedp.WaitVisible(css(`form[action="/nodes/gpu-1/drain"]`)),
	)

	// Logged in, a next that Chromium reads as another host stays here
	// (issue 22, finding 5: it landed on http://evil.example/typed).
	do(t, ctx, chromedp.Navigate(base+"/login?next=/%09/evil.example/typed"), chromedp.WaitVisible(css(`form.logout`)))
	loc, err = chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	require.Equal(t, base+"/", loc)

	// Log out and see no data.
	do(t, ctx,
		chromedp.Click(css(`form.logout button`)),
		chromedp.WaitVisible(css(`#token`)),
		chromedp.Navigate(base+"/schedules/"+itoa(schID)),
		chromedp.WaitVisible(css(`#token`)),
	)
	got = text(t, ctx, `body`)
	require.NotContains(t, got, "nightly-report")
	require.NotContains(t, got, "browser-made")
}

// count is how many elements sel matches on the page.
func count(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
	require.NoError(t, err)
	return n
}

// rolesFlow logs in as a viewer, then as an operator, and checks what
// each is offered; then revokes the operator's token and sees the
// session end. It starts logged out.
func rolesFlow(t *testing.T, ctx context.Context, base string, st *store.Store) {
	defID, schID := seed(t, st, "roles-report")
	for _, tk := range []struct{ name, token string }{{"alice", "chime_viewer_token_alice"}, {"bob", "chime_operator_token_bob"}} {
		role := models.RoleViewer
		if tk.name == "bob" {
			role = models.RoleOperator
		}
		require.NoError(t, st.Admin().CreateToken(ctx, &models.APIToken{Name: tk.name, TokenSHA256: api.HashToken(tk.token), Role: role}))
	}
	login := func(token string) {
		do(t, ctx, chromedp.Navigate(base+"/login"), chromedp.WaitVisible(css(`#token`)),
			chromedp.SendKeys(css(`#token`), token), chromedp.Submit(css(`#token`)), chromedp.WaitVisible(css(`#who`)))
	}
	sched := base + "/schedules/" + itoa(schID)
	trigger := `form[action="/schedules/` + itoa(schID) + `/trigger"]`
	edit := `a[href="/schedules/` + itoa(schID) + `/edit"]`

	// The viewer reads everything and is offered no action.
	login("chime_viewer_token_alice")
	require.Contains(t, text(t, ctx, `#who`), "alice · viewer")
	do(t, ctx, chromedp.Navigate(sched), chromedp.WaitVisible(css(`#schedule-status`)))
	require.Contains(t, text(t, ctx, `main`), "roles-report")
	require.Zero(t, count(t, ctx, trigger), "a viewer is offered Trigger now")
	require.Zero(t, count(t, ctx, `form[action="/schedules/`+itoa(schID)+`/pause"]`))
	require.Zero(t, count(t, ctx, edit))
	do(t, ctx, chromedp.Navigate(base+"/definitions/"+itoa(defID)), chromedp.WaitVisible(css(`#definition-params`)))
	require.Zero(t, count(t, ctx, `a[href="/definitions/`+itoa(defID)+`/edit"]`))
	require.Zero(t, count(t, ctx, `a[href="/definitions/`+itoa(defID)+`/delete"]`))
	do(t, ctx, chromedp.Navigate(base+"/definitions"), chromedp.WaitVisible(css(`#who`)))
	require.Zero(t, count(t, ctx, `a[href="/definitions/new"]`))
	do(t, ctx, chromedp.Click(css(`form.logout button`)), chromedp.WaitVisible(css(`#token`)))

	// The operator may pause and trigger, not edit.
	login("chime_operator_token_bob")
	require.Contains(t, text(t, ctx, `#who`), "bob · operator")
	do(t, ctx, chromedp.Navigate(sched), chromedp.WaitVisible(css(trigger)))
	require.Equal(t, 1, count(t, ctx, `form[action="/schedules/`+itoa(schID)+`/pause"]`))
	require.Zero(t, count(t, ctx, edit), "an operator is offered Edit")
	require.Zero(t, count(t, ctx, `a[href="/schedules/`+itoa(schID)+`/delete"]`))
	jobsOf := func() int {
		js, err := st.Admin().ScheduleJobs(ctx, schID, 100)
		require.NoError(t, err)
		return len(js)
	}
	before := jobsOf()
	do(t, ctx, chromedp.Click(css(trigger+` button`)), chromedp.WaitVisible(css(`#job-status`)))
	require.Equal(t, before+1, jobsOf(), "the operator's trigger wrote a job")
	do(t, ctx, chromedp.Navigate(base+"/schedules"), chromedp.WaitVisible(css(`#schedules`)))
	require.Zero(t, count(t, ctx, `a[href="/schedules/new"]`))

	// Revoked: the session ends at its next request.
	_, err := st.Admin().RevokeToken(ctx, "bob", time.Now())
	require.NoError(t, err)
	do(t, ctx, chromedp.Navigate(sched), chromedp.WaitVisible(css(`#token`)))
	require.NotContains(t, text(t, ctx, `body`), "roles-report")
}

// definition writes a sleep definition by SQL and returns its id.
func definition(t *testing.T, st *store.Store, name, params string) int64 {
	t.Helper()
	now := store.DBTime(time.Now())
	require.NoError(t, st.DB().Exec(`INSERT INTO job_definitions (name, task_type, description, default_params, timeout_seconds,
		max_attempts, retry_backoff_seconds, notify_on, notify_emails, created_at, updated_at)
		VALUES (?, 'sleep', 'sleeps, then fails', ?, 0, 1, 10, 'never', '', ?, ?)`, name, params, now, now).Error)
	var id int64
	require.NoError(t, st.DB().Raw(`SELECT id FROM job_definitions WHERE name = ?`, name).Scan(&id).Error)
	return id
}

// screenshots logs in again and saves the README's pictures.
func screenshots(t *testing.T, ctx context.Context, base string, st *store.Store, dir string) {
	require.NoError(t, os.MkdirAll(dir, 0o755))
	fillForPictures(t, st)
	// The flow's failed job has the engine's own log lines.
	var failed int64
	require.NoError(t, st.DB().Raw(`SELECT id FROM jobs WHERE error LIKE '%failing as asked%'`).Scan(&failed).Error)
	var schID int64
	require.NoError(t, st.DB().Raw(`SELECT id FROM schedules WHERE name = 'nightly-report'`).Scan(&schID).Error)
	shot := func(name, path, wait string) {
		do(t, ctx, chromedp.Navigate(base+path), chromedp.WaitVisible(css(wait)),
			chromedp.Sleep(300*time.Millisecond)) // let app.js localize times; a picture, not an assertion
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), png, 0o644))
	}
	do(t, ctx, chromedp.Navigate(base+"/login"), chromedp.WaitVisible(css(`#token`)))
	shot("console-login.png", "/login", "#token")
	do(t, ctx, chromedp.SendKeys(css(`#token`), testToken), chromedp.Submit(css(`#token`)), chromedp.WaitVisible(css(`#h-status`)),
		chromedp.EmulateViewport(1366, 768))
	shot("console-overview.png", "/", "#h-status")
	shot("console-schedules.png", "/schedules", "#schedules")
	shot("console-schedule.png", fmt.Sprintf("/schedules/%d", schID), "#h-fires")
	var backup int64
	require.NoError(t, st.DB().Raw(`SELECT id FROM job_definitions WHERE name = 'db-backup'`).Scan(&backup).Error)
	paused := pausedHourly(t, st, backup, "backup-hourly-paused", time.Now().UTC().Truncate(time.Hour).Add(-7*time.Hour))
	shot("console-schedule-paused.png", fmt.Sprintf("/schedules/%d", paused), "#resume-catch-up")
	do(t, ctx, chromedp.Navigate(fmt.Sprintf("%s/definitions/%d", base, backup)), chromedp.WaitVisible(css("#definition-params")),
		chromedp.Sleep(300*time.Millisecond)) // let app.js localize times; a picture, not an assertion
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "console-definition.png"), png, 0o644))
	shot("console-jobs.png", "/jobs", "#jobs")
	shot("console-job.png", fmt.Sprintf("/jobs/%d", failed), "#job-log")
	shot("console-nodes.png", "/nodes", "#nodes")
	do(t, ctx, chromedp.Navigate(base+"/schedules/new"), chromedp.WaitVisible(css(`#f-name`)),
		chromedp.SendKeys(css(`#f-name`), "invoices-monthly"), setValue("f-timezone", "Europe/Paris"),
		chromedp.SendKeys(css(`#f-cron_expr`), "0 6 1 * *"), chromedp.SendKeys(css(`#f-params`), `{"duration": "5s"}`),
		chromedp.Click(css(`#schedule-form button[type=submit]`)), chromedp.WaitVisible(css(`#e-job_definition_id`)))
	do(t, ctx, setValue("f-job_definition_id", "2"), chromedp.WaitVisible(css(`#preview-fires time`)),
		chromedp.Sleep(300*time.Millisecond)) // the preview's answer; a picture, not an assertion
	png, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "console-schedule-form.png"), png, 0o644))
	do(t, ctx, colorScheme("dark"))
	shot("console-overview-dark.png", "/", "#h-status")
	do(t, ctx, colorScheme("light"), chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile))
	shot("console-phone.png", "/jobs", "#jobs")
}

// fillForPictures adds schedules and an hour of jobs so the pictures show
// a working cluster rather than an empty one.
func fillForPictures(t *testing.T, st *store.Store) {
	db := st.DB()
	now := store.DBTime(time.Now())
	defs := map[string]int64{}
	for _, d := range []struct{ name, params string }{{"db-backup", `{"duration": "10ms"}`}, {"send-digest", `{"duration": "10ms"}`}, {"sync-crm", `{"duration": "10ms"}`}} {
		defs[d.name] = definition(t, st, d.name, d.params)
	}
	for _, s := range []struct{ name, def, cron, status string }{
		{"backup-hourly", "db-backup", "0 * * * *", "active"}, {"digest-weekday-0800", "send-digest", "0 8 * * 1-5", "active"},
		{"crm-sync", "sync-crm", "*/15 * * * *", "active"}, {"backup-offsite", "db-backup", "30 2 * * *", "paused"},
	} {
		require.NoError(t, db.Exec(`INSERT INTO schedules (name, job_definition_id, schedule_type, cron_expr, timezone,
			misfire_policy, concurrency, status, status_reason, created_at, updated_at)
			VALUES (?, ?, 'cron', ?, 'Europe/Paris', 'fire_once', 'forbid', ?, '', ?, ?)`, s.name, defs[s.def], s.cron, s.status, now, now).Error)
	}
	var rows []models.Schedule
	require.NoError(t, db.Select("id, job_definition_id").Order("id").Find(&rows).Error)
	var sb strings.Builder
	var args []any
	sb.WriteString(`INSERT INTO jobs (schedule_id, job_definition_id, scheduled_at, run_at, status, control, attempt, max_attempts,
		node_id, started_at, finished_at, result, error, created_at, updated_at) VALUES `)
	// An hour of uneven load, oldest first so ids grow with time.
	n := 0
	for m := 59; m >= 1; m-- {
		for k := range 1 + (m*7)%5 + (m/20)*2 {
			at := now.Truncate(time.Minute).Add(-time.Duration(m)*time.Minute + time.Duration(k)*7*time.Second)
			status, errText, result := "succeeded", any(nil), any("ok")
			if (m+k)%9 == 4 {
				status, errText, result = "failed", "exit status 1: connection refused by crm.example.com:443", nil
			}
			if n > 0 {
				sb.WriteString(",")
			}
			n++
			sb.WriteString("(?, ?, ?, ?, ?, '', 1, 1, 'node-sqlite', ?, ?, ?, ?, ?, ?)")
			sch := rows[n%len(rows)]
			args = append(args, sch.ID, sch.JobDefinitionID, at, at, status, at, at.Add(1500*time.Millisecond), result, errText, at, at)
		}
	}
	require.NoError(t, db.Exec(sb.String(), args...).Error)
}
