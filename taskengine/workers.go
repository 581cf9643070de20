package taskengine

import (
	"sync/atomic"
	"time"

	"github.com/chimesched/chime/internal/metrics"
)

// workers counts the pool's workers that are spoken for: reserved by a
// claim or a hand-off before their jobs exist, then held by each job until
// its run ends. Claims and hand-offs take only free ones (from different
// goroutines: tryReserve is a compare-and-swap), so the jobs on this node
// never exceed the pool size, but for the backlog: a fire's hand-off may
// also take up to Config.Backlog places past the pool (tryReserveBacklog),
// for jobs that wait in the executor for a worker. Such a job holds its
// place as any other, so no claim runs while the backlog is not empty.
type workers struct {
	size    atomic.Int64  // PoolSize; SetPoolSize changes it
	backlog atomic.Int64  // Config.Backlog
	taken   atomic.Int64  // never above size + backlog, unless the size shrank
	freed   chan struct{} // a worker came free or the pool grew: size 1, sends never block
	// held is the moving average of how long a job holds its worker
	// (nanoseconds), once sampled: the backlog's bound (backlogRoom).
	held    atomic.Int64
	sampled atomic.Bool
}

// heldSamples weighs the moving average of held: a new run counts 1/16.
const heldSamples = 16

// noteHeld adds a run's time on its worker to the moving average.
func (w *workers) noteHeld(d time.Duration) {
	if w.sampled.CompareAndSwap(false, true) {
		w.held.Store(int64(d))
		return
	}
	for {
		old := w.held.Load()
		if w.held.CompareAndSwap(old, old+(int64(d)-old)/heldSamples) {
			return
		}
	}
}

// backlogRoom is how many jobs may wait for a worker: Config.Backlog, but
// no more than the pool is expected to start within within, at the pace
// its recent runs freed workers (long runs leave a burst to other nodes'
// claims rather than hold it here), and no more than the pool size
// before any run has been timed.
func (w *workers) backlogRoom(within time.Duration) int64 {
	b, size := w.backlog.Load(), w.size.Load()
	if b <= 0 {
		return 0
	}
	if !w.sampled.Load() {
		return min(b, size)
	}
	if held := w.held.Load(); held > 0 {
		b = min(b, size*int64(within)/held)
	}
	return b
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

// tryReserveBacklog takes up to n places, free workers first, then the
// backlog's (backlogRoom), and returns how many it took.
func (w *workers) tryReserveBacklog(n int, within time.Duration) int {
	backlog := w.backlogRoom(within)
	for {
		cur := w.taken.Load()
		room := w.size.Load() + backlog - cur
		if room <= 0 || n <= 0 {
			return 0
		}
		k := min(int64(n), room)
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
	w.publish(w.taken.Add(int64(-n)))
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
func (w *workers) report() { w.publish(w.taken.Load()) }

// publish sets the busy workers' gauge: the places taken, but for those
// of the backlog (metrics.PoolBacklog counts its jobs).
func (w *workers) publish(taken int64) { metrics.PoolBusy.Set(float64(min(taken, w.size.Load()))) }
