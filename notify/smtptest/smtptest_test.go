package smtptest_test

import (
	"testing"

	"github.com/chimesched/chime/notify/smtptest"
)

// TestCloseRightAfterNew: a test that skips right after starting the
// server (the MySQL half without a database) used to hang in cleanup.
func TestCloseRightAfterNew(t *testing.T) {
	for range 200 {
		smtptest.New(t).Close()
	}
}
