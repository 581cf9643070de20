package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/chimesched/chime/api"
	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/models"
)

// workflowStore is the console's store's workflows, when it has them.
func (c *Console) workflowStore(w http.ResponseWriter, r *http.Request, s *session) (chimedb.WorkflowStore, bool) {
	ws, ok := c.st.(chimedb.WorkflowStore)
	if !ok {
		c.fail(w, r, s, http.StatusNotFound, "This store has no workflows.")
	}
	return ws, ok
}

type workflowsData struct {
	Workflows []models.Workflow
	Runs      []models.WorkflowRun
	Names     map[int64]string
}

func (c *Console) workflows(w http.ResponseWriter, r *http.Request, s *session) {
	ws, ok := c.workflowStore(w, r, s)
	if !ok {
		return
	}
	wfs, err := ws.ListWorkflows(r.Context())
	if err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	runs, err := ws.ListRuns(r.Context(), &chimedb.ListRunsParams{Limit: 20})
	if err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	names := make(map[int64]string, len(wfs))
	for _, wf := range wfs {
		names[wf.ID] = wf.Name
	}
	c.render(w, http.StatusOK, "workflows", &page{Title: "Workflows", Nav: "workflows", Session: s,
		Data: workflowsData{Workflows: wfs, Runs: runs, Names: names}})
}

type workflowData struct {
	G     *chimedb.WorkflowGraph
	Graph *flowGraph
	Runs  []models.WorkflowRun
	Defs  map[int64]string
}

func (c *Console) workflow(w http.ResponseWriter, r *http.Request, s *session) {
	ws, ok := c.workflowStore(w, r, s)
	if !ok {
		return
	}
	g, ok := byID(c, w, r, s, "workflow", ws.GetWorkflow)
	if !ok {
		return
	}
	runs, err := ws.ListRuns(r.Context(), &chimedb.ListRunsParams{WorkflowID: g.ID, Limit: 20})
	if err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	ids := make([]int64, 0, len(g.Steps))
	for _, st := range g.Steps {
		ids = append(ids, st.JobDefinitionID)
	}
	defs, err := c.st.Admin().DefinitionNames(r.Context(), slices.Compact(slices.Sorted(slices.Values(ids))))
	if err != nil {
		c.dbFail(w, r, s, err)
		return
	}
	c.render(w, http.StatusOK, "workflow", &page{Title: g.Name, Nav: "workflows", Session: s,
		Data: workflowData{G: g, Graph: layoutFlow(g.Steps, g.Edges, nil), Runs: runs, Defs: defs}})
}

type runData struct {
	V     *chimedb.RunView
	Graph *flowGraph
}

func (c *Console) run(w http.ResponseWriter, r *http.Request, s *session) {
	ws, ok := c.workflowStore(w, r, s)
	if !ok {
		return
	}
	v, ok := byID(c, w, r, s, "run", ws.GetRun)
	if !ok {
		return
	}
	steps := make([]models.WorkflowStep, len(v.Steps))
	states := make(map[int64]models.StepState, len(v.Steps))
	for i, st := range v.Steps {
		steps[i] = st.Step
		states[st.Step.ID] = st.State
	}
	c.render(w, http.StatusOK, "run", &page{Title: "Run " + strconv.FormatInt(v.Run.ID, 10), Nav: "workflows", Session: s,
		Flash: runDoneWords[r.URL.Query().Get("done")], Data: runData{V: v, Graph: layoutFlow(steps, v.Edges, states)}})
}

// flowGraph is a workflow drawn as SVG by the server: steps in columns by
// their longest path from a first step, edges as lines between them.
type flowGraph struct {
	Width, Height int
	Nodes         []flowNode
	Edges         []flowEdge
}

type flowNode struct {
	X, Y  int
	Name  string
	State string // "" on a workflow's page
}

type flowEdge struct {
	X1, Y1, X2, Y2 int
	Condition      string
}

// The graph's geometry, in SVG user units.
const (
	flowNodeW, flowNodeH = 150, 36
	flowColW, flowRowH   = 210, 56
	flowPad              = 16
)

