package taskengine

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/chimesched/chime/internal/startstop"
)

// batcher gathers items sent from many job goroutines and hands them to
// flush in groups, the way river's completer does. It does not wait to fill
// a batch: when idle, the first item is flushed at once (no added latency);
// under load, items arrive while a flush runs and the next flush takes all
// of them (group commit).
//
// A batcher with linger waits for more while items announced (expect)
// are still on their way (a claim's starts, whose OnQueues end within
// microseconds of each other): up to linger between two items and 4 ×
// linger in all, on the engine's clock. Every announced item is either
// added or withdrawn, which ends the wait for it.
//
// It is a graceful service: Start runs it, and once its run ends (Stop,
// or Start's ctx) it flushes what it holds and returns. The engine stops
// it only after every sender has finished, so nothing is sent after that.
type batcher[T any] struct {
	startstop.Base
	in    chan T
	max   int
	flush func(ctx context.Context, batch []T)

	clock  clockwork.Clock
	linger time.Duration // 0: never wait for more
	// hold, when set, runs once an item has come and before the batch is
	// gathered: what arrives meanwhile joins the batch.
	hold func(ctx context.Context)
	// coming counts the items announced and neither received nor
	// withdrawn; gone says one was withdrawn (size 1).
	coming atomic.Int64
	gone   chan struct{}
}

func newBatcher[T any](size int, clock clockwork.Clock, flush func(ctx context.Context, batch []T)) *batcher[T] {
	return &batcher[T]{in: make(chan T, size), max: size, flush: flush, clock: clock, gone: make(chan struct{}, 1)}
}

// add queues one item; it blocks while the buffer is full. With linger,
// every item added must have been announced.
func (b *batcher[T]) add(item T) { b.in <- item }

// expect announces n items on their way.
func (b *batcher[T]) expect(n int) { b.coming.Add(int64(n)) }

// withdraw says an announced item will not come.
func (b *batcher[T]) withdraw() {
	b.coming.Add(-1)
	select {
	case b.gone <- struct{}{}:
	default:
	}
}

// received counts off an announced item that has come.
func (b *batcher[T]) received(item T) T {
	if b.linger > 0 {
		b.coming.Add(-1)
	}
	return item
}

// Start runs the batcher. Flushes run under a context with ctx's values
// that ends only when a Stop's ctx does: then they give up retrying.
func (b *batcher[T]) Start(ctx context.Context) error {
	runCtx, workCtx, finished, ok := b.StartInitGraceful(ctx)
	if !ok {
		return nil
	}
	go func() {
		defer finished(nil)
		b.run(runCtx, workCtx)
	}()
	return nil
}

// run flushes until runCtx ends, then drains.
func (b *batcher[T]) run(runCtx, workCtx context.Context) {
	batch := make([]T, 0, b.max)
	for {
		select {
		case item := <-b.in:
			if b.hold != nil {
				b.hold(runCtx)
			}
			b.flush(workCtx, b.gather(append(batch[:0], b.received(item))))
		case <-runCtx.Done():
			for {
				select {
				case item := <-b.in:
					b.flush(workCtx, b.gather(append(batch[:0], b.received(item))))
				default:
					return
				}
			}
		}
	}
}

// gather appends what is already waiting, up to max, and with linger what
// follows closely.
func (b *batcher[T]) gather(batch []T) []T {
	for len(batch) < b.max {
		select {
		case item := <-b.in:
			batch = append(batch, b.received(item))
		default:
			if b.linger <= 0 {
				return batch
			}
			return b.lingerOn(batch)
		}
	}
	return batch
}

func (b *batcher[T]) lingerOn(batch []T) []T {
	deadline := b.clock.Now().Add(4 * b.linger)
	t := b.clock.NewTimer(b.linger)
	defer t.Stop()
	for len(batch) < b.max && b.coming.Load() > 0 {
		select {
		case item := <-b.in:
			batch = append(batch, b.received(item))
			if b.clock.Now().After(deadline) {
				return batch
			}
			t.Reset(b.linger)
		case <-b.gone:
		case <-t.Chan():
			return batch
		}
	}
	return batch
}
