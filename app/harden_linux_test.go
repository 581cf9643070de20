package app

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const hardenChildEnv = "CHIME_TEST_HARDEN_CHILD"

// TestHardenProcess runs in a child process: the flag, once cleared, stays
// cleared for the rest of the test binary. A job the hardened process starts
// must still be dumpable (execve resets the flag), or shell jobs could not
// be debugged or dump core.
func TestHardenProcess(t *testing.T) {
	if os.Getenv(hardenChildEnv) == "1" {
		d, err := dumpable()
		require.NoError(t, err)
		require.True(t, d, "a new process starts dumpable")
		require.NoError(t, hardenProcess())
		d, err = dumpable()
		require.NoError(t, err)
		require.False(t, d)
		// A process started now must report itself dumpable again.
		out, err := exec.Command(os.Args[0], "-test.run=^TestDumpableProbe$").CombinedOutput()
		require.NoError(t, err, string(out))
		require.Contains(t, string(out), "dumpable=true")
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHardenProcess$", "-test.v")
	cmd.Env = append(os.Environ(), hardenChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	require.True(t, strings.Contains(string(out), "--- PASS: TestHardenProcess"), string(out))
}

// TestDumpableProbe prints this process's flag for TestHardenProcess.
func TestDumpableProbe(t *testing.T) {
	d, err := dumpable()
	require.NoError(t, err)
	os.Stdout.WriteString("dumpable=" + map[bool]string{true: "true", false: "false"}[d] + "\n")
}
