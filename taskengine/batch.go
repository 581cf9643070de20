package taskengine

import "context"

// batcher gathers items sent from many job goroutines and hands them to
// flush in groups, the way river's completer does. It does not wait to fill
// a batch: when idle, the first item is flushed at once (no added latency);
// under load, items arrive while a flush runs and the next flush takes all
// of them (group commit). Every item accepted before stop is flushed before
// run returns.
type batcher[T any] struct {
	in    chan T
	max   int
	flush func(ctx context.Context, batch []T)
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

// gather appends what is already waiting, up to max.
func (b *batcher[T]) gather(batch []T) []T {
	for len(batch) < b.max {
		select {
		case item := <-b.in:
			batch = append(batch, item)
		default:
			return batch
		}
	}
	return batch
}
