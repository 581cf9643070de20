package taskengine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// With linger a batcher keeps gathering items that come one by one (a
// claim's starts), so they go out in one flush instead of the first alone;
// a lone item is still flushed once the linger runs out.
func TestBatcherLinger(t *testing.T) {
	t.Parallel()
	flushed := make(chan []int, 10)
	b := newBatcher(3, func(_ context.Context, batch []int) { flushed <- append([]int(nil), batch...) })
	// Long enough that the test never sees it run out with three items.
	b.linger = time.Hour
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); b.run(t.Context(), stop) }()
	for i := range 3 {
		b.add(i)
		time.Sleep(time.Millisecond) // items one by one, not already waiting
	}
	require.Equal(t, []int{0, 1, 2}, <-flushed, "one flush: the batch filled while lingering")
	close(stop)
	<-done

	b = newBatcher(3, func(_ context.Context, batch []int) { flushed <- append([]int(nil), batch...) })
	b.linger = time.Millisecond
	stop = make(chan struct{})
	go b.run(t.Context(), stop)
	defer close(stop)
	b.add(7)
	select {
	case got := <-flushed:
		require.Equal(t, []int{7}, got)
	case <-time.After(10 * time.Second):
		t.Fatal("a lone item was not flushed after the linger")
	}
}
