package startstop

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// service is the smallest user of Base: one goroutine until its ctx ends.
type service struct{ Base }

func (s *service) Start(ctx context.Context) error {
	ctx, finished, ok := s.StartInit(ctx)
	if !ok {
		return nil
	}
	go func() {
		defer finished()
		<-ctx.Done()
	}()
	return nil
}

var _ Service = (*service)(nil)

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestLifecycle(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := &service{}
	require.True(t, isClosed(s.Stopped()), "a new service is stopped")
	require.NoError(t, s.Stop(ctx), "stop before start is harmless")

	require.NoError(t, s.Start(ctx))
	stopped := s.Stopped()
	require.False(t, isClosed(stopped))
	_, _, ok := s.StartInit(ctx)
	require.False(t, ok, "a running service does not start twice")
	require.NoError(t, s.Stop(ctx))
	require.True(t, isClosed(stopped))
	require.NoError(t, s.Stop(ctx), "stop twice is harmless")

	// A run that ends with its context may start again.
	cctx, cancel := context.WithCancel(ctx)
	require.NoError(t, s.Start(cctx))
	cancel()
	select {
	case <-s.Stopped():
	case <-time.After(10 * time.Second):
		t.Fatal("the service did not stop with its context")
	}
	require.NoError(t, s.Start(ctx))
	require.False(t, isClosed(s.Stopped()))
	require.NoError(t, s.Stop(ctx))
}

// Stop gives up when its ctx ends before the service has finished.
func TestStopTimesOut(t *testing.T) {
	t.Parallel()
	var b Base
	_, finished, ok := b.StartInit(t.Context())
	require.True(t, ok)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, b.Stop(ctx), context.Canceled)
	finished()
	require.True(t, isClosed(b.Stopped()))
	finished() // twice is harmless
}
