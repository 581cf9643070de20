package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/configs"
	"github.com/chimesched/chime/internal/testsupport/testdb"
	"github.com/chimesched/chime/models"
	"github.com/chimesched/chime/store"
	"github.com/chimesched/chime/tasks"
)

const testToken = "settings-test-token-0123456789"

// startNode runs a node (task engine, cluster, API; no scheduler) on st,
// its settings watcher on clock.
func startNode(t *testing.T, st *store.Store, id string, clock clockwork.Clock) (*node, *test.Hook) {
	t.Helper()
	env := map[string]string{"CHIME_NODE_ID": id, "CHIME_API_ADDR": "127.0.0.1:0", "CHIME_SCHEDULEENGINE_ENABLED": "false",
		"CHIME_API_TOKEN": testToken}
	cfg, err := configs.Load("", func(k string) string { return env[k] })
	require.NoError(t, err)
	log, hook := test.NewNullLogger()
	log.SetLevel(logrus.InfoLevel)
	base := *cfg
	n := &node{cfg: cfg, base: &base, log: log, st: st, clock: clock}
	ctx := context.Background()
	require.NoError(t, n.loadSettings(ctx))
	require.NoError(t, n.start(ctx, Options{Registry: tasks.NewRegistry()}))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, n.stop(ctx))
	})
	return n, hook
}

// putConfiguration sets a configurations row through n's API, as an admin
// would.
func putConfiguration(t *testing.T, n *node, key, value string) {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPut, "/api/v1/configurations/"+key, strings.NewReader(`{"value":"`+value+`"}`))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	n.api.Handler().ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
}

// warnings are the warnings logged with a key, by key.
func warnings(h *test.Hook) map[string]string {
	warned := map[string]string{}
	for _, e := range h.AllEntries() {
		if k, ok := e.Data["key"].(string); ok && e.Level == logrus.WarnLevel {
			warned[k] = e.Message
		}
	}
	return warned
}

// A configurations row for a live setting takes effect on every node within
// the sync interval; a bad row written with plain SQL is logged with its key
// and ignored, and the nodes keep running with their previous value.
func TestLiveSettingsOnTwoNodes(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, st *store.Store) {
		clock := clockwork.NewFakeClock()
		n1, hook1 := startNode(t, st, "n1", clock)
		n2, hook2 := startNode(t, st, "n2", clock)
		nodes := []*node{n1, n2}
		for _, n := range nodes {
			require.Equal(t, 16, n.tasks.PoolSize())
			require.Equal(t, 4*time.Second, n.tasks.PollInterval())
		}

		// Through the API of one node, as an admin would.
		for _, kv := range [][2]string{
			{"taskengine.pool_size", "3"}, {"taskengine.poll_interval", "750ms"},
			{"retention_days", "7"}, {"log.level", "debug"}, {"scheduleengine.fire_all_cap", "5"},
		} {
			putConfiguration(t, n1, kv[0], kv[1])
		}
		// With plain SQL, past the API's checks.
		admin := st.Admin()
		ctx := context.Background()
		require.NoError(t, admin.SetConfiguration(ctx, &models.Configuration{Name: "taskengine.poolsize", Value: "8"}))
		require.NoError(t, admin.SetConfiguration(ctx, &models.Configuration{Name: "node.id", Value: "evil"}))
		require.NoError(t, admin.SetConfiguration(ctx, &models.Configuration{Name: "taskengine.poll_interval", Value: "750ms"}))

		interval := n1.cfg.ScheduleEngine.SyncInterval.D()
		require.Eventually(t, func() bool {
			clock.Advance(interval)
			for _, n := range nodes {
				if n.tasks.PoolSize() != 3 || n.tasks.PollInterval() != 750*time.Millisecond ||
					n.cluster.RetentionDays() != 7 || n.log.GetLevel() != logrus.DebugLevel {
					return false
				}
			}
			return true
		}, 20*time.Second, 20*time.Millisecond, "both nodes apply the rows within the sync interval")

		// The pass that applied the live keys may still be logging the
		// others: wait for its lines rather than read them half-written.
		for _, h := range []*test.Hook{hook1, hook2} {
			require.Eventually(t, func() bool {
				_, ok := warnings(h)["scheduleengine.fire_all_cap"]
				return ok
			}, 20*time.Second, 20*time.Millisecond, "the restart-only key is logged")
			warned := warnings(h)
			require.Contains(t, warned["taskengine.poolsize"], "did you mean taskengine.pool_size?")
			require.Contains(t, warned["node.id"], "only in the configuration file or by CHIME_NODE_ID")
			require.Contains(t, warned["scheduleengine.fire_all_cap"], "takes effect at restart")
		}
		require.Equal(t, "n1", n1.cfg.Node.ID)

		// Bad values for live keys (a poll interval below its bound made
		// every node spin): logged, and the previous values stay.
		require.NoError(t, admin.SetConfiguration(ctx, &models.Configuration{Name: "taskengine.pool_size", Value: "0"}))
		require.NoError(t, admin.SetConfiguration(ctx, &models.Configuration{Name: "taskengine.poll_interval", Value: "1ns"}))
		require.Eventually(t, func() bool {
			clock.Advance(interval)
			for _, h := range []*test.Hook{hook1, hook2} {
				found := map[any]bool{}
				for _, e := range h.AllEntries() {
					if e.Level == logrus.WarnLevel && strings.Contains(e.Message, "refused") {
						found[e.Data["key"]] = true
					}
				}
				if !found["taskengine.pool_size"] || !found["taskengine.poll_interval"] {
					return false
				}
			}
			return true
		}, 20*time.Second, 20*time.Millisecond)
		for _, n := range nodes {
			require.Equal(t, 3, n.tasks.PoolSize())
			require.Equal(t, 750*time.Millisecond, n.tasks.PollInterval())
		}
	})
}

