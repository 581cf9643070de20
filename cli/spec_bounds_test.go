package cli

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chimesched/chime/models"
)

// An interval out of models.IntervalBound (written by SQL on SQLite) is
// shown as the row holds it, not as a duration that wrapped negative.
func TestSpecIntervalOutOfRange(t *testing.T) {
	t.Parallel()
	v := 9223372037
	require.Equal(t, "every 9223372037s (out of range)", spec(&models.Schedule{IntervalSeconds: &v}))
	v = 90
	require.Equal(t, "every 1m30s", spec(&models.Schedule{IntervalSeconds: &v}))
}
