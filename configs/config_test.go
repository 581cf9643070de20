package configs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	require.Equal(t, 50*time.Millisecond, c.TaskEngine.WakeInterval.D())
	require.Equal(t, 16, c.TaskEngine.PoolSize)
	require.Equal(t, 30*time.Second, c.ShutdownGrace.D())
	require.Equal(t, 200*time.Millisecond, c.ScheduleEngine.FireAhead.D())
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
		"ahead":    {map[string]string{"CHIME_SCHEDULEENGINE_FIRE_AHEAD": "3s"}, "scheduleengine.fire_ahead"},
		"ahead<0":  {map[string]string{"CHIME_SCHEDULEENGINE_FIRE_AHEAD": "-1ms"}, "scheduleengine.fire_ahead"},
		"ahead>=misfire": {map[string]string{"CHIME_SCHEDULEENGINE_FIRE_AHEAD": "1s", "CHIME_SCHEDULEENGINE_MISFIRE_THRESHOLD": "1s"},
			"below scheduleengine.misfire_threshold"},
		"wake<min":  {map[string]string{"CHIME_TASKENGINE_WAKE_INTERVAL": "5ms"}, "taskengine.wake_interval (CHIME_TASKENGINE_WAKE_INTERVAL): must be 0 (off) or between 10ms and 10s"},
		"wake>max":  {map[string]string{"CHIME_TASKENGINE_WAKE_INTERVAL": "11s"}, "taskengine.wake_interval"},
		"wake<0":    {map[string]string{"CHIME_TASKENGINE_WAKE_INTERVAL": "-1ms"}, "taskengine.wake_interval"},
		"tls half":  {map[string]string{"CHIME_API_TLS_CERT": "cert.pem"}, "api.tls_key (CHIME_API_TLS_KEY): must be set with api.tls_cert"},
		"key half":  {map[string]string{"CHIME_API_TLS_KEY": "key.pem"}, "api.tls_cert (CHIME_API_TLS_CERT): must be set with api.tls_key"},
		"tag space": {map[string]string{"CHIME_NODE_TAGS": "gpu,my tag"}, `node.tags (CHIME_NODE_TAGS): tag "my tag" holds ' '`},
		"tag long":  {map[string]string{"CHIME_NODE_TAGS": strings.Repeat("x", 10000)}, "node.tags (CHIME_NODE_TAGS): tags are 10000 bytes, more than 2100"},
		"tag many":  {map[string]string{"CHIME_NODE_TAGS": manyTags(33)}, "node.tags (CHIME_NODE_TAGS): 33 tags, more than 32"},
		"tag empty": {map[string]string{"CHIME_NODE_TAGS": "gpu,,eu"}, "node.tags (CHIME_NODE_TAGS): empty tag"},
		"tag upper": {map[string]string{"CHIME_NODE_TAGS": "GPU"}, "node.tags"},
		"drain<min": {map[string]string{"CHIME_TASKENGINE_DRAIN_TIMEOUT": "10ms"}, "taskengine.drain_timeout"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Load("", env(tc.env))
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// taskengine.wake_interval 0 turns the wake-up reads off; the bounds
// themselves are allowed.
func TestWakeIntervalOffAndBounds(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"0", "0s", "10ms", "10s"} {
		c, err := Load("", env(map[string]string{"CHIME_TASKENGINE_WAKE_INTERVAL": v}))
		require.NoError(t, err, v)
		d, _ := time.ParseDuration(v)
		require.Equal(t, d, c.TaskEngine.WakeInterval.D())
	}
}

func TestUnknownKeyInFile(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "c.yaml")
	require.NoError(t, os.WriteFile(f, []byte("taskengine:\n  pool_sise: 3\n"), 0o600))
	_, err := Load(f, env(nil))
	require.ErrorContains(t, err, "pool_sise")
}

func TestWithSettings(t *testing.T) {
	t.Parallel()
	c, err := Load("", env(map[string]string{"CHIME_LOG_LEVEL": "error"}))
	require.NoError(t, err)
	got, refused := c.WithSettings(map[string]string{
		"smtp.from":            "chime@example.com",
		"taskengine.pool_size": "7",
		"log.level":            "debug",
		" retention_days ":     "90",
	})
	require.Empty(t, refused)
	require.Equal(t, "chime@example.com", got.SMTP.From)
	require.Equal(t, 7, got.TaskEngine.PoolSize)
	require.Equal(t, 90, got.RetentionDays, "names are trimmed as plain SQL may leave spaces")
	require.Equal(t, "error", got.Log.Level, "the environment wins over the table")
	require.Equal(t, 16, c.TaskEngine.PoolSize, "the receiver is left alone")

	got.Pin("taskengine.pool_size")
	again, refused := got.WithSettings(map[string]string{"taskengine.pool_size": "9"})
	require.Empty(t, refused)
	require.Equal(t, 7, again.TaskEngine.PoolSize, "a pinned key (a flag) wins over the table")
	require.Contains(t, Keys(), "smtp.tls")
	require.NotContains(t, Keys(), "pinned")
}

