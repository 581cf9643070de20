package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chimesched/chime/api"
)

// Environment variables the admin commands read.
const (
	EnvAPIURL   = "CHIME_API_URL"
	EnvAPIToken = "CHIME_API_TOKEN"
)

// DefaultAPIURL is where the admin commands look for the API.
const DefaultAPIURL = "http://127.0.0.1:8080"

// clientFlags are the flags every admin command shares.
type clientFlags struct {
	apiURL string
	token  string
	output string
}

func (f *clientFlags) register(cmd *cobra.Command) {
	pf := cmd.PersistentFlags()
	// No defaults shown from the environment: a token must not end up in --help.
	pf.StringVar(&f.apiURL, "api-url", "", "chime API base URL (default $"+EnvAPIURL+", else "+DefaultAPIURL+")")
	pf.StringVar(&f.token, "token", "", "API bearer token (default $"+EnvAPIToken+")")
	pf.StringVarP(&f.output, "output", "o", "table", "output format: table or json")
}

// client talks to the chime API.
type client struct {
	base   string
	token  string
	output string
	http   *http.Client
}

func (f *clientFlags) client() (*client, error) {
	base := f.apiURL
	if base == "" {
		base = os.Getenv(EnvAPIURL)
	}
	if base == "" {
		base = DefaultAPIURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--api-url %q: want a URL such as %s", base, DefaultAPIURL)
	}
	token := f.token
	if token == "" {
		token = os.Getenv(EnvAPIToken)
	}
	switch f.output {
	case "table", "json":
	default:
		return nil, fmt.Errorf("--output %q: want table or json", f.output)
	}
	return &client{base: strings.TrimRight(base, "/"), token: token, output: f.output, http: &http.Client{Timeout: 30 * time.Second}}, nil
}

// apiError is an error answer of the API, shown as the API worded it.
type apiError struct {
	status int
	body   api.Error
}

func (e *apiError) Error() string {
	if e.body.Field != "" {
		return inert(fmt.Sprintf("%s (field %s)", e.body.Error, e.body.Field), false)
	}
	return inert(e.body.Error, false)
}

// do sends a request and decodes a 2xx answer into out (unless nil).
func (c *client) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the chime API at %s (is `chime serve` running? set --api-url or %s): %w", c.base, EnvAPIURL, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("read answer of %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		e := &apiError{status: resp.StatusCode}
		if json.Unmarshal(data, &e.body) != nil || e.body.Error == "" {
			e.body.Error = fmt.Sprintf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, strings.TrimSpace(string(data)))
		}
		if resp.StatusCode == http.StatusUnauthorized && c.token == "" {
			e.body.Error += " (set --token or " + EnvAPIToken + ")"
		}
		return e
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = append((*raw)[:0], data...)
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode answer of %s %s: %w", method, path, err)
	}
	return nil
}
