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
// a lease back) calls StopInit, does its work, and returns; or, when that
// work may take long and has to be cut short by Stop's ctx (let jobs
// finish, flush a buffer), it starts with StartInitGraceful and does the
// work on its own goroutine once its run context ends.
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
	grace   *graceRun          // the last run's, when it started with StartInitGraceful
}

// graceRun is what Stop needs of a graceful run.
type graceRun struct {
	abandon context.CancelFunc // ends the run's workCtx
	err     error              // the run's stop error; read once stopped is closed
}

var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// StartInit begins a run. ok is false when the service is already
// running: Start should then return nil. Otherwise runCtx is ctx with a
// cancel that StopInit calls, and the service must call finished exactly
// once, when every goroutine of this run has ended (at once if its start
// fails after StartInit).
func (b *Base) StartInit(ctx context.Context) (runCtx context.Context, finished func(), ok bool) {
	return b.startInit(ctx, nil)
}

func (b *Base) startInit(ctx context.Context, g *graceRun) (runCtx context.Context, finished func(), ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cancel != nil {
		return nil, nil, false
	}
	runCtx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	b.cancel, b.stopped, b.grace = cancel, stopped, g
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

// StartInitGraceful is StartInit for a service whose stop is work of its
// own, which it begins when runCtx ends: a drain, jobs given time to
// finish. It does that work under workCtx, which has ctx's values but not
// its cancellation, and ends only when the ctx of a Stop ends before the
// service has finished: the service then gives up what is left, promptly,
// and still calls finished. Stop returns the error given to finished, and
// waits for finished even when its ctx has ended.
func (b *Base) StartInitGraceful(ctx context.Context) (runCtx, workCtx context.Context, finished func(error), ok bool) {
	workCtx, abandon := context.WithCancel(context.WithoutCancel(ctx))
	g := &graceRun{abandon: abandon}
	runCtx, done, ok := b.startInit(ctx, g)
	if !ok {
		abandon()
		return nil, nil, nil, false
	}
	var once sync.Once
	return runCtx, workCtx, func(err error) {
		once.Do(func() {
			g.err = err
			abandon()
			done()
		})
	}, true
}

// StopInit cancels the running service's context and returns the channel
// its finished closes. ok is false when it was not running.
func (b *Base) StopInit() (stopped <-chan struct{}, ok bool) {
	stopped, _, ok = b.stopInit()
	return stopped, ok
}

// stopInit is StopInit that also returns the run's graceRun, if any.
func (b *Base) stopInit() (stopped <-chan struct{}, g *graceRun, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cancel == nil {
		return b.stoppedLocked(), b.grace, false
	}
	b.cancel()
	b.cancel = nil
	return b.stopped, b.grace, true
}

// Stop cancels the service and waits, within ctx, for its run to finish.
// It is safe to call more than once, and before Start. A service started
// with StartInitGraceful is told to give up when ctx ends, and waited for;
// Stop returns its stop error then.
func (b *Base) Stop(ctx context.Context) error {
	stopped, g, _ := b.stopInit()
	if g == nil {
		return Wait(ctx, stopped)
	}
	select {
	case <-stopped:
	case <-ctx.Done():
		g.abandon()
		<-stopped
	}
	return g.err
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
