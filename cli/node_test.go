package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/chimedb"
)

// TestCLINodeDrain: `chime nodes` shows tags and drain; `chime node
// drain|undrain` write it; an unknown id and a definition's bad tags are
// clear errors.
func TestCLINodeDrain(t *testing.T) {
	t.Parallel()
	url, st := startAPIStore(t)
	require.NoError(t, st.RegisterNode(t.Context(), &chimedb.RegisterNodeParams{ID: "n1", Roles: "worker", Tags: "gpu,zone:eu"}))
	out := mustChime(t, url, "nodes")
	require.Regexp(t, `(?m)^ID\s+HOSTNAME\s+PID\s+VERSION\s+ROLES\s+TAGS\s+STATUS\s+DRAIN`, out)
	require.Regexp(t, `(?m)^n1\s.*\sgpu,zone:eu\s+alive\s+-\s`, out)
	require.Regexp(t, `(?m)^drain:\s+draining$`, mustChime(t, url, "node", "drain", "n1"))
	require.Regexp(t, `(?m)^n1\s.*\salive\s+draining\s`, mustChime(t, url, "nodes"))
	require.Regexp(t, `(?m)^drain:\s+-$`, mustChime(t, url, "node", "undrain", "n1"))
	_, err := chime(t, url, "node", "drain", "nobody")
	require.ErrorContains(t, err, "does not exist")

	out = mustChime(t, url, "definition", "add", "render", "--task-type", "sleep", "--params", `{"duration":"1s"}`, "--required-tags", "zone:eu,gpu")
	require.Regexp(t, `(?m)^required_tags:\s+gpu,zone:eu$`, out)
	out = mustChime(t, url, "definition", "add", "purge", "--task-type", "sleep", "--params", `{"duration":"1s"}`, "--broadcast")
	require.Regexp(t, `(?m)^broadcast:\s+true$`, out)
	out = mustChime(t, url, "definition", "add", "partner", "--task-type", "sleep", "--params", `{"duration":"1s"}`, "--rate", "100", "--period-ms", "60000")
	require.Regexp(t, `(?m)^rate_limit:\s+100$`, out)
	require.Regexp(t, `(?m)^rate_period_ms:\s+60000$`, out)
	_, err = chime(t, url, "definition", "add", "fast", "--task-type", "sleep", "--params", `{"duration":"1s"}`, "--rate", "1000000", "--period-ms", "1")
	require.ErrorContains(t, err, "more than one start per microsecond")
	_, err = chime(t, url, "definition", "add", "half", "--task-type", "sleep", "--params", `{"duration":"1s"}`, "--rate", "5")
	require.ErrorContains(t, err, "must be set together")
	_, err = chime(t, url, "definition", "add", "bad", "--task-type", "sleep", "--params", `{"duration":"1s"}`, "--required-tags", "has space")
	require.ErrorContains(t, err, `tag "has space" holds ' '`)
	_, err = chime(t, url, "definition", "add", "long", "--task-type", "sleep", "--params", `{"duration":"1s"}`, "--required-tags", strings.Repeat("x", 10000))
	require.ErrorContains(t, err, "more than 2100")
}
