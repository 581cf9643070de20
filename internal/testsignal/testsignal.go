// Package testsignal lets a test wait for what a service did instead of
// polling for its effects, after river's testsignal. A service keeps a
// Signal per event a test may wait for and calls Signal where the event
// happens; a test calls Init before it starts the service and then waits.
//
// The zero Signal records nothing: in production a Signal costs a nil
// check. A service whose value is expensive to build asks Enabled first.
//
// Unlike river's channel, a Signal keeps every value since Init (a test
// that waits for job 7 is not disturbed by job 8 finishing first, and a
// value signalled before the wait began still counts), and it never
// blocks or fills up.
package testsignal

import (
	"sync"
	"time"
)

// Timeout is how long a wait lasts before it fails the test: generous, as
// a wait is not a timing assertion.
const Timeout = 20 * time.Second

// TB is the part of testing.TB a Signal uses; production code does not
// import testing.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Signal records values of one event for a test. Init must happen before
// the service that signals runs.
type Signal[T any] struct{ r *recorder[T] }

type recorder[T any] struct {
	tb      TB
	timeout time.Duration
	mu      sync.Mutex
	vals    []T
	next    int           // WaitOrTimeout's cursor
	grew    chan struct{} // closed, and replaced, when a value is added
}

// Init makes s record; only tests call it.
func (s *Signal[T]) Init(tb TB) {
	s.r = &recorder[T]{tb: tb, timeout: Timeout, grew: make(chan struct{})}
}

// Enabled reports whether a test has called Init.
func (s *Signal[T]) Enabled() bool { return s.r != nil }

// Signal records v, when a test has called Init; it never blocks.
func (s *Signal[T]) Signal(v T) {
	r := s.r
	if r == nil {
		return
	}
	r.mu.Lock()
	r.vals = append(r.vals, v)
	close(r.grew)
	r.grew = make(chan struct{})
	r.mu.Unlock()
}

// Len is the number of values signalled so far: a mark for WaitFrom.
func (s *Signal[T]) Len() int {
	r := s.must()
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.vals)
}

// Values returns the values signalled so far.
func (s *Signal[T]) Values() []T {
	r := s.must()
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]T(nil), r.vals...)
}

// WaitFor returns the first value signalled since Init that match
// accepts, waiting for one if need be; it fails the test after Timeout,
// saying what it waited for.
func (s *Signal[T]) WaitFor(what string, match func(T) bool) T {
	s.must().tb.Helper()
	return s.WaitFrom(0, what, match)
}

// WaitFrom is WaitFor among the values signalled after the first mark
// ones (see Len).
func (s *Signal[T]) WaitFrom(mark int, what string, match func(T) bool) T {
	r := s.must()
	r.tb.Helper()
	deadline := time.NewTimer(r.timeout)
	defer deadline.Stop()
	for i := mark; ; {
		r.mu.Lock()
		vals, grew := r.vals, r.grew
		r.mu.Unlock()
		for ; i < len(vals); i++ {
			if match(vals[i]) {
				return vals[i]
			}
		}
		select {
		case <-grew:
		case <-deadline.C:
			r.tb.Fatalf("testsignal: no signal of %s within %v", what, r.timeout)
			var zero T
			return zero
		}
	}
}

// WaitOrTimeout returns the next value in the order they were signalled
// that no WaitOrTimeout has returned yet, waiting for one if need be; it
// fails the test after Timeout.
func (s *Signal[T]) WaitOrTimeout() T {
	r := s.must()
	r.tb.Helper()
	r.mu.Lock()
	next := r.next
	r.next++
	r.mu.Unlock()
	return s.WaitFrom(next, "the next value", func(T) bool { return true })
}

// RequireEmpty fails the test if a value was signalled that no
// WaitOrTimeout has returned yet.
func (s *Signal[T]) RequireEmpty() {
	r := s.must()
	r.tb.Helper()
	r.mu.Lock()
	left := r.vals[min(r.next, len(r.vals)):]
	r.mu.Unlock()
	if len(left) > 0 {
		r.tb.Fatalf("testsignal: want no value, got %v", left)
	}
}

func (s *Signal[T]) must() *recorder[T] {
	if s.r == nil {
		panic("testsignal: signal not initialised: Init it in the test before the service starts")
	}
	return s.r
}