// A bad row is refused with its key and reason, and the value from the file
// or environment stays; the other rows still apply.
func TestWithSettingsRefusesBadRows(t *testing.T) {
	t.Parallel()
	c, err := Load("", env(nil))
	require.NoError(t, err)
	const secret = "s3cret-pass"
	got, refused := c.WithSettings(map[string]string{
		"taskengine.poolsize":      "8",
		"taskengine.pool_size":     "lots",
		"node.id":                  "evil",
		"api.token":                "stolen",
		"database.dsn":             "root:pw@tcp(evil:3306)/x",
		"smtp.password":            secret + "\n",
		"retention_days":           "200000",
		"taskengine.poll_interval": "250ms",
	})
	require.Equal(t, 250*time.Millisecond, got.TaskEngine.PollInterval.D())
	require.Equal(t, 16, got.TaskEngine.PoolSize)
	require.Equal(t, 30, got.RetentionDays)
	require.Equal(t, c.Node.ID, got.Node.ID)
	require.Empty(t, got.API.Token)
	require.Empty(t, got.SMTP.Password)
	byKey := map[string]*SettingError{}
	for _, e := range refused {
		byKey[e.Key] = e
		require.NotContains(t, e.Error(), secret, "a secret's value never appears in a message")
		require.NotContains(t, e.Error(), "stolen")
		require.NotContains(t, e.Error(), "root:pw")
	}
	require.Len(t, byKey, 7)
	require.True(t, byKey["taskengine.poolsize"].Unknown)
	require.Equal(t, []string{"taskengine.pool_size"}, byKey["taskengine.poolsize"].Suggestions)
	require.ErrorContains(t, byKey["taskengine.poolsize"], "did you mean taskengine.pool_size?")
	require.ErrorContains(t, byKey["taskengine.pool_size"], "not a whole number")
	for _, k := range []string{"node.id", "api.token", "database.dsn"} {
		require.ErrorContains(t, byKey[k], "only in the configuration file or by "+EnvName(k))
	}
	require.ErrorContains(t, byKey["smtp.password"], "line breaks")
	require.ErrorContains(t, byKey["retention_days"], "between 0 and 36500")
}

// Rows valid only together apply whatever their order.
func TestWithSettingsAcrossKeys(t *testing.T) {
	t.Parallel()
	c, err := Load("", env(nil))
	require.NoError(t, err)
	got, refused := c.WithSettings(map[string]string{
		"cluster.failover_after": "3s", // < the default heartbeat, 5s
		"cluster.heartbeat":      "1s",
		"smtp.host":              "mail.example.com", // needs smtp.from
		"smtp.from":              "chime@example.com",
	})
	require.Empty(t, refused)
	require.Equal(t, 3*time.Second, got.Cluster.FailoverAfter.D())
	require.Equal(t, "mail.example.com", got.SMTP.Host)

	_, refused = c.WithSettings(map[string]string{"smtp.host": "mail.example.com", "smtp.from": "not an address"})
	require.Len(t, refused, 2)
	require.ErrorContains(t, refused[0], "not an email address")
	require.ErrorContains(t, refused[1], "smtp.from: required when smtp.host is set")
}

// retention_days past a century is refused at start and as a row: days ×
// 24h overflowed time.Duration and deleted every finished job.
func TestRetentionDaysBounded(t *testing.T) {
	t.Parallel()
	_, err := Load("", env(map[string]string{"CHIME_RETENTION_DAYS": "200000"}))
	require.ErrorContains(t, err, "retention_days (CHIME_RETENTION_DAYS): must be between 0 and 36500")
	c, err := Load("", env(map[string]string{"CHIME_RETENTION_DAYS": "36500"}))
	require.NoError(t, err)
	require.Equal(t, MaxRetentionDays, c.RetentionDays)
	require.ErrorContains(t, c.CheckSetting("retention_days", "106752"), "between 0 and 36500")
}

func TestCheckSetting(t *testing.T) {
	t.Parallel()
	c, err := Load("", env(map[string]string{"CHIME_TASKENGINE_POOL_SIZE": "4"}))
	require.NoError(t, err)
	require.Nil(t, c.CheckSetting("taskengine.pool_size", "8"), "a key pinned here may still be set for other nodes")
	require.ErrorContains(t, c.CheckSetting("taskengine.pool_size", "0"), "between 1 and 10000")
	require.ErrorContains(t, c.CheckSetting("taskengine.pool_size", "100000000"), "between 1 and 10000")
	require.ErrorContains(t, c.CheckSetting("taskengine.poll_interval", "1000h"), "between 100ms and 24h, got 1000h")
	e := c.CheckSetting("pool_size", "8")
	require.True(t, e.Unknown)
	require.Contains(t, e.Suggestions, "taskengine.pool_size")
	require.Empty(t, c.CheckSetting("completely.different", "1").Suggestions)
	require.Nil(t, c.CheckSetting("smtp.password", "x"), "no host: email is off and the password waits for one")
	require.ErrorContains(t, c.CheckSetting("smtp.host", "mail.example.com"), "smtp.from: required")
}

