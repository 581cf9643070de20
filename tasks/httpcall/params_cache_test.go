package httpcall_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/tasks/httpcall"
)

// The params cache (not parallel: it counts the shared cache's entries).
// A document read twice is one entry, and what it gives back is the same
// as a first read; a document holding secrets, or longer than the bound,
// is never kept; the entries stay within their bound; and jobs whose
// params differ only in a header each send their own.
func TestParamsCache(t *testing.T) {
	doc := func(i int) string {
		return fmt.Sprintf(`{"url":"http://example.test/%d","method":"post","headers":{"X-N":"%d"}}`, i, i)
	}
	before := httpcall.ParsedLen()
	for range 3 {
		url, method, headers, err := httpcall.ParseCached(doc(1), false)
		require.NoError(t, err)
		require.Equal(t, "http://example.test/1", url)
		require.Equal(t, "POST", method)
		require.Equal(t, map[string]string{"X-N": "1"}, headers)
	}
	require.Equal(t, before+1, httpcall.ParsedLen(), "read three times, kept once")

	_, _, headers, err := httpcall.ParseCached(`{"url":"http://example.test/","headers":{"Authorization":"Bearer s3cret"}}`, true)
	require.NoError(t, err)
	require.Equal(t, "Bearer s3cret", headers["Authorization"])
	long := `{"url":"http://example.test/","body":"` + strings.Repeat("x", httpcall.MaxParsedBytes) + `"}`
	_, _, _, err = httpcall.ParseCached(long, false)
	require.NoError(t, err)
	require.Equal(t, before+1, httpcall.ParsedLen(), "neither secret params nor a long document are kept")

	// A document that does not parse is refused every time, and not kept.
	for range 2 {
		_, _, _, err = httpcall.ParseCached(`{"url":"ftp://example.test/"}`, false)
		require.ErrorContains(t, err, `field "url"`)
		_, _, _, err = httpcall.ParseCached(doc(1)[:len(doc(1))-1]+`,"url":"http://other.test/"}`, false)
		require.ErrorContains(t, err, "duplicate key")
	}
	require.Equal(t, before+1, httpcall.ParsedLen())

	for i := range httpcall.MaxParsed + 10 {
		_, _, _, err := httpcall.ParseCached(doc(i), false)
		require.NoError(t, err)
		require.LessOrEqual(t, httpcall.ParsedLen(), httpcall.MaxParsed)
	}

	// Two schedules' jobs, the same URL, each its own token: each request
	// carries its own, whichever job's params were read first.
	got := make(chan string, 4)
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("X-Token")
		w.WriteHeader(http.StatusNoContent)
	})
	for _, tok := range []string{"a", "b", "a", "b"} {
		require.NoError(t, run(t, map[string]any{"url": srv.URL, "headers": map[string]string{"X-Token": tok}}))
		require.Equal(t, tok, <-got)
	}
}
