package chimedb_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// importRules is which of chime's own packages each package may import
// directly: the table of docs/architecture.md ("How to find your way"),
// enforced. A package missing from it fails the test, so a new package
// states its place before it lands. "internal/*" entries are named whole.
var importRules = map[string][]string{
	// The bottom: rows, the schema, the seam, cron arithmetic.
	"models":     nil,
	"sql":        nil,
	"quartzcron": nil,
	"chimedb":    {"models"},
	"trigger":    {"models", "quartzcron"},
	// The plugin contract and the built-in plugins.
	"tasks":          {"internal/strictjson"},
	"tasks/builtin":  {"tasks", "tasks/email", "tasks/httpcall", "tasks/shell", "tasks/sleep"},
	"tasks/email":    {"tasks"},
	"tasks/httpcall": {"tasks"},
	"tasks/shell":    {"tasks"},
	"tasks/sleep":    {"tasks"},
	"validate":       {"models", "secrets", "tasks", "trigger"},
	// Encryption of the secrets table and the $secret references in params.
	"secrets": {"chimedb", "models"},
	"configs": {"internal/loopback", "models"},
	// The one package with SQL on chime's database.
	"store": {"chimedb", "models", "sql"},
	// Services: the database only through chimedb, never store.
	"scheduleengine": {"chimedb", "models", "trigger", "internal/metrics", "internal/startstop", "internal/testsignal"},
	"taskengine":     {"chimedb", "models", "secrets", "tasks", "internal/metrics", "internal/startstop", "internal/testsignal"},
	"cluster":        {"chimedb", "models", "internal/metrics", "internal/startstop", "internal/testsignal"},
	"notify":         {"models", "tasks", "internal/loopback", "internal/startstop"},
	"alert":          {"chimedb", "models", "notify", "tasks", "trigger", "internal/metrics", "internal/startstop"},
	"api": {"chimedb", "configs", "models", "scheduleengine", "secrets", "tasks", "trigger", "validate", "internal/buildinfo",
		"internal/loopback", "internal/metrics", "internal/startstop", "internal/strictjson"},
	"console":      {"api", "chimedb", "configs", "models", "tasks", "trigger", "validate"},
	"quartzimport": {"chimedb", "models", "tasks", "trigger", "validate", "internal/javaser"},
	// Wiring: app alone opens a store and hands it to every service.
	"app": {"alert", "api", "chimedb", "cluster", "configs", "console", "models", "notify", "scheduleengine", "secrets", "store", "taskengine",
		"tasks", "tasks/builtin", "tasks/email", "internal/buildinfo", "internal/metrics", "internal/startstop"},
	"cli": {"api", "app", "chimedb", "configs", "models", "quartzcron", "quartzimport", "tasks", "tasks/builtin", "trigger", "validate",
		"internal/bench", "internal/buildinfo", "internal/logging", "internal/loopback"},
	"cmd/chime": {"cli"},
	// Application code's door: the SQL contract's rows on the caller's
	// transaction, with nothing of chime's own.
	"client": nil,
	// Production helpers.
	"internal/buildinfo":  {"sql"},
	"internal/javaser":    nil,
	"internal/logging":    nil,
	"internal/loopback":   nil,
	"internal/metrics":    nil,
	"internal/startstop":  nil,
	"internal/strictjson": nil,
	"internal/syncbuf":    nil,
	// Zero-cost hooks the services signal and only tests initialise.
	"internal/testsignal": nil,
	// chime bench: runs a node (app) on a database it fills itself; its
	// httpcall scenario drives the httpcall task against a local server.
	"internal/bench": {"app", "configs", "models", "store", "tasks", "tasks/httpcall"},
	// bench/ceiling: the server's floor for a batched claim and completion
	// on chime's own jobs table, which the store's migrations create.
	"bench/ceiling": {"store"},
	// Test support, imported only by _test.go files.
	"internal/testsupport/testdb":      {"models", "sql", "store"},
	"internal/testsupport/clustertest": nil,
	"internal/testsupport/faultproxy":  nil,
	"internal/javaser/javasertest":     nil,
	"notify/smtptest":                  nil,
	"chimedb/chimedbtest":              {"chimedb", "models"},
	// The example plugin and its own main.
	// Deployment files; the package only tests them.
	"deploy":                 nil,
	"examples/report":        {"cli", "examples/report/report", "tasks"},
	"examples/report/report": {"tasks"},
}

// testSupport may be imported only by tests (and by each other).
var testSupport = []string{"internal/testsupport/testdb", "internal/testsupport/clustertest", "internal/testsupport/faultproxy", "internal/javaser/javasertest",
	"notify/smtptest", "chimedb/chimedbtest"}

// TestImportRules holds every package of the module to importRules, from
// go list: the map of docs/architecture.md cannot drift from the code.
func TestImportRules(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("go is not on PATH")
		}
		t.Skip("go is not on PATH")
	}
	const mod = "github.com/chimesched/chime/"
	out, err := exec.Command(goBin, "list", "-f", "{{.ImportPath}}:{{join .Imports \" \"}}", mod+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	seen := 0
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		path, imports, _ := strings.Cut(strings.TrimSpace(line), ":")
		pkg := strings.TrimPrefix(path, mod)
		allowed, ok := importRules[pkg]
		if !ok {
			t.Errorf("%s is not in importRules: say which of chime's packages it may import (and in docs/architecture.md)", pkg)
			continue
		}
		seen++
		for _, imp := range strings.Fields(imports) {
			own, ok := strings.CutPrefix(imp, mod)
			if !ok {
				continue
			}
			if !slices.Contains(allowed, own) {
				t.Errorf("%s imports %s, which importRules does not allow", pkg, own)
			}
			if slices.Contains(testSupport, own) && !slices.Contains(testSupport, pkg) {
				t.Errorf("%s imports test support %s outside a test", pkg, own)
			}
		}
	}
	if seen < len(importRules)/2 {
		t.Fatalf("go list named %d of the %d packages in importRules", seen, len(importRules))
	}
}
