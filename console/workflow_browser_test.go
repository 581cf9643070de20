package console_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

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
	if shots == "" {
		return
	}
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
