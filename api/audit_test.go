package api

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

// callAs sends a request with token and, when client is set, the
// X-Chime-Client header.
func (b *bundle) callAs(token, client, method, path, body string) *httptest.ResponseRecorder {
	b.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if client != "" {
		req.Header.Set(ClientHeader, client)
	}
	rec := httptest.NewRecorder()
	b.h.ServeHTTP(rec, req)
	return rec
}

// TestAuditAPIAndCLIDoors: a change through the API is logged with the
// principal and door api; one whose client says it is the CLI with door
// cli; the log is read by admins only, filtered and paged, secrets masked.
func TestAuditAPIAndCLIDoors(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st)
		def := id(b.ok(201, "POST", "/api/v1/definitions",
			`{"name":"audit.api","task_type":"shell","default_params":{"command":"true","env":{"DB_PASSWORD":"s3cr3t-env"}}}`))
		tok := b.ok(201, "POST", "/api/v1/tokens", `{"name":"ed","role":"admin"}`)["token"].(string)
		viewer := b.ok(201, "POST", "/api/v1/tokens", `{"name":"vi","role":"viewer"}`)["token"].(string)
		rec := b.callAs(tok, "cli", "PATCH", "/api/v1/definitions/"+itoa(def), `{"description":"from the cli"}`)
		require.Equal(t, 200, rec.Code, rec.Body.String())

		page := b.ok(200, "GET", "/api/v1/audit?object_type=definition&object_id="+itoa(def), "")
		got := items(page)
		require.Len(t, got, 2)
		upd, ins := got[0].(map[string]any), got[1].(map[string]any)
		require.Equal(t, []any{"update", "ed", "cli"}, []any{upd["action"], upd["actor"], upd["door"]})
		require.Equal(t, []any{"insert", BootstrapName, "api", nil}, []any{ins["action"], ins["actor"], ins["door"], ins["before"]})
		require.Equal(t, "audit.api", ins["object_name"])
		require.Equal(t, "from the cli", upd["after"].(map[string]any)["description"])
		raw, _ := json.Marshal(page)
		require.NotContains(t, string(raw), "s3cr3t")
		require.Contains(t, string(raw), `"DB_PASSWORD":"********"`)

		// Tokens are admin objects too; their hash never shows.
		toks := items(b.ok(200, "GET", "/api/v1/audit?object_type=api_token&actor="+BootstrapName, ""))
		require.Len(t, toks, 2)
		require.Equal(t, "********", toks[0].(map[string]any)["after"].(map[string]any)["token_sha256"])

		// Paged, and filtered by time.
		p1 := b.ok(200, "GET", "/api/v1/audit?limit=1", "")
		require.Len(t, items(p1), 1)
		require.NotEmpty(t, p1["next_cursor"])
		p2 := b.ok(200, "GET", "/api/v1/audit?limit=1&cursor="+p1["next_cursor"].(string), "")
		require.Less(t, items(p2)[0].(map[string]any)["id"], items(p1)[0].(map[string]any)["id"])
		require.Empty(t, items(b.ok(200, "GET", "/api/v1/audit?since=2999-01-01T00:00:00Z", "")))
		require.Empty(t, items(b.ok(200, "GET", "/api/v1/audit?until=2000-01-01T00:00:00Z", "")))

		b.fails(400, "objet", "unknown query parameter", "GET", "/api/v1/audit?objet=x", "")
		b.fails(400, "since", "RFC 3339", "GET", "/api/v1/audit?since=yesterday", "")
		b.fails(400, "actor", "longer than 191", "GET", "/api/v1/audit?actor="+strings.Repeat("a", 200), "")
		b.fails(400, "actor", "given 2 times", "GET", "/api/v1/audit?actor=a&actor=b", "")
		require.Equal(t, 403, b.callAs(viewer, "", "GET", "/api/v1/audit", "").Code)
	})
}
