package app

import (
	"encoding/json"
	"html"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/store"
)

// A running node reports one build everywhere: the console's footer,
// GET /api/v1/version and its row in nodes (issue 30).
func TestNodeReportsItsBuild(t *testing.T) {
	t.Parallel()
	e := newNodeEnv(t, store.SQLite, 0)
	e.cfg.API.Token = consoleTestToken
	e.cfg.TaskEngine.Enabled = false
	stop := e.serve()
	defer stop()
	base := e.apiURL(0)

	_, body := fetch(t, browser(t), "GET", base+"/login", nil)
	require.Contains(t, html.UnescapeString(body), "chime "+Build().Short())

	req, err := http.NewRequest("GET", base+"/api/v1/version", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+consoleTestToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var got map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	require.Equal(t, Build().Version, got["version"])
	require.EqualValues(t, Build().Schema, got["schema_version"])

	var version string
	require.NoError(t, e.st.DB().Raw("SELECT version FROM nodes WHERE id = ?", e.cfg.Node.ID).Row().Scan(&version))
	require.Equal(t, nodeVersion(), version)
}
