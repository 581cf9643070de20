package cluster

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// IgnoreCurrent: the SQLite driver and testdb start package-level goroutines.
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}
