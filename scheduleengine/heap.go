package scheduleengine

import (
	"container/heap"
	"time"
)

// dueHeap orders the engine's entries by when they are taken up
// (entry.wake: the next intended time, less the fire-ahead lead): its
// top is the instant the gocron alarm wakes the run loop for, and a
// wake-up takes every schedule due from it at once. Every entry of
// Engine.entries with a next fire is in the heap, in Engine.due, or in a
// batch in flight (more than one is harmless: due is a set and track is
// idempotent). entry.hidx is the position, -1 when not held.
type dueHeap []*entry

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].wake().Before(h[j].wake()) }
func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].hidx, h[j].hidx = int32(i), int32(j)
}
func (h *dueHeap) Push(x any) {
	en := x.(*entry)
	en.hidx = int32(len(*h))
	*h = append(*h, en)
}
func (h *dueHeap) Pop() any {
	old := *h
	en := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	en.hidx = -1
	return en
}

// track puts en in the heap, or moves it after its next changed, or takes
// it out once next is zero.
func (h *dueHeap) track(en *entry) {
	switch {
	case en.hidx < 0 && !en.next.IsZero():
		heap.Push(h, en)
	case en.hidx >= 0 && en.next.IsZero():
		heap.Remove(h, int(en.hidx))
	case en.hidx >= 0:
		heap.Fix(h, int(en.hidx))
	}
}

// untrack takes en out of the heap.
func (h *dueHeap) untrack(en *entry) {
	if en.hidx >= 0 {
		heap.Remove(h, int(en.hidx))
	}
}

// popDue takes out every entry to take up at or before now (entry.wake)
// and calls fn with it.
func (h *dueHeap) popDue(now time.Time, fn func(*entry)) {
	for len(*h) > 0 && !(*h)[0].wake().After(now) {
		fn(heap.Pop(h).(*entry))
	}
}

// peek returns the earliest wake time, zero when the heap is empty.
func (h dueHeap) peek() time.Time {
	if len(h) == 0 {
		return time.Time{}
	}
	return h[0].wake()
}
