package console_test

import (
	"io"
	"net/http"
	"net/url"
	"strconv"
)

func ioCopy(w io.Writer, resp *http.Response) (int64, error) { return io.Copy(w, resp.Body) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}
