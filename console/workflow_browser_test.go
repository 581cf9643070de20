package console_test

import (
	"context"
	"os"
	"path/filepath"
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

// TestBrowserWorkflows: the workflow pages in Chromium, with the harness
// of TestBrowser (a real node serving the console, a headless Chromium).
func TestBrowserWorkflows(t *testing.T) {
	exe := chromium(t)
	for _, d := range testdb.Dialects {
		t.Run(string(d), func(t *testing.T) {
			if d == store.MySQL {
				testdb.MySQLServerDSN(t)
			}
			base, st := serve(t, d)
			bctx := browser(t, exe)
			ctx, cancel := context.WithTimeout(bctx, 90*time.Second)
			defer cancel()
			workflowFlow(t, ctx, base, st, workflowShots(st))
		})
	}
}

// workflowFlow runs a workflow on the test's node and reads it in the
// browser: the workflow page draws its graph (one box per step, one line
// per edge), and the run page colours each step by its state and links
// its job. With shots set it saves the run page's picture.
func workflowFlow(t *testing.T, ctx context.Context, base string, st *store.Store, shots string) {
	definition(t, st, "wf-quick", `{"duration": "10ms"}`)
	definition(t, st, "wf-fails", `{"duration": "10ms", "fail": true}`)
	g, err := st.CreateWorkflow(ctx, &chimedb.WorkflowSpec{Name: "nightly-etl", Description: "extract, transform twice, load",
		Steps: []chimedb.StepSpec{{Name: "extract", Definition: "wf-quick"}, {Name: "by-region", Definition: "wf-quick"},
			{Name: "by-product", Definition: "wf-fails"}, {Name: "load", Definition: "wf-quick"}, {Name: "cleanup", Definition: "wf-quick"}},
		Edges: []chimedb.EdgeSpec{{From: "extract", To: "by-region"}, {From: "extract", To: "by-product"},
			{From: "by-region", To: "load"}, {From: "by-product", To: "load"}, {From: "by-product", To: "cleanup", Condition: models.EdgeFailure}}})
	require.NoError(t, err)
	run, err := st.StartRun(ctx, &chimedb.StartRunParams{WorkflowID: g.ID, StartedBy: "browser test"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		v, err := st.GetRun(ctx, run.ID)
		require.NoError(t, err)
		return v.Run.Status.Finished()
	}, 30*time.Second, 50*time.Millisecond)

	do(t, ctx, chromedp.Navigate(base+"/login"), chromedp.WaitVisible(css(`#token`)),
		chromedp.SendKeys(css(`#token`), testToken), chromedp.Submit(css(`#token`)), chromedp.WaitVisible(css(`form.logout`)))
	do(t, ctx,
		chromedp.Navigate(base+"/workflows"),
		chromedp.WaitVisible(css(`#workflows a[href="/workflows/`+itoa(g.ID)+`"]`)),
		chromedp.Click(css(`#workflows a[href="/workflows/`+itoa(g.ID)+`"]`)),
		chromedp.WaitVisible(css(`#workflow-graph`)),
	)
	nodes, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#workflow-graph g.node").length`))
	require.NoError(t, err)
	edges, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#workflow-graph line.edge").length`))
	require.NoError(t, err)
	require.Equal(t, 5, nodes)
	require.Equal(t, 5, edges)
	drawn, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#workflow-graph").textContent`))
	require.NoError(t, err)
	require.Contains(t, drawn, "by-product")
	require.Contains(t, text(t, ctx, `#workflow-steps`), "wf-fails")

	do(t, ctx,
		chromedp.Click(css(`#runs a[href="/runs/`+itoa(run.ID)+`"]`)),
		chromedp.WaitVisible(css(`#run-steps`)),
		// The failed step's box is drawn in its state's colour.
		chromedp.WaitVisible(css(`#workflow-graph g.n-failed`)),
		chromedp.WaitVisible(css(`#workflow-graph g.n-skipped`)),
	)
	// by-product's failure is handled by its failure edge (cleanup): the
	// run succeeded, with load skipped.
	require.Equal(t, "succeeded", text(t, ctx, `#run-status`))
	steps := text(t, ctx, `#run-steps`)
	for _, want := range []string{"extract", "succeeded", "failed", "skipped"} {
		require.Contains(t, steps, want)
	}
	fill, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector("#workflow-graph g.n-failed rect")).stroke`))
	require.NoError(t, err)
	require.NotEqual(t, "none", fill, "the stylesheet colours the step")
	require.Zero(t, count(t, ctx, `#run-actions button`), "a succeeded run offers no action")
	runButtonsFlow(t, ctx, base, st)
	if shots == "" {
		return
	}
	do(t, ctx, chromedp.Navigate(base+"/runs/"+itoa(run.ID)), chromedp.WaitVisible(css(`#run-steps`)))
	require.NoError(t, os.MkdirAll(shots, 0o755))
	do(t, ctx, chromedp.EmulateViewport(1366, 768), chromedp.Sleep(300*time.Millisecond)) // let app.js localize times; a picture, not an assertion
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(shots, "console-workflow-run.png"), png, 0o644))
}

