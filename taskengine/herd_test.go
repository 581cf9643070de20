package taskengine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The completer's hold ends once the herd's starts have stopped for
// quiet, never before, and does not hold at all without a hand-off.
func TestHerdWatchHoldsUntilStartsStop(t *testing.T) {
	h := herdWatch{quiet: 20 * time.Millisecond, holdMax: time.Hour}
	h.wait(context.Background()) // no hand-off yet: no hold (else this test hangs)

	h.handedOff()
	h.starting()
	last := time.Now()
	h.wait(context.Background())
	require.GreaterOrEqual(t, time.Since(last), h.quiet, "the hold ended before the starts had been quiet for %v", h.quiet)
}

// However long the herd keeps starting, the hold ends holdMax after the
// hand-off, or when its context does (Stop).
func TestHerdWatchBounded(t *testing.T) {
	h := herdWatch{quiet: time.Hour, holdMax: 30 * time.Millisecond}
	h.handedOff()
	h.starting()
	h.wait(context.Background()) // else this test hangs for an hour

	h = herdWatch{quiet: time.Hour, holdMax: time.Hour}
	h.handedOff()
	h.starting()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h.wait(ctx)
}