func TestSecretsAndLiveKeys(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"smtp.password", "api.token", "database.dsn", "vendor.api_secret", "X_TOKEN"} {
		require.True(t, IsSecret(k), k)
		require.Equal(t, Redacted, RedactValue(k, "v"), k)
	}
	require.Empty(t, RedactValue("smtp.password", ""))
	require.Equal(t, "587", RedactValue("smtp.port", "587"))
	for _, k := range liveKeys {
		require.Contains(t, Keys(), k)
		require.False(t, IsFileOnly(k), k)
	}
	for _, k := range secretKeys {
		require.Contains(t, Keys(), k)
	}
	require.True(t, IsFileOnly("api.addr"))
	require.False(t, IsFileOnly("api.nope"))
	_, err := Load("", env(map[string]string{"CHIME_SMTP_PORT": "x", "CHIME_SMTP_PASSWORD": "hunter2"}))
	require.Error(t, err)
	require.NotContains(t, err.Error(), "hunter2")
}

func TestValue(t *testing.T) {
	t.Parallel()
	c, err := Load("", env(nil))
	require.NoError(t, err)
	for _, k := range Keys() {
		v, ok := c.Value(k)
		require.True(t, ok, k)
		if IsFileOnly(k) {
			continue
		}
		require.Nil(t, c.CheckSetting(k, v), "%s: a value read back is a value that can be set", k)
	}
	v, _ := c.Value("taskengine.poll_interval")
	require.Equal(t, "4s", v)
	_, ok := c.Value("taskengine")
	require.False(t, ok)
}

// api.tls_proxy (issue 22, finding 11) asks for Secure __Host- cookies and
// HSTS behind a proxy that terminates TLS; off by default, and only from
// the file or the environment.
func TestTLSProxyKey(t *testing.T) {
	t.Parallel()
	c, err := Load("", env(nil))
	require.NoError(t, err)
	require.False(t, c.API.TLSProxy)
	c, err = Load("", env(map[string]string{"CHIME_API_TLS_PROXY": "true"}))
	require.NoError(t, err)
	require.True(t, c.API.TLSProxy)
	require.True(t, IsFileOnly("api.tls_proxy"))
	_, err = Load("", env(map[string]string{"CHIME_API_TLS_PROXY": "yes please"}))
	require.ErrorContains(t, err, "api.tls_proxy (CHIME_API_TLS_PROXY")
}

// TestSecretsKeysFromEnvironmentOnly: the secrets keys come from the
// environment (or the file), are never set by a configurations row, and
// are never shown.
func TestSecretsKeysFromEnvironmentOnly(t *testing.T) {
	t.Parallel()
	env := map[string]string{"CHIME_SECRETS_KEY": "k1:AAAA", "CHIME_SECRETS_OLD_KEYS": "k0:BBBB", "CHIME_SECRETS_KEY_FILE": "/etc/chime/keys"}
	c, err := Load("", func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, Secrets{Key: "k1:AAAA", OldKeys: "k0:BBBB", KeyFile: "/etc/chime/keys"}, c.Secrets)
	for _, k := range []string{"secrets.key", "secrets.old_keys", "secrets.key_file"} {
		require.True(t, IsFileOnly(k), k)
		require.True(t, IsSecret(k), k)
		require.Equal(t, Redacted, RedactValue(k, "x"), k)
	}
}

func manyTags(n int) string {
	tags := make([]string, n)
	for i := range tags {
		tags[i] = fmt.Sprintf("t%d", i)
	}
	return strings.Join(tags, ",")
}

// node.tags are normalized only where stored; the configuration keeps what
// was written, and TagList reads it sorted without duplicates.
func TestNodeTags(t *testing.T) {
	t.Parallel()
	c, err := Load("", env(map[string]string{"CHIME_NODE_TAGS": "zone:eu-1, gpu,gpu"}))
	require.NoError(t, err)
	require.Equal(t, []string{"gpu", "zone:eu-1"}, c.Node.TagList())
	c, err = Load("", env(map[string]string{"CHIME_NODE_TAGS": manyTags(32), "CHIME_TASKENGINE_DRAIN_TIMEOUT": "5m"}))
	require.NoError(t, err)
	require.Len(t, c.Node.TagList(), 32)
	require.Equal(t, 5*time.Minute, c.TaskEngine.DrainTimeout.D())
}