// layoutFlow places steps in columns by their longest path from a step
// with no incoming edge, in id order within a column. A graph with a
// cycle (a bad row) still draws: its steps on a cycle go in the last
// column.
func layoutFlow(steps []models.WorkflowStep, edges []models.WorkflowEdge, states map[int64]models.StepState) *flowGraph {
	col := make(map[int64]int, len(steps))
	indeg := make(map[int64]int, len(steps))
	out := make(map[int64][]int64, len(steps))
	known := make(map[int64]bool, len(steps))
	for _, st := range steps {
		known[st.ID] = true
	}
	for _, e := range edges {
		if known[e.FromStepID] && known[e.ToStepID] {
			out[e.FromStepID] = append(out[e.FromStepID], e.ToStepID)
			indeg[e.ToStepID]++
		}
	}
	var queue []int64
	for _, st := range steps {
		if indeg[st.ID] == 0 {
			queue = append(queue, st.ID)
		}
	}
	seen := map[int64]bool{}
	maxCol := 0
	for i := 0; i < len(queue); i++ {
		id := queue[i]
		seen[id] = true
		for _, to := range out[id] {
			col[to] = max(col[to], col[id]+1)
			maxCol = max(maxCol, col[to])
			if indeg[to]--; indeg[to] == 0 {
				queue = append(queue, to)
			}
		}
	}
	for _, st := range steps {
		if !seen[st.ID] {
			col[st.ID] = maxCol + 1
		}
	}
	sorted := slices.Clone(steps)
	slices.SortStableFunc(sorted, func(a, b models.WorkflowStep) int {
		if col[a.ID] != col[b.ID] {
			return col[a.ID] - col[b.ID]
		}
		return int(a.ID - b.ID)
	})
	g := &flowGraph{}
	rows := map[int]int{}
	pos := make(map[int64][2]int, len(steps))
	for _, st := range sorted {
		c := col[st.ID]
		x, y := flowPad+c*flowColW, flowPad+rows[c]*flowRowH
		rows[c]++
		pos[st.ID] = [2]int{x, y}
		n := flowNode{X: x, Y: y, Name: st.Name}
		if states != nil {
			n.State = string(states[st.ID])
		}
		g.Nodes = append(g.Nodes, n)
		g.Width = max(g.Width, x+flowNodeW+flowPad)
		g.Height = max(g.Height, y+flowNodeH+flowPad)
	}
	for _, e := range edges {
		a, okA := pos[e.FromStepID]
		b, okB := pos[e.ToStepID]
		if !okA || !okB {
			continue
		}
		g.Edges = append(g.Edges, flowEdge{X1: a[0] + flowNodeW, Y1: a[1] + flowNodeH/2, X2: b[0] - 4, Y2: b[1] + flowNodeH/2,
			Condition: string(e.Condition)})
	}
	return g
}

// startRun is the workflow page's Start a run: params from the form's
// JSON object (empty: none), through the API, which checks the role.
func (c *Console) startRun(w http.ResponseWriter, r *http.Request, s *session) {
	id, ok := pathID(r)
	if !ok {
		c.fail(w, r, s, http.StatusNotFound, "There is no such workflow.")
		return
	}
	by := "console"
	if s.Who != nil && s.Who.Name != "" {
		by += ": " + s.Who.Name
	}
	body := map[string]any{"started_by": by}
	if p := strings.TrimSpace(r.PostFormValue("params")); p != "" {
		body["params"] = json.RawMessage(p)
		if !json.Valid(body["params"].(json.RawMessage)) {
			c.fail(w, r, s, http.StatusBadRequest, "The params are not valid JSON: write an object such as {\"day\": \"mon\"}.")
			return
		}
	}
	res := c.callAPI(r.Context(), http.MethodPost, fmt.Sprintf("%s/workflows/%d/runs", api.Prefix, id), body)
	if !res.ok() {
		c.fail(w, r, s, res.Status, res.Err)
		return
	}
	var run models.WorkflowRun
	_ = res.decode(&run)
	http.Redirect(w, r, fmt.Sprintf("/runs/%d?done=started", run.ID), http.StatusSeeOther)
}

// runAction is a run page's Cancel, Rerun, Pause and Resume.
func (c *Console) runAction(w http.ResponseWriter, r *http.Request, s *session) {
	id, ok := pathID(r)
	action := r.PathValue("action")
	if !ok || !slices.Contains([]string{"cancel", "rerun", "pause", "resume"}, action) {
		c.fail(w, r, s, http.StatusNotFound, "There is no such action.")
		return
	}
	res := c.callAPI(r.Context(), http.MethodPost, fmt.Sprintf("%s/runs/%d/%s", api.Prefix, id, action), nil)
	if !res.ok() {
		c.fail(w, r, s, res.Status, res.Err)
		return
	}
	http.Redirect(w, r, fmt.Sprintf("/runs/%d?done=%s", id, action), http.StatusSeeOther)
}

// runDoneWords are the run page's flashes after an action.
var runDoneWords = map[string]string{
	"started": "Run started.", "cancel": "Canceled: its pending steps are canceled, its running ones asked to stop.",
	"rerun": "Running again from the steps that did not succeed.", "pause": "Paused: no new step starts until it is resumed.",
	"resume": "Resumed.",
}
