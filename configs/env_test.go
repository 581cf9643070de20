package configs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A misspelt CHIME_* variable used to be ignored without a word (a node
// started with the default pool under CHIME_TASKENGINE_POOLSIZE=4); it is
// reported with the close matches, as a configurations row is. What chime
// reads beyond the configuration keys is not reported, nor is anything
// outside CHIME_*.
func TestUnknownEnv(t *testing.T) {
	t.Parallel()
	environ := []string{
		"PATH=/usr/bin", "HOME=/root", "CHIMERA=1",
		"CHIME_TASKENGINE_POOL_SIZE=4", "CHIME_DATABASE_DSN=root:s3cret@tcp(db:3306)/chime",
		"CHIME_API_URL=http://127.0.0.1:8080", "CHIME_API_CA_CERT=/etc/ca.pem", "CHIME_API_TOKEN=t",
		"CHIME_TEST_MYSQL_DSN=x", "CHIME_TEST_POSTGRES_DSN=x", "CHIME_BENCH_HISTORY=10",
		"CHIME_CLUSTERTEST_HEARTBEAT=1s", "CHIME_CONSOLE_SCREENSHOTS=docs",
		"CHIME_TASKENGINE_CRASH_DSN=x", "CHIME_SCHEDULEENGINE_CHILD_NODE=x",

		"CHIME_TASKENGINE_POOLSIZE=4",
		"CHIME_DATABASE_DNS=root:s3cret@tcp(db:3306)/chime",
		"CHIME_POOL_SIZE=4",
		"CHIME_LOGLEVEL=debug",
		"chime_log_level=debug",
		"CHIME_API_URLS=http://x",
		"CHIME_NOTHING_LIKE_IT=1",
		"CHIME_TASKENGINE_POOLSIZE=5", // given twice: reported once
	}
	got := UnknownEnv(environ)
	byName := map[string][]string{}
	var names []string
	for _, u := range got {
		byName[u.Name] = u.Suggestions
		names = append(names, u.Name)
		require.NotContains(t, u.String(), "s3cret")
		require.Contains(t, u.String(), u.Name)
	}
	require.Equal(t, []string{"CHIME_API_URLS", "CHIME_DATABASE_DNS", "CHIME_LOGLEVEL", "CHIME_NOTHING_LIKE_IT",
		"CHIME_POOL_SIZE", "CHIME_TASKENGINE_POOLSIZE", "chime_log_level"}, names)
	require.Equal(t, []string{"CHIME_TASKENGINE_POOL_SIZE"}, byName["CHIME_TASKENGINE_POOLSIZE"])
	require.Equal(t, []string{"CHIME_DATABASE_DSN"}, byName["CHIME_DATABASE_DNS"])
	require.Contains(t, byName["CHIME_POOL_SIZE"], "CHIME_TASKENGINE_POOL_SIZE")
	require.Equal(t, []string{"CHIME_LOG_LEVEL"}, byName["CHIME_LOGLEVEL"])
	require.Equal(t, []string{"CHIME_LOG_LEVEL"}, byName["chime_log_level"])
	require.Equal(t, []string{"CHIME_API_URL"}, byName["CHIME_API_URLS"])
	require.Empty(t, byName["CHIME_NOTHING_LIKE_IT"])
	for _, u := range got {
		if u.Name == "CHIME_TASKENGINE_POOLSIZE" {
			require.Equal(t, "CHIME_TASKENGINE_POOLSIZE is not a variable chime reads: ignored; did you mean CHIME_TASKENGINE_POOL_SIZE?", u.String())
		}
	}
}

// Every CHIME_* name chime's code or scripts read is known to UnknownEnv,
// so that no variable in use is ever reported as unknown.
func TestEveryVariableInTheCodeIsKnown(t *testing.T) {
	t.Parallel()
	name := regexp.MustCompile(`"(CHIME_[A-Z0-9_]*[A-Z0-9])"`)
	seen := map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && d.Name() != ".." || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		// The tests of the warning name unknown variables on purpose.
		if slices.Contains([]string{"configs/env_test.go", "cli/env_test.go"}, filepath.ToSlash(strings.TrimPrefix(path, "../"))) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range name.FindAllStringSubmatch(string(b), -1) {
			seen[m[1]] = true
		}
		return nil
	})
	require.NoError(t, err)
	var unknown []string
	for n := range seen {
		if strings.HasSuffix(n, "_") || n == "CHIME" {
			continue
		}
		if len(UnknownEnv([]string{n + "=x"})) > 0 {
			unknown = append(unknown, n)
		}
	}
	sort.Strings(unknown)
	require.Empty(t, unknown, "CHIME_* variables the code reads but UnknownEnv reports: add them to otherEnv")
	require.True(t, seen["CHIME_API_URL"], "the walk found the CLI's variables")
}
