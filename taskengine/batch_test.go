package taskengine

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
)

// While more items are on their way a batcher with linger keeps gathering
// those that come one by one (a claim's starts), so they go out in one
// flush instead of the first alone; with none on its way, or once the
// linger runs out on the clock, it flushes what it has.
func TestBatcherLinger(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := clockwork.NewFakeClock()
	flushed := make(chan []int, 10)
	b := newBatcher(3, clock, func(_ context.Context, batch []int) { flushed <- append([]int(nil), batch...) })
	b.linger = time.Millisecond
	require.NoError(t, b.Start(ctx))
	defer func() { require.NoError(t, b.Stop(ctx)) }()

	b.expect(3)
	for i := range 3 {
		b.add(i)
		if i < 2 {
			// The batcher has taken what was there and lingers for the
			// next: items one by one, not already waiting.
			require.NoError(t, clock.BlockUntilContext(ctx, 1))
		}
	}
	require.Equal(t, []int{0, 1, 2}, <-flushed, "one flush: the batch filled while lingering")

	b.expect(1)
	b.add(7) // nothing else on its way: flushed at once
	require.Equal(t, []int{7}, <-flushed)

	b.expect(2)
	b.add(8)
	require.NoError(t, clock.BlockUntilContext(ctx, 1))
	b.withdraw() // the other will not come after all
	require.Equal(t, []int{8}, <-flushed)

	b.expect(2)
	b.add(9)
	require.NoError(t, clock.BlockUntilContext(ctx, 1))
	clock.Advance(time.Millisecond)
	require.Equal(t, []int{9}, <-flushed, "the linger ran out")
	b.withdraw()
}

// Stop flushes what the batcher holds, and it starts again.
func TestBatcherDrainsAtStop(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var got []int
	b := newBatcher(100, clockwork.NewFakeClock(), func(_ context.Context, batch []int) { got = append(got, batch...) })
	for range 2 {
		for i := range 5 {
			b.add(i)
		}
		require.NoError(t, b.Start(ctx))
		require.NoError(t, b.Stop(ctx))
	}
	require.Equal(t, []int{0, 1, 2, 3, 4, 0, 1, 2, 3, 4}, got)
}
