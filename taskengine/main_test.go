package taskengine

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The crash test re-runs this binary as a node to kill; see crash_test.go.
	if os.Getenv(envCrashChild) != "" {
		crashChild()
		return
	}
	// IgnoreCurrent: ants starts a package-level default pool in its init.
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}
