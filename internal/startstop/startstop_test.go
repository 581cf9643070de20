package startstop

import (
	"context"
	"errors"
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

// drainer is a graceful service: when its run ends it drains, which takes
// until release is closed or its workCtx ends (a Stop's ctx ended).
type drainer struct {
	Base
	release chan struct{}
}

func (d *drainer) Start(ctx context.Context) error {
	runCtx, workCtx, finished, ok := d.StartInitGraceful(ctx)
	if !ok {
		return nil
	}
	go func() {
		<-runCtx.Done()
		select {
		case <-d.release:
			finished(nil)
		case <-workCtx.Done():
			finished(errors.New("drain cut short"))
		}
	}()
	return nil
}

func TestGracefulStop(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	d := &drainer{release: make(chan struct{})}
	require.NoError(t, d.Stop(ctx), "stop before start is harmless")
	require.NoError(t, d.Start(ctx))

	// Stop waits for the drain; a Stop whose ctx ends cuts it short and
	// still waits for it to end, and returns the service's error.
	short, cancel := context.WithCancel(ctx)
	stopErr := make(chan error, 1)
	go func() { stopErr <- d.Stop(short) }()
	select {
	case <-d.Stopped():
		t.Fatal("stopped before its drain ended")
	case err := <-stopErr:
		t.Fatalf("Stop returned before the drain ended: %v", err)
	default:
	}
	cancel()
	require.EqualError(t, <-stopErr, "drain cut short")
	require.True(t, isClosed(d.Stopped()))
	require.EqualError(t, d.Stop(ctx), "drain cut short", "a later Stop says how the run ended")

	// It starts again, and a run that ends with its Start's ctx drains
	// without anyone calling Stop.
	cctx, cancelRun := context.WithCancel(ctx)
	require.NoError(t, d.Start(cctx))
	cancelRun()
	close(d.release)
	select {
	case <-d.Stopped():
	case <-time.After(10 * time.Second):
		t.Fatal("the service did not stop with its context")
	}
	require.NoError(t, d.Stop(ctx))
}
