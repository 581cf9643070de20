package httpcall_test

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/tasks/httpcall"
)

// Jobs with the same params share the request read from them, as a
// template: each sends a copy whose header map, URL and userinfo are its
// own, so nothing one request's sender does to it reaches the next job's.
func TestRequestsOfOneDocumentShareNothing(t *testing.T) {
	t.Parallel()
	const doc = `{"url":"http://job:s3cret@example.test/a?x=1","method":"post","headers":{"x-token":"a","Host":"h.example.test"},"body":"payload"}`
	first, err := httpcall.Request(doc)
	require.NoError(t, err)
	first.Header.Set("X-Token", "changed")
	first.Header.Add("X-Other", "added")
	first.Header["Host"][0] = "changed.example.test"
	first.URL.Path = "/changed"
	first.URL.User = nil
	second, err := httpcall.Request(doc)
	require.NoError(t, err)

	require.Equal(t, http.Header{"X-Token": {"a"}, "Host": {"h.example.test"}}, second.Header)
	require.Equal(t, "http://job:s3cret@example.test/a?x=1", second.URL.String())
	require.Equal(t, "h.example.test", second.Host)
	require.Equal(t, http.MethodPost, second.Method)
	require.EqualValues(t, len("payload"), second.ContentLength)
	body, err := io.ReadAll(second.Body)
	require.NoError(t, err)
	require.Equal(t, "payload", string(body))
	// Growing one value cannot write into the next one's.
	require.Len(t, second.Header["X-Token"], 1)
	require.Equal(t, 1, cap(second.Header["X-Token"]))
}

// A herd of jobs from two params documents that differ only in their
// credentials: each request carries its own document's, and none of the
// other's, however the herd interleaves on the shared connections.
func TestHerdOfTwoDocuments(t *testing.T) {
	t.Parallel()
	type seen struct{ path, auth, token, body string }
	var mu sync.Mutex
	var got []seen
	srv := server(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("X-Token"), string(b)})
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	params := func(who string) map[string]any {
		return map[string]any{
			"url":     strings.Replace(srv.URL, "http://", "http://"+who+":pw-"+who+"@", 1) + "/" + who,
			"method":  "POST",
			"headers": map[string]string{"X-Token": "token-" + who},
			"body":    "body-" + who,
		}
	}
	const herd = 40
	var wg sync.WaitGroup
	errs := make([]error, herd)
	for i := range herd {
		b := setup(t, params([]string{"a", "b"}[i%2]))
		wg.Go(func() { errs[i] = b.task.Execute(b.ctx, b.job) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, got, herd)
	for _, s := range got {
		who := strings.TrimPrefix(s.path, "/")
		auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(who+":pw-"+who))
		require.Equal(t, seen{"/" + who, auth, "token-" + who, "body-" + who}, s)
	}
}

// A redirect that keeps the method (307, 308) sends the body again, from
// the start.
func TestBodyResentOnRedirect(t *testing.T) {
	t.Parallel()
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		got := make(chan string, 1)
		srv := server(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/from" {
				http.Redirect(w, r, "/to", code)
				return
			}
			b, _ := io.ReadAll(r.Body)
			got <- fmt.Sprintf("%s %d %s", r.Method, r.ContentLength, b)
			w.WriteHeader(http.StatusNoContent)
		})
		require.NoError(t, run(t, map[string]any{"url": srv.URL + "/from", "method": "PUT", "body": "the body"}))
		require.Equal(t, "PUT 8 the body", <-got, "redirected by %d", code)
	}
}
