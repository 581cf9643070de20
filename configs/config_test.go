package configs

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load("", env(nil))
	require.NoError(t, err)
	require.Equal(t, "sqlite", c.Database.Driver)
	require.Equal(t, "chime.db", c.Database.DSN)
	require.Equal(t, 4*time.Second, c.TaskEngine.PollInterval.D())
	require.Equal(t, 16, c.TaskEngine.PoolSize)
	require.Equal(t, 30*time.Second, c.ShutdownGrace.D())
	require.NotEmpty(t, c.Node.ID)
}

func TestEnvOverrides(t *testing.T) {
	t.Parallel()
	c, err := Load("", env(map[string]string{
		"CHIME_DATABASE_DRIVER":          "mysql",
		"CHIME_DATABASE_DSN":             "root@tcp(127.0.0.1:3306)/chime",
		"CHIME_NODE_ID":                  "n1",
		"CHIME_LOG_FORMAT":               "json",
		"CHIME_TASKENGINE_POLL_INTERVAL": "250ms",
		"CHIME_TASKENGINE_POOL_SIZE":     "100",
		"CHIME_SCHEDULEENGINE_ENABLED":   "false",
		"CHIME_SHUTDOWN_GRACE":           "1s",
	}))
	require.NoError(t, err)
	require.Equal(t, "mysql", c.Database.Driver)
	require.Equal(t, "n1", c.Node.ID)
	require.Equal(t, "json", c.Log.Format)
	require.Equal(t, 250*time.Millisecond, c.TaskEngine.PollInterval.D())
	require.Equal(t, 100, c.TaskEngine.PoolSize)
	require.False(t, c.ScheduleEngine.Enabled)
	require.Equal(t, time.Second, c.ShutdownGrace.D())
}

func TestFileThenEnv(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "c.yaml")
	require.NoError(t, os.WriteFile(f, []byte("taskengine:\n  pool_size: 3\nlog:\n  level: debug\n"), 0o600))
	c, err := Load(f, env(map[string]string{"CHIME_LOG_LEVEL": "warn"}))
	require.NoError(t, err)
	require.Equal(t, 3, c.TaskEngine.PoolSize)
	require.Equal(t, "warn", c.Log.Level)
	require.Equal(t, 4*time.Second, c.TaskEngine.PollInterval.D(), "keys the file leaves out keep their defaults")
}

func TestBadSettingsNameTheSetting(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		env  map[string]string
		want string
	}{
		"driver":   {map[string]string{"CHIME_DATABASE_DRIVER": "oracle"}, "database.driver (CHIME_DATABASE_DRIVER)"},
		"level":    {map[string]string{"CHIME_LOG_LEVEL": "loud"}, "log.level"},
		"format":   {map[string]string{"CHIME_LOG_FORMAT": "xml"}, "log.format"},
		"duration": {map[string]string{"CHIME_TASKENGINE_POLL_INTERVAL": "soon"}, "taskengine.poll_interval (CHIME_TASKENGINE_POLL_INTERVAL=\"soon\")"},
		"pool":     {map[string]string{"CHIME_TASKENGINE_POOL_SIZE": "0"}, "taskengine.pool_size"},
		"int":      {map[string]string{"CHIME_TASKENGINE_POOL_SIZE": "many"}, "not a whole number"},
		"tls":      {map[string]string{"CHIME_SMTP_TLS": "maybe"}, "smtp.tls"},
		"failover": {map[string]string{"CHIME_CLUSTER_FAILOVER_AFTER": "1s"}, "cluster.failover_after"},
		"tls half": {map[string]string{"CHIME_API_TLS_CERT": "cert.pem"}, "api.tls_key (CHIME_API_TLS_KEY): must be set with api.tls_cert"},
		"key half": {map[string]string{"CHIME_API_TLS_KEY": "key.pem"}, "api.tls_cert (CHIME_API_TLS_CERT): must be set with api.tls_key"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Load("", env(tc.env))
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestUnknownKeyInFile(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "c.yaml")
	require.NoError(t, os.WriteFile(f, []byte("taskengine:\n  pool_sise: 3\n"), 0o600))
	_, err := Load(f, env(nil))
	require.ErrorContains(t, err, "pool_sise")
}

func TestApplySettings(t *testing.T) {
	t.Parallel()
	c, err := Load("", env(nil))
	require.NoError(t, err)
	require.NoError(t, c.ApplySettings(map[string]string{
		"smtp.from":            "chime@example.com",
		"taskengine.pool_size": "7",
		"not.a.key":            "ignored",
		"log.level":            "debug",
	}, env(map[string]string{"CHIME_LOG_LEVEL": "error"})))
	require.Equal(t, "chime@example.com", c.SMTP.From)
	require.Equal(t, 7, c.TaskEngine.PoolSize)
	require.Equal(t, "error", c.Log.Level, "the environment wins over the table")

	err = c.ApplySettings(map[string]string{"taskengine.pool_size": "lots"}, env(nil))
	require.ErrorContains(t, err, "taskengine.pool_size (configurations table")
	require.Contains(t, Keys(), "smtp.tls")
}
