package cli

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/api"
	"github.com/chimesched/chime/app"
	"github.com/chimesched/chime/configs"
	"github.com/chimesched/chime/internal/loopback"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/store"
)

func fakeEnv(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestTokenResolution(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "tok")
	require.NoError(t, os.WriteFile(file, []byte("from-the-file-0123456789\n"), 0o600))
	loose := filepath.Join(dir, "loose")
	require.NoError(t, os.WriteFile(loose, []byte("from-the-file-0123456789\n"), 0o600))
	require.NoError(t, os.Chmod(loose, 0o644))
	for _, c := range []struct {
		flag, flagFile string
		env            map[string]string
		want, err      string
	}{
		{flag: "flag-token", env: map[string]string{EnvAPIToken: "env-token"}, want: "flag-token"},
		{env: map[string]string{EnvAPIToken: "env-token", EnvAPITokenFile: file}, want: "env-token"},
		{env: map[string]string{EnvAPITokenFile: file}, want: "from-the-file-0123456789"},
		{flagFile: file, env: map[string]string{EnvAPITokenFile: "nope"}, want: "from-the-file-0123456789"},
		{env: map[string]string{EnvAPITokenFile: loose}, err: "readable by group or others"},
		{env: map[string]string{EnvAPITokenFile: filepath.Join(dir, "missing")}, err: "no such file"},
	} {
		f := &clientFlags{token: c.flag, tokenFile: c.flagFile, output: "table"}
		cl, err := f.clientWith(fakeEnv(c.env))
		if c.err != "" {
			require.ErrorContains(t, err, c.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, c.want, cl.token)
	}
	f := &clientFlags{output: "table", caCert: file}
	_, err := f.clientWith(fakeEnv(nil))
	require.ErrorContains(t, err, "no PEM certificate")
}

// TestServeTokenFileReachesCLI: the token serve generates is the one the
// CLI sends to a loopback URL by default, and never to another host.
// Not parallel: it points the user configuration directory at a temporary one.
func TestServeTokenFileReachesCLI(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir()) // macOS reads the directory from HOME
	cfg, err := configs.Load("", fakeEnv(nil))
	require.NoError(t, err)
	log, _ := test.NewNullLogger()
	require.NoError(t, app.EnsureToken(cfg, log))
	require.NotEmpty(t, cfg.API.Token)
	def, err := app.DefaultTokenFile()
	require.NoError(t, err)
	require.FileExists(t, def)

	for base, want := range map[string]string{
		"http://127.0.0.1:8080": cfg.API.Token, "https://localhost:1": cfg.API.Token, "http://[::1]:8080": cfg.API.Token,
		"https://chime.example.com": "", "http://10.0.0.5:8080": "",
	} {
		f := &clientFlags{apiURL: base, output: "table"}
		cl, err := f.clientWith(fakeEnv(nil))
		require.NoError(t, err)
		require.Equal(t, want, cl.token, base)
	}
	u, _ := url.Parse("http://127.0.0.1:8080")
	require.True(t, loopback.Host(u.Hostname()))
}

func TestCLIOverTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "chime test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600))

	st := testdb.Open(t, store.SQLite)
	log, _ := test.NewNullLogger()
	srv, err := api.New(st, &api.Config{Token: cliToken, Addr: "127.0.0.1:0", TLSCert: certFile, TLSKey: keyFile, Logger: log})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(func() { _ = srv.Stop(ctx) })
	base := "https://" + srv.Addr()

	run := func(args ...string) (string, error) {
		cmd := NewRootCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append(args, "--api-url", base, "--token", cliToken))
		err := cmd.ExecuteContext(ctx)
		return out.String(), err
	}
	out, err := run("nodes", "--ca-cert", certFile)
	require.NoError(t, err, out)
	require.Contains(t, out, "HOSTNAME")
	_, err = run("nodes")
	require.ErrorContains(t, err, "certificate", "an unknown CA is refused, not skipped")
}

// The CLI finds a server moved with CHIME_API_ADDR, the variable serve
// reads, when CHIME_API_URL is not set; CHIME_API_URL and --api-url win.
func TestAPIURLFromServeAddr(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		flag string
		env  map[string]string
		want string
	}{
		{env: nil, want: DefaultAPIURL},
		{env: map[string]string{EnvAPIAddr: "127.0.0.1:9191"}, want: "http://127.0.0.1:9191"},
		{env: map[string]string{EnvAPIAddr: "0.0.0.0:9191"}, want: "http://127.0.0.1:9191"},
		{env: map[string]string{EnvAPIAddr: ":9191"}, want: "http://127.0.0.1:9191"},
		{env: map[string]string{EnvAPIAddr: "[::]:9191"}, want: "http://[::1]:9191"},
		{env: map[string]string{EnvAPIAddr: "chime.internal:443", EnvAPITLSCert: "/etc/chime/cert.pem"}, want: "https://chime.internal:443"},
		{env: map[string]string{EnvAPIAddr: "127.0.0.1:9191", EnvAPIURL: "http://127.0.0.1:7000"}, want: "http://127.0.0.1:7000"},
		{flag: "http://127.0.0.1:6000", env: map[string]string{EnvAPIAddr: "127.0.0.1:9191"}, want: "http://127.0.0.1:6000"},
	} {
		f := &clientFlags{apiURL: c.flag, output: "table", token: "t"}
		cl, err := f.clientWith(fakeEnv(c.env))
		require.NoError(t, err, c.env)
		require.Equal(t, c.want, cl.base, c.env)
	}
	f := &clientFlags{output: "table", token: "t"}
	_, err := f.clientWith(fakeEnv(map[string]string{EnvAPIAddr: "no-port"}))
	require.ErrorContains(t, err, EnvAPIAddr)
}

// End to end: a server on another port is reached through CHIME_API_ADDR.
// Not parallel: it sets the process's environment.
func TestCLIFindsServerFromAPIAddr(t *testing.T) {
	url := startAPI(t)
	t.Setenv(EnvAPIURL, "")
	t.Setenv(EnvAPIAddr, strings.TrimPrefix(url, "http://"))
	cmd := NewRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"nodes", "--token", cliToken})
	require.NoError(t, cmd.ExecuteContext(context.Background()), out.String())
	require.Contains(t, out.String(), "HOSTNAME")
}
