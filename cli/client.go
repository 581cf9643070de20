package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chimesched/chime/api"
	"github.com/chimesched/chime/app"
	"github.com/chimesched/chime/internal/loopback"
)

// Environment variables the admin commands read.
const (
	EnvAPIURL       = "CHIME_API_URL"
	EnvAPIToken     = "CHIME_API_TOKEN"
	EnvAPITokenFile = "CHIME_API_TOKEN_FILE"
	EnvAPICACert    = "CHIME_API_CA_CERT"
	// EnvAPIAddr and EnvAPITLSCert are the server's (api.addr,
	// api.tls_cert): without CHIME_API_URL the CLI derives the URL from
	// them, so moving the server with one variable moves the CLI too.
	EnvAPIAddr    = "CHIME_API_ADDR"
	EnvAPITLSCert = "CHIME_API_TLS_CERT"
)

// DefaultAPIURL is where the admin commands look for the API.
const DefaultAPIURL = "http://127.0.0.1:8080"

// clientFlags are the flags every admin command shares.
type clientFlags struct {
	apiURL    string
	token     string
	tokenFile string
	caCert    string
	output    string
}

func (f *clientFlags) register(cmd *cobra.Command) {
	pf := cmd.PersistentFlags()
	// No defaults shown from the environment: a token must not end up in --help.
	pf.StringVar(&f.apiURL, "api-url", "", "chime API base URL (default $"+EnvAPIURL+", else from $"+EnvAPIAddr+
		" as serve reads it, else "+DefaultAPIURL+")")
	pf.StringVar(&f.token, "token", "", "API bearer token (default $"+EnvAPIToken+", else the token file)")
	pf.StringVar(&f.tokenFile, "token-file", "", "file holding the API token (default $"+EnvAPITokenFile+
		", else the file chime serve generates, for a loopback --api-url)")
	pf.StringVar(&f.caCert, "ca-cert", "", "PEM file of the CA that signed the API's TLS certificate (default $"+EnvAPICACert+", else the system's)")
	pf.StringVarP(&f.output, "output", "o", "table", "output format: table or json")
}

// client talks to the chime API.
type client struct {
	base  string
	token string
	// tokenSource says where token came from, or why there is none, for
	// the message of a 401.
	tokenSource string
	output      string
	http        *http.Client
}

func (f *clientFlags) client() (*client, error) { return f.clientWith(os.Getenv) }

// clientWith builds the client from the flags, then getenv.
func (f *clientFlags) clientWith(getenv func(string) string) (*client, error) {
	base := f.apiURL
	if base == "" {
		base = getenv(EnvAPIURL)
	}
	if base == "" {
		derived, err := urlFromAddr(getenv(EnvAPIAddr), getenv(EnvAPITLSCert) != "")
		if err != nil {
			return nil, err
		}
		base = derived
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--api-url %q: want a URL such as %s", base, DefaultAPIURL)
	}
	token, source, err := f.resolveToken(u, getenv)
	if err != nil {
		return nil, err
	}
	switch f.output {
	case "table", "json":
	default:
		return nil, fmt.Errorf("--output %q: want table or json", f.output)
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	caFile := f.caCert
	if caFile == "" {
		caFile = getenv(EnvAPICACert)
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("--ca-cert: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-cert %s: no PEM certificate in it", caFile)
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		hc.Transport = tr
	}
	return &client{base: strings.TrimRight(base, "/"), token: token, tokenSource: source, output: f.output, http: hc}, nil
}

// urlFromAddr is the URL of a server listening on addr (api.addr): https
// when it serves TLS, and a wildcard host (0.0.0.0, [::], empty) reached
// on loopback, where the token file serve generated is also sent.
func urlFromAddr(addr string, tls bool) (string, error) {
	if addr == "" {
		return DefaultAPIURL, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("%s %q: want host:port such as 127.0.0.1:8080 (or set %s): %v", EnvAPIAddr, addr, EnvAPIURL, err)
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port), nil
}

// resolveToken picks the token: --token, $CHIME_API_TOKEN, --token-file,
// $CHIME_API_TOKEN_FILE, then the file `chime serve` generates. That last
// one is this machine's server's key, so it is sent only to a loopback URL;
// a file named explicitly is sent wherever the URL points. source says
// where the token came from, or why there is none.
func (f *clientFlags) resolveToken(u *url.URL, getenv func(string) string) (token, source string, err error) {
	if f.token != "" {
		return f.token, "--token", nil
	}
	if t := getenv(EnvAPIToken); t != "" {
		return t, EnvAPIToken, nil
	}
	switch {
	case f.tokenFile != "":
		tok, err := app.ReadTokenFile(f.tokenFile)
		return tok, "--token-file " + f.tokenFile, err
	case getenv(EnvAPITokenFile) != "":
		file := getenv(EnvAPITokenFile)
		tok, err := app.ReadTokenFile(file)
		return tok, EnvAPITokenFile + "=" + file, err
	}
	unset := "no token: --token, " + EnvAPIToken + " and " + EnvAPITokenFile + " are unset"
	def, err := app.DefaultTokenFile()
	if err != nil {
		return "", unset + ", and there is no user configuration directory for the file chime serve writes", nil
	}
	if !loopback.Host(u.Hostname()) {
		return "", unset + ", and the file chime serve writes (" + def + ") is sent only to a loopback --api-url", nil
	}
	tok, err := app.ReadTokenFile(def)
	if errors.Is(err, fs.ErrNotExist) {
		return "", unset + ", and " + def + " does not exist (chime serve writes it when api.token is empty)", nil
	}
	return tok, def + ", the file chime serve writes", err
}

// apiError is an error answer of the API, shown as the API worded it.
type apiError struct {
	status int
	body   api.Error
}

// The field is added only when the message does not name it already, and
// a leading "field: " is dropped when the rest names it again, so that
// "cron_expr: bad cron_expr …" reads "bad cron_expr …".
func (e *apiError) Error() string {
	msg, f := e.body.Error, e.body.Field
	if f != "" {
		if rest, ok := strings.CutPrefix(msg, f+": "); ok && strings.Contains(rest, f) {
			msg = rest
		}
		if !strings.Contains(msg, f) {
			msg = fmt.Sprintf("%s (field %s)", msg, f)
		}
	}
	return inert(msg, false)
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
	// The audit log's door (api.ClientHeader): claimed by the client, so
	// informational only.
	req.Header.Set("X-Chime-Client", "cli")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the chime API at %s (is `chime serve` running? set --api-url, %s or %s): %w", c.base, EnvAPIURL, EnvAPIAddr, err)
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
		if resp.StatusCode == http.StatusUnauthorized {
			if c.token == "" {
				e.body.Error += " (" + c.tokenSource + "; set --token, " + EnvAPIToken + " or " + EnvAPITokenFile + ")"
			} else {
				e.body.Error += " (the token came from " + c.tokenSource + ")"
			}
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
