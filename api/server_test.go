package api

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/configs"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
)

func TestAuthAndOps(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st)
		for i, rt := range routeTable {
			path := strings.ReplaceAll(strings.ReplaceAll(rt.path, "{id}", "1"), "{name}", "x")
			for _, auth := range []string{"", "Bearer wrong", "Basic " + testToken, "Bearer " + testToken + "x"} {
				req := httptest.NewRequest(rt.method, path, strings.NewReader("{}"))
				// An address per route: one address is refused (429)
				// after a few failures (auth_test.go).
				req.RemoteAddr = fmt.Sprintf("192.0.2.%d:1234", i+1)
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				rec := httptest.NewRecorder()
				b.h.ServeHTTP(rec, req)
				if rt.public {
					require.Equal(t, http.StatusOK, rec.Code, "%s %s", rt.method, path)
					continue
				}
				require.Equal(t, http.StatusUnauthorized, rec.Code, "%s %s with %q", rt.method, path, auth)
				var e Error
				require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e))
				require.Contains(t, e.Error, "bearer token")
			}
			// With the token, the mux knows the route (it does not fall
			// through to the JSON "no route" answer).
			rec := b.call(rt.method, path, "{}")
			require.NotContains(t, rec.Body.String(), "no route", "%s %s", rt.method, path)
		}
		b.fails(404, "", "no route GET /api/v1/nope", "GET", "/api/v1/nope", "")

		rec := b.call("GET", "/metrics", "")
		require.Equal(t, 200, rec.Code)
		require.Contains(t, rec.Body.String(), "chime_pool_capacity")
		require.Equal(t, "ready", b.ok(200, "GET", "/readyz", "")["status"])
		require.Equal(t, "ok", b.ok(200, "GET", "/healthz", "")["status"])
	})
}

func TestReadyzFailsWithoutDatabase(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.SQLite)
	b := setup(t, st)
	require.NoError(t, st.Close())
	b.fails(503, "", "database unreachable", "GET", "/readyz", "")
	// /readyz is public: the driver's words (DSN host, user, file) stay in the log.
	rec := b.call("GET", "/readyz", "")
	require.NotContains(t, rec.Body.String(), "sql")
	require.NotContains(t, rec.Body.String(), "closed")
}

func TestNodesAndConfigurations(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st)
		require.Empty(t, items(b.ok(200, "GET", "/api/v1/nodes", "")))
		now := store.DBTime(time.Now())
		require.NoError(t, st.DB().Create(&models.Node{ID: "n1", Hostname: "h", PID: 7, StartedAt: now, HeartbeatAt: now, Status: "alive"}).Error)
		nodes := items(b.ok(200, "GET", "/api/v1/nodes", ""))
		require.Len(t, nodes, 1)
		require.Equal(t, "n1", nodes[0].(map[string]any)["id"])
		b.fails(400, "x", "unknown query parameter", "GET", "/api/v1/nodes?x=1", "")

		const path = "/api/v1/configurations"
		require.Empty(t, items(b.ok(200, "GET", path, "")))
		b.fails(404, "", `configuration "smtp.from" does not exist`, "GET", path+"/smtp.from", "")
		c := b.ok(200, "PUT", path+"/taskengine.pool_size", `{"value":"16","description":"workers per node"}`)
		require.Equal(t, "16", c["value"])
		c = b.ok(200, "PUT", path+"/taskengine.pool_size", `{"value":"32"}`)
		require.Equal(t, "workers per node", c["description"], "a missing description keeps the stored one")
		got := b.ok(200, "GET", path+"/taskengine.pool_size", "")
		require.Equal(t, "32", got["value"])
		require.Len(t, items(b.ok(200, "GET", path, "")), 1)
		b.fails(400, "value", "value is required", "PUT", path+"/taskengine.pool_size", `{"description":"x"}`)
		b.fails(400, "value", "expected a string", "PUT", path+"/taskengine.pool_size", `{"value":16}`)
		b.fails(400, "value", "taskengine.pool_size", "PUT", path+"/taskengine.pool_size", `{"value":"lots"}`)
		require.Equal(t, "8", b.ok(200, "PUT", path+"/taskengine.pool_size", `{"value":"8"}`)["value"])
		b.fails(400, "name", "white space", "PUT", path+"/a%20b", `{"value":"1"}`)
		b.fails(400, "x", "unknown query parameter", "GET", path+"?x=1", "")
	})
}

