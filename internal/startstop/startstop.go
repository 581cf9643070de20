// Package startstop is the lifecycle every long-running chime service
// shares, after river's startstop: New(deps, *Config) builds a stopped
// service, Start(ctx) runs it, Stop(ctx) ends it, and Stopped() is closed
// whenever it is not running. A service embeds Base and calls StartInit at
// the top of Start and the returned finished once its goroutines have
// ended; Base supplies Stop (cancel, then wait) and Stopped.
//
//	func (s *Service) Start(ctx context.Context) error {
//		ctx, finished, ok := s.StartInit(ctx)
//		if !ok {
//			return nil // already running
//		}
//		go func() { defer finished(); s.run(ctx) }()
//		return nil
//	}
//
// A service whose stop does more than cancel and wait (drain a pool, give
// a lease back) calls StopInit, does its work, and returns.
package startstop

import (
	"context"
	"fmt"
	"sync"
)

// Service is the shape every long-running service has.
type Service interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	Stopped() <-chan struct{}
}

// Base holds one service's running state. The zero value is a stopped
// service; it may be started again after each Stop.
type Base struct {
	mu      sync.Mutex
	cancel  context.CancelFunc // nil when not running
	stopped chan struct{}      // closed once the last run has finished
}

var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// StartInit begins a run. ok is false when the service is already
// running: Start should then return nil. Otherwise runCtx is ctx with a
// cancel that StopInit calls, and the service must call finished exactly
// once, when every goroutine of this run has ended (at once if its start
// fails after StartInit).
func (b *Base) StartInit(ctx context.Context) (runCtx context.Context, finished func(), ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cancel != nil {
		return nil, nil, false
	}
	runCtx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	b.cancel, b.stopped = cancel, stopped
	var once sync.Once
	return runCtx, func() {
		once.Do(func() {
			b.mu.Lock()
			if b.stopped == stopped {
				// A run that ended by itself (its ctx ended, or its start
				// failed) is not running any more: Start may run it again.
				b.cancel = nil
			}
			b.mu.Unlock()
			cancel()
			close(stopped)
		})
	}, true
}

// StopInit cancels the running service's context and returns the channel
// its finished closes. ok is false when it was not running.
func (b *Base) StopInit() (stopped <-chan struct{}, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cancel == nil {
		return b.stoppedLocked(), false
	}
	b.cancel()
	b.cancel = nil
	return b.stopped, true
}

// Stop cancels the service and waits, within ctx, for its run to finish.
// It is safe to call more than once, and before Start.
func (b *Base) Stop(ctx context.Context) error {
	stopped, _ := b.StopInit()
	return Wait(ctx, stopped)
}

// Stopped is closed when the service is not running.
func (b *Base) Stopped() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stoppedLocked()
}

func (b *Base) stoppedLocked() chan struct{} {
	if b.stopped == nil {
		return closed
	}
	return b.stopped
}

// Wait waits for ch to close, or returns ctx's error first.
func Wait(ctx context.Context, ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop: %w", ctx.Err())
	}
}
