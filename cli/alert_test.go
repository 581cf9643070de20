package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/alert"
	"github.com/chimesched/chime/api"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/tasks"
	"github.com/chimesched/chime/tasks/sleep"
)

// TestCLIAlerts: channels and rules added, listed and deleted from the
// command line, secrets never printed, and `chime alert test` delivering a
// signed message to a real receiver.
func TestCLIAlerts(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.SQLite)
	var mu sync.Mutex
	var got []string
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := alert.Verify([]byte("k3y-from-file"), r.Header.Get("X-Chime-Timestamp"), r.Header.Get("X-Chime-Signature"),
			body, time.Now(), time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		mu.Lock()
		got = append(got, string(body))
		mu.Unlock()
	}))
	t.Cleanup(rcv.Close)
	reg := tasks.NewRegistry()
	reg.MustRegister(sleep.Kind, sleep.New)
	log, _ := test.NewNullLogger()
	d := alert.NewDispatcher(st, &alert.DispatcherConfig{Logger: log})
	srv, err := api.New(st, &api.Config{Registry: reg, Token: cliToken, Addr: "127.0.0.1:0", Logger: log,
		TestAlertChannel: func(ctx context.Context, c *models.AlertChannel) error {
			return d.Send(ctx, c, alert.TestPayload(c, time.Now()))
		}})
	require.NoError(t, err)
	require.NoError(t, srv.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, srv.Stop(ctx))
	})
	url := "http://" + srv.Addr()

	keyFile := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(keyFile, []byte("k3y-from-file\n"), 0o600))
	out := mustChime(t, url, "alert", "channel", "add", "ops", "--kind", "webhook", "--url", rcv.URL+"/hook?token=s3cret",
		"--signing-key", "@"+keyFile, "--header", "X-Team=ops")
	require.Regexp(t, `(?m)^signing_key_set:\s+true$`, out)
	out = mustChime(t, url, "alert", "channel", "list")
	require.Regexp(t, `(?m)^ID\s+NAME\s+KIND\s+TARGET`, out)
	require.Regexp(t, `(?m)^1\s+ops\s+webhook\s+http://127\.0\.0\.1:\d+/…\s+true\s+true`, out)
	out += mustChime(t, url, "alert", "channel", "list", "-o", "json")
	require.NotContains(t, out, "s3cret")
	require.NotContains(t, out, "k3y-from-file")

	require.Contains(t, mustChime(t, url, "alert", "test", "ops"), "test message sent through ops")
	mu.Lock()
	require.Len(t, got, 1)
	require.Contains(t, got[0], `"event":"test"`)
	mu.Unlock()

	mustChime(t, url, "alert", "channel", "set", "ops", "--signing-key", "another")
	_, err = chime(t, url, "alert", "test", "ops")
	require.ErrorContains(t, err, "not delivered")
	require.ErrorContains(t, err, "401")

	mustChime(t, url, "definition", "add", "report", "--task-type", "sleep", "--params", `{"duration":"1s"}`)
	out = mustChime(t, url, "alert", "rule", "add", "fails", "--event", "job_failed", "--channel", "ops", "--definition", "report", "--throttle", "10m")
	require.Regexp(t, `(?m)^throttle_seconds:\s+600$`, out)
	_, err = chime(t, url, "alert", "rule", "add", "late", "--event", "deadline", "--channel", "ops", "--params", `{"by":"25:00"}`)
	require.ErrorContains(t, err, "25:00")
	out = mustChime(t, url, "alert", "rule", "add", "etl", "--event", "job_failed", "--channel", "ops", "--queue", "etl")
	require.Regexp(t, `(?m)^queue:\s+etl$`, out)
	_, err = chime(t, url, "alert", "rule", "add", "two", "--event", "job_failed", "--channel", "ops", "--queue", "etl", "--definition", "report")
	require.ErrorContains(t, err, "give one or none")
	_, err = chime(t, url, "alert", "rule", "add", "wf", "--event", "job_failed", "--channel", "ops", "--workflow", "no-such-flow")
	require.ErrorContains(t, err, `no workflow named "no-such-flow"`)
	out = mustChime(t, url, "alert", "rule", "list")
	require.Regexp(t, `(?m)^1\s+fails\s+job_failed\s+definition 1\s+1\s+10m0s`, out)
	require.Regexp(t, `(?m)^2\s+etl\s+job_failed\s+queue etl\s+1`, out)
	require.Contains(t, mustChime(t, url, "alert", "rule", "delete", "etl"), "deleted alert rule 2")
	_, err = chime(t, url, "alert", "channel", "delete", "ops")
	require.ErrorContains(t, err, "rules send to it")
	require.Contains(t, mustChime(t, url, "alert", "rule", "delete", "fails"), "deleted alert rule 1")
	require.Contains(t, mustChime(t, url, "alert", "channel", "delete", "ops"), "deleted alert channel 1")
	require.True(t, strings.Contains(mustChime(t, url, "alert", "list"), "ID"))
}