// Secrets are write-only: every answer shows them as configs.Redacted.
// Rows are checked as strictly as start-up: unknown keys (with close
// matches), keys only the file or environment may set, and values out of
// bounds get a 400 naming the key.
func TestConfigurationSecretsAndKeys(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		b := setup(t, st)
		const path = "/api/v1/configurations"
		const secret = "hunter2-smtp"
		for _, body := range []string{
			b.call("PUT", path+"/smtp.username", `{"value":"chime"}`).Body.String(),
			b.call("PUT", path+"/smtp.password", `{"value":"`+secret+`"}`).Body.String(),
			b.call("GET", path+"/smtp.password", "").Body.String(),
			b.call("GET", path, "").Body.String(),
		} {
			require.NotContains(t, body, secret)
		}
		require.Equal(t, configs.Redacted, b.ok(200, "GET", path+"/smtp.password", "")["value"])
		stored, err := st.Admin().GetConfiguration(context.Background(), "smtp.password")
		require.NoError(t, err)
		require.Equal(t, secret, stored.Value, "PUT still sets the secret")
		// A row an admin wrote with plain SQL under any secret-looking name.
		require.NoError(t, st.Admin().SetConfiguration(context.Background(), &models.Configuration{Name: "api.token", Value: "tok-in-table"}))
		require.NotContains(t, b.call("GET", path, "").Body.String(), "tok-in-table")
		require.NotContains(t, b.call("GET", path+"/api.token", "").Body.String(), "tok-in-table")

		b.fails(400, "name", "did you mean taskengine.pool_size?", "PUT", path+"/taskengine.poolsize", `{"value":"8"}`)
		b.fails(400, "name", "taskengine.poolsize: not a configuration key", "PUT", path+"/taskengine.poolsize", `{"value":"8"}`)
		for _, k := range []string{"node.id", "api.token", "api.addr", "database.dsn", "database.driver"} {
			b.fails(400, "name", "only in the configuration file or by "+configs.EnvName(k), "PUT", path+"/"+k, `{"value":"x"}`)
		}
		b.fails(400, "value", "between 0 and 36500", "PUT", path+"/retention_days", `{"value":"200000"}`)
		// Each of these at 1ns made every node spin.
		for _, k := range []string{"cluster.heartbeat", "taskengine.poll_interval", "taskengine.control_interval", "scheduleengine.sync_interval",
			"scheduleengine.batch_wait", "scheduleengine.fire_ahead", "shutdown_grace"} {
			b.fails(400, "value", k+` = "1ns": must be`, "PUT", path+"/"+k, `{"value":"1ns"}`)
		}
		rec := b.call("PUT", path+"/smtp.password", `{"value":"bad
secret-with-newline"}`)
		require.Equal(t, 400, rec.Code)
		require.NotContains(t, rec.Body.String(), "secret-with-newline")
		// Checked with the other rows: smtp.host needs smtp.from, set first.
		b.fails(400, "value", "smtp.from: required", "PUT", path+"/smtp.host", `{"value":"mail.example.com"}`)
		b.ok(200, "PUT", path+"/smtp.from", `{"value":"chime@example.com"}`)
		b.ok(200, "PUT", path+"/smtp.host", `{"value":"mail.example.com"}`)
	})
}

func TestStartStop(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.SQLite)
	log, _ := test.NewNullLogger()
	srv, err := New(st, &Config{Addr: "127.0.0.1:0", Token: "t", Logger: log})
	require.NoError(t, err)
	require.NoError(t, srv.Stop(context.Background()), "stop before start is harmless")
	ctx := context.Background()
	require.NoError(t, srv.Start(ctx))
	require.NoError(t, srv.Start(ctx), "start twice is a no-op")
	resp, err := http.Get("http://" + srv.Addr() + "/healthz")
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.NoError(t, srv.Stop(ctx))
	require.NoError(t, srv.Stop(ctx))
	require.Empty(t, srv.Addr())
}

func TestTokenRequiredOffLoopback(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.SQLite)
	log, hook := test.NewNullLogger()
	for _, addr := range []string{":8080", "0.0.0.0:8080", "192.0.2.1:8080", "example.com:80"} {
		_, err := New(st, &Config{Addr: addr, Logger: log})
		require.ErrorContains(t, err, "api.token is empty", addr)
		_, err = New(st, &Config{Addr: addr, Token: "fifteen-chars-x", Logger: log})
		require.ErrorContains(t, err, "at least 16 characters", addr)
		_, err = New(st, &Config{Addr: addr, Token: "sixteen-chars-xx", Logger: log})
		require.NoError(t, err, addr)
	}
	for _, addr := range []string{"127.0.0.1:8080", "[::1]:8080", "localhost:8080", ""} {
		hook.Reset()
		srv, err := New(st, &Config{Addr: addr, Logger: log})
		require.NoError(t, err, addr)
		require.Equal(t, logrus.WarnLevel, hook.LastEntry().Level)
		// Without a token the API is open, on loopback only.
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/api/v1/nodes", nil)
		req.Host = "localhost:8080"
		srv.Handler().ServeHTTP(rec, req)
		require.Equal(t, 200, rec.Code)
	}
	_, err := New(st, &Config{Addr: "no-port"})
	require.ErrorContains(t, err, "api.addr")
	_, err = New(nil, &Config{})
	require.ErrorContains(t, err, "nil store")
}

// selfSigned writes a certificate for 127.0.0.1 and localhost and its key
// to dir, and returns their paths and the PEM of the certificate.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, certPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "chime test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, certPEM, 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600))
	return certFile, keyFile, certPEM
}

func TestTLS(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.SQLite)
	log, _ := test.NewNullLogger()
	certFile, keyFile, certPEM := selfSigned(t, t.TempDir())
	_, err := New(st, &Config{Addr: "127.0.0.1:0", TLSCert: certFile, Logger: log})
	require.ErrorContains(t, err, "set both or neither")
	_, err = New(st, &Config{Addr: "127.0.0.1:0", TLSCert: keyFile, TLSKey: keyFile, Logger: log})
	require.ErrorContains(t, err, "api.tls_cert")

	srv, err := New(st, &Config{Addr: "127.0.0.1:0", Token: testToken, TLSCert: certFile, TLSKey: keyFile, Logger: log})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(func() { _ = srv.Stop(ctx) })
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(certPEM))
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, err := http.NewRequest("GET", "https://"+srv.Addr()+"/api/v1/nodes", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := c.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.NotNil(t, resp.TLS)
	// Plain HTTP to the TLS port gets no API answer.
	resp, err = http.Get("http://" + srv.Addr() + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}
