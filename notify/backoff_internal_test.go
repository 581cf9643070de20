package notify

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// notifications.attempts is an INT an admin may set by SQL: a try number
// below 1 shifted Backoff by a negative count, which panics.
func TestBackoffOfAnyAttempt(t *testing.T) {
	t.Parallel()
	s := &Sender{cfg: SenderConfig{Backoff: 30 * time.Second, MaxBackoff: time.Hour}}
	for _, attempt := range []int{math.MinInt, -5, 0, 1, 2, 40, math.MaxInt} {
		d := s.backoff(attempt)
		require.Positive(t, d, "attempt %d", attempt)
		require.LessOrEqual(t, d, time.Hour, "attempt %d", attempt)
	}
}
