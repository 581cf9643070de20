package api

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

// TestNodeTagsAndDrain: /nodes shows tags and drain; drain and undrain
// write the row; an unknown or absurd node id is a clear error; a
// definition's required_tags are checked and stored sorted.
func TestNodeTagsAndDrain(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st)
		require.NoError(t, st.RegisterNode(t.Context(), &chimedb.RegisterNodeParams{ID: "gpu-1", Roles: "worker", Tags: "gpu,zone:eu"}))
		nodes := items(b.ok(200, "GET", "/api/v1/nodes", ""))
		require.Len(t, nodes, 1)
		require.Equal(t, "gpu,zone:eu", nodes[0].(map[string]any)["tags"])
		require.Equal(t, "", nodes[0].(map[string]any)["drain"])

		n := b.ok(200, "POST", "/api/v1/nodes/gpu-1/drain", "")
		require.Equal(t, "draining", n["drain"])
		require.Equal(t, "draining", items(b.ok(200, "GET", "/api/v1/nodes", ""))[0].(map[string]any)["drain"])
		n = b.ok(200, "POST", "/api/v1/nodes/gpu-1/undrain", "")
		require.Equal(t, "", n["drain"])
		b.fails(404, "", "does not exist", "POST", "/api/v1/nodes/nobody/drain", "")
		b.fails(404, "", "does not exist", "POST", "/api/v1/nodes/nobody/undrain", "")
		b.fails(400, "node", "1 to 191", "POST", "/api/v1/nodes/"+strings.Repeat("x", 10000)+"/drain", "")

		d := b.ok(201, "POST", "/api/v1/definitions", `{"name":"render","task_type":"sleep","required_tags":"zone:eu, gpu"}`)
		require.Equal(t, "gpu,zone:eu", d["required_tags"])
		d = b.ok(200, "PATCH", "/api/v1/definitions/"+itoa(id(d)), `{"required_tags":""}`)
		require.Equal(t, "", d["required_tags"])
		for _, c := range []struct{ want, body string }{
			{"holds ' '", `{"name":"x","task_type":"sleep","required_tags":"my tag"}`},
			{"more than 2100", `{"name":"x","task_type":"sleep","required_tags":"` + strings.Repeat("x", 10000) + `"}`},
			{"more than 64", `{"name":"x","task_type":"sleep","required_tags":"` + strings.Repeat("x", 65) + `"}`},
			{"empty tag", `{"name":"x","task_type":"sleep","required_tags":"gpu,,eu"}`},
			{"holds 'G'", `{"name":"x","task_type":"sleep","required_tags":"GPU"}`},
		} {
			b.fails(400, "required_tags", c.want, "POST", "/api/v1/definitions", c.body)
		}
	})
}
