package taskengine

import (
	"context"
	"time"
)

// batcher gathers items sent from many job goroutines and hands them to
// flush in groups, the way river's completer does. It does not wait to fill
// a batch: when idle, the first item is flushed at once (no added latency);
// under load, items arrive while a flush runs and the next flush takes all
// of them (group commit). A batcher with linger waits that long for one more
// item, which suits items that come in bursts. Every item accepted before
// stop is flushed before run returns.
type batcher[T any] struct {
	in    chan T
	max   int
	flush func(ctx context.Context, batch []T)
	// linger, when set, keeps gathering while items keep coming at most
	// linger apart (bounded by 4 × linger in all).
	linger time.Duration
}

func newBatcher[T any](size int, flush func(ctx context.Context, batch []T)) *batcher[T] {
	return &batcher[T]{in: make(chan T, size), max: size, flush: flush}
}

// add queues one item; it blocks while the buffer is full.
func (b *batcher[T]) add(item T) { b.in <- item }

// run flushes until stop is closed, then drains. Callers close stop only
// after every sender has finished, so nothing is sent after the drain.
func (b *batcher[T]) run(ctx context.Context, stop <-chan struct{}) {
	batch := make([]T, 0, b.max)
	for {
		select {
		case item := <-b.in:
			batch = append(batch[:0], item)
			batch = b.gather(batch)
			b.flush(ctx, batch)
		case <-stop:
			for {
				select {
				case item := <-b.in:
					batch = append(batch[:0], item)
					batch = b.gather(batch)
					b.flush(ctx, batch)
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
			batch = append(batch, item)
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
	deadline := time.Now().Add(4 * b.linger)
	t := time.NewTimer(b.linger)
	defer t.Stop()
	for len(batch) < b.max {
		select {
		case item := <-b.in:
			batch = append(batch, item)
			if time.Now().After(deadline) {
				return batch
			}
			t.Reset(b.linger)
		case <-t.C:
			return batch
		}
	}
	return batch
}
