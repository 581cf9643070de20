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
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

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
	require.Contains(t, text(t, ctx, `#workflow-graph`), "by-product")
	require.Contains(t, text(t, ctx, `#workflow-steps`), "wf-fails")

	do(t, ctx,
		chromedp.Click(css(`#runs a[href="/runs/`+itoa(run.ID)+`"]`)),
		chromedp.WaitVisible(css(`#run-steps`)),
		// The failed step's box is drawn in its state's colour.
		chromedp.WaitVisible(css(`#workflow-graph g.n-failed`)),
		chromedp.WaitVisible(css(`#workflow-graph g.n-skipped`)),
	)
	require.Equal(t, "failed", text(t, ctx, `#run-status`))
	require.Contains(t, text(t, ctx, `#run-reason`), "by-product")
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
