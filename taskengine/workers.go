package taskengine

import (
	"sync/atomic"

	"github.com/chimesched/chime/internal/metrics"
)

// workers counts the pool's workers that are spoken for: reserved by a
// claim or a hand-off before their jobs exist, then held by each job until
// its run ends. Claims and hand-offs take only free ones (from different
// goroutines: tryReserve is a compare-and-swap), so the jobs on this node
// never exceed the pool size.
type workers struct {
	size  atomic.Int64  // PoolSize; SetPoolSize changes it
	taken atomic.Int64  // never above size, unless the size shrank
	freed chan struct{} // a worker came free or the pool grew: size 1, sends never block
}

func newWorkers(size int) *workers {
	w := &workers{freed: make(chan struct{}, 1)}
	w.size.Store(int64(size))
	return w
}

// free is how many workers nothing has taken.
func (w *workers) free() int { return int(w.size.Load() - w.taken.Load()) }

// tryReserve takes up to n free workers and returns how many it took.
func (w *workers) tryReserve(n int) int {
	for {
		cur := w.taken.Load()
		free := w.size.Load() - cur
		if free <= 0 || n <= 0 {
			return 0
		}
		k := min(int64(n), free)
		if w.taken.CompareAndSwap(cur, cur+k) {
			return int(k)
		}
	}
}

// add takes n workers whether or not they are free: jobs that are this
// node's already.
func (w *workers) add(n int) { w.taken.Add(int64(n)) }

// release gives back n workers.
func (w *workers) release(n int) {
	if n <= 0 {
		return
	}
	metrics.PoolBusy.Set(float64(w.taken.Add(int64(-n))))
	w.notify()
}

// resize sets the pool size; a larger pool has free workers at once.
func (w *workers) resize(n int) {
	w.size.Store(int64(n))
	w.notify()
}

func (w *workers) notify() {
	select {
	case w.freed <- struct{}{}:
	default:
	}
}

// report publishes the busy workers.
func (w *workers) report() { metrics.PoolBusy.Set(float64(w.taken.Load())) }
