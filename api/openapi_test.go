package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

type openAPIDocument struct {
	OpenAPI string                                `json:"openapi"`
	Paths   map[string]map[string]json.RawMessage `json:"paths"`
}

// TestOpenAPICoversEveryRoute fails when a route the server serves is
// missing from api/openapi.json, or the document lists one it does not serve.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	t.Parallel()
	var doc openAPIDocument
	require.NoError(t, json.Unmarshal(openAPIDoc, &doc))
	require.True(t, strings.HasPrefix(doc.OpenAPI, "3."), "OpenAPI 3 document")

	served := map[string]bool{}
	for _, rt := range routeTable {
		key := strings.ToLower(rt.method) + " " + rt.path
		served[key] = true
		ops, ok := doc.Paths[rt.path]
		require.True(t, ok, "route %s %s is missing from api/openapi.json", rt.method, rt.path)
		_, ok = ops[strings.ToLower(rt.method)]
		require.True(t, ok, "route %s %s is missing from api/openapi.json", rt.method, rt.path)
	}
	for path, ops := range doc.Paths {
		for method := range ops {
			if method == "parameters" {
				continue
			}
			require.True(t, served[method+" "+path], "api/openapi.json documents %s %s, which the server does not serve", method, path)
		}
	}
}

func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	b := setup(t, testdb.Open(t, store.SQLite))
	rec := b.call("GET", "/api/v1/openapi.json", "")
	require.Equal(t, http.StatusOK, rec.Code)
	require.JSONEq(t, string(OpenAPI()), rec.Body.String())
}
