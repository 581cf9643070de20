package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/chimesched/chime/configs"
)

// defaultGrace is chime's shutdown_grace: every stop timeout below must
// exceed it, or running jobs are killed before their grace ends.
func defaultGrace(t *testing.T) time.Duration {
	t.Helper()
	c, err := configs.Load("", func(string) string { return "" })
	require.NoError(t, err)
	return c.ShutdownGrace.D()
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// The unit passes systemd-analyze verify (with its ExecStart pointed at an
// executable that exists here) and stops slower than chime's grace.
func TestSystemdUnit(t *testing.T) {
	t.Parallel()
	unit := read(t, "systemd/chime.service")
	m := regexp.MustCompile(`(?m)^TimeoutStopSec=(\d+)$`).FindStringSubmatch(unit)
	require.NotNil(t, m, "TimeoutStopSec")
	secs, _ := strconv.Atoi(m[1])
	require.Greater(t, time.Duration(secs)*time.Second, defaultGrace(t)+10*time.Second,
		"TimeoutStopSec must cover shutdown_grace and the 10 s chime adds for process groups")
	require.Contains(t, unit, "ExecStart=/usr/local/bin/chime serve")
	// Shell jobs need to start programs: no sandbox line that forbids it.
	for _, forbidden := range []string{"MemoryDenyWriteExecute=yes", "NoExecPaths=", "RestrictFileSystems="} {
		require.NotContains(t, unit, forbidden)
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed: the unit's syntax is not verified here")
	}
	self, err := os.Executable()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "chime.service")
	require.NoError(t, os.WriteFile(path, []byte(strings.ReplaceAll(unit, "/usr/local/bin/chime", self)), 0o644))
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	require.NoError(t, err, "systemd-analyze verify: %s", out)
	require.Empty(t, strings.TrimSpace(string(out)), "systemd-analyze verify has remarks")
}

// The image is multi-stage, static, non-root, checks /readyz and keeps
// SQLite's data on a volume.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	df := read(t, "../Dockerfile")
	require.Len(t, regexp.MustCompile(`(?m)^FROM `).FindAllString(df, -1), 2, "a build stage and a runtime stage")
	require.Contains(t, df, "CGO_ENABLED=0 go build")
	require.Regexp(t, `(?m)^USER [1-9][0-9]*:[1-9][0-9]*$`, df)
	require.Regexp(t, `(?m)^HEALTHCHECK .*\n.*/readyz`, df)
	require.Contains(t, df, "ca-certificates")
	require.Regexp(t, `(?m)^VOLUME \["/var/lib/chime"\]$`, df)
	require.Contains(t, df, "CHIME_DATABASE_DSN=/var/lib/chime/chime.db")
}

// compose.yaml: three nodes of distinct ids on PostgreSQL, the schema
// migrated once before them, and a stop grace above chime's.
func TestCompose(t *testing.T) {
	t.Parallel()
	var doc struct {
		Services map[string]struct {
			Command         []string          `yaml:"command"`
			StopGracePeriod string            `yaml:"stop_grace_period"`
			Environment     map[string]string `yaml:"environment"`
			DependsOn       map[string]any    `yaml:"depends_on"`
			Image           string            `yaml:"image"`
		} `yaml:"services"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(read(t, "compose.yaml")), &doc))
	require.Contains(t, doc.Services, "postgres")
	require.Equal(t, []string{"migrate"}, doc.Services["migrate"].Command)
	ids := map[string]bool{}
	for _, name := range []string{"chime-1", "chime-2", "chime-3"} {
		s, ok := doc.Services[name]
		require.True(t, ok, name)
		require.Equal(t, []string{"serve", "--no-migrate"}, s.Command, name)
		require.Contains(t, s.DependsOn, "migrate", name)
		require.Equal(t, "postgres", s.Environment["CHIME_DATABASE_DRIVER"], name)
		require.NotEmpty(t, s.Environment["CHIME_API_TOKEN"], name)
		ids[s.Environment["CHIME_NODE_ID"]] = true
		grace, err := time.ParseDuration(s.StopGracePeriod)
		require.NoError(t, err, name)
		require.Greater(t, grace, defaultGrace(t)+10*time.Second, name)
	}
	require.Len(t, ids, 3, "node ids must differ")
}