// A node starts whatever rows plain SQL left in the table: bad ones are
// logged and ignored (it used to refuse to start), good ones apply.
func TestStartWithBadRows(t *testing.T) {
	t.Parallel()
	st := testdb.Open(t, store.SQLite)
	admin := st.Admin()
	ctx := context.Background()
	for _, c := range []models.Configuration{
		{Name: "taskengine.pool_size", Value: "lots"}, {Name: "retention_days", Value: "200000"},
		{Name: "taskengine.poll_interval", Value: "1s"}, {Name: "smtp.password", Value: "hunter2"},
		{Name: "smtp.host", Value: "mail.example.com"},
		// Below their bounds: each alone made a node spin.
		{Name: "cluster.heartbeat", Value: "1ns"}, {Name: "taskengine.control_interval", Value: "1ns"},
		{Name: "scheduleengine.sync_interval", Value: "1ns"}, {Name: "scheduleengine.batch_wait", Value: "1ns"},
		{Name: "shutdown_grace", Value: "1ns"},
	} {
		require.NoError(t, admin.SetConfiguration(ctx, &c))
	}
	n, hook := startNode(t, st, "n1", clockwork.NewFakeClock())
	require.Equal(t, 16, n.tasks.PoolSize())
	require.Equal(t, time.Second, n.tasks.PollInterval())
	require.Equal(t, 30, n.cluster.RetentionDays())
	require.Empty(t, n.cfg.SMTP.Host, "smtp.host without smtp.from is refused")
	require.Equal(t, 5*time.Second, n.cfg.Cluster.Heartbeat.D())
	require.Equal(t, time.Second, n.cfg.TaskEngine.ControlInterval.D())
	require.Equal(t, 2*time.Second, n.cfg.ScheduleEngine.SyncInterval.D())
	require.Equal(t, 2*time.Millisecond, n.cfg.ScheduleEngine.BatchWait.D())
	require.Equal(t, 30*time.Second, n.cfg.ShutdownGrace.D())
	warned := map[any]bool{}
	for _, e := range hook.AllEntries() {
		if e.Level == logrus.WarnLevel {
			warned[e.Data["key"]] = true
		}
	}
	for _, k := range []string{"cluster.heartbeat", "taskengine.control_interval", "scheduleengine.sync_interval", "scheduleengine.batch_wait", "shutdown_grace"} {
		require.True(t, warned[k], "the refused row %s is logged", k)
	}
	for _, e := range hook.AllEntries() {
		s, _ := e.String()
		require.NotContains(t, s, "hunter2")
	}
}
