package console

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/models"
)

// layoutFlow puts each step one column after its farthest upstream step,
// and still draws a graph whose edges make a cycle (a row written by SQL).
func TestLayoutFlow(t *testing.T) {
	steps := []models.WorkflowStep{{ID: 1, Name: "a"}, {ID: 2, Name: "b"}, {ID: 3, Name: "c"}, {ID: 4, Name: "d"}}
	edges := []models.WorkflowEdge{{FromStepID: 1, ToStepID: 2}, {FromStepID: 1, ToStepID: 3}, {FromStepID: 2, ToStepID: 4},
		{FromStepID: 3, ToStepID: 4}, {FromStepID: 1, ToStepID: 4}}
	g := layoutFlow(steps, edges, map[int64]models.StepState{1: models.StepSucceeded})
	x := map[string]int{}
	for _, n := range g.Nodes {
		x[n.Name] = n.X
	}
	require.Equal(t, x["b"], x["c"])
	require.Less(t, x["a"], x["b"])
	require.Less(t, x["b"], x["d"], "d waits for b and c, not only for a")
	require.Equal(t, "succeeded", g.Nodes[0].State)
	require.Len(t, g.Edges, 5)

	cyc := layoutFlow(steps[:2], []models.WorkflowEdge{{FromStepID: 1, ToStepID: 2}, {FromStepID: 2, ToStepID: 1}}, nil)
	require.Len(t, cyc.Nodes, 2)
	require.Len(t, cyc.Edges, 2)
}