// workflowShots is where the run page's picture goes: the screenshots
// directory, on SQLite only, as for the README's pictures.
func workflowShots(st *store.Store) string {
	if st.Dialect() != store.SQLite {
		return ""
	}
	return os.Getenv(EnvScreenshots)
}

// runButtonsFlow starts a run from a workflow's page and pauses, resumes,
// cancels and reruns it from its run page, as the admin the flow logged
// in as; then a viewer is offered none of those buttons. It ends logged
// in as the admin again.
func runButtonsFlow(t *testing.T, ctx context.Context, base string, st *store.Store) {
	definition(t, st, "wf-slow", `{"duration": "1h"}`)
	g, err := st.CreateWorkflow(ctx, &chimedb.WorkflowSpec{Name: "slow", Steps: []chimedb.StepSpec{{Name: "wait", Definition: "wf-slow"}}})
	require.NoError(t, err)
	status := func(want string) {
		t.Helper()
		do(t, ctx, chromedp.WaitVisible(css(`#run-status.s-`+want)))
	}
	do(t, ctx, chromedp.Navigate(base+"/workflows/"+itoa(g.ID)), chromedp.WaitVisible(css(`#start-run-button`)),
		chromedp.SendKeys(css(`#f-run-params`), `{"day": "mon"}`), chromedp.Click(css(`#start-run-button`)),
		chromedp.WaitVisible(css(`#run-steps`)))
	runs, err := st.ListRuns(ctx, &chimedb.ListRunsParams{WorkflowID: g.ID})
	require.NoError(t, err)
	require.Len(t, runs, 1, "the button started one run")
	require.JSONEq(t, `{"day": "mon"}`, string(runs[0].Params))
	require.Contains(t, runs[0].StartedBy, "console")
	require.Contains(t, text(t, ctx, `main`), "Run started.")
	require.Zero(t, count(t, ctx, `#run-resume`))
	require.Zero(t, count(t, ctx, `#run-rerun`))

	do(t, ctx, chromedp.Click(css(`#run-pause`)), chromedp.WaitVisible(css(`#run-resume`)))
	status("paused")
	require.Zero(t, count(t, ctx, `#run-pause`))
	do(t, ctx, chromedp.Click(css(`#run-resume`)), chromedp.WaitVisible(css(`#run-pause`)))
	status("running")
	do(t, ctx, chromedp.Click(css(`#run-cancel`)), chromedp.WaitVisible(css(`#run-rerun`)))
	status("canceled")
	require.Zero(t, count(t, ctx, `#run-cancel`))
	do(t, ctx, chromedp.Click(css(`#run-rerun`)), chromedp.WaitVisible(css(`#run-cancel`)))
	status("running")
	require.Contains(t, text(t, ctx, `main`), "rerun 2")
	runURL := base + "/runs/" + itoa(runs[0].ID)
	do(t, ctx, chromedp.Click(css(`#run-cancel`)), chromedp.WaitVisible(css(`#run-rerun`)))

	// A viewer reads the pages and is offered no button.
	require.NoError(t, st.Admin().CreateToken(ctx, &models.APIToken{Name: "carol", TokenSHA256: api.HashToken("chime_viewer_token_carol"),
		Role: models.RoleViewer}))
	login := func(token string) {
		do(t, ctx, chromedp.Click(css(`form.logout button`)), chromedp.WaitVisible(css(`#token`)),
			chromedp.SendKeys(css(`#token`), token), chromedp.Submit(css(`#token`)), chromedp.WaitVisible(css(`#who`)))
	}
	login("chime_viewer_token_carol")
	do(t, ctx, chromedp.Navigate(base+"/workflows/"+itoa(g.ID)), chromedp.WaitVisible(css(`#workflow-graph`)))
	require.Zero(t, count(t, ctx, `#start-run`), "a viewer is offered Start a run")
	do(t, ctx, chromedp.Navigate(runURL), chromedp.WaitVisible(css(`#run-steps`)))
	require.Zero(t, count(t, ctx, `#run-actions`), "a viewer is offered run actions")
	login(testToken)
}
