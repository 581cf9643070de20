// Package testsignal lets a test wait for an event inside a service
// instead of polling for its effects, after river's rivershared/testsignal.
// A service holds a Signal per event and calls Signal(v) when it happens;
// that is a no-op unless a test called Init, after which the test waits
// with WaitOrTimeout. Production code pays one nil check per event.
package testsignal

import "time"

// TB is the part of testing.TB a Signal uses, so that services need not
// import testing.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
}

// bufferSize bounds the events a test may leave unread: a test that Inits
// a signal reads what it needs and must not let more pile up.
const bufferSize = 50

// WaitTimeout is how long WaitOrTimeout waits: a deadline for a hung
// service on a loaded machine, not a measure of anything.
const WaitTimeout = 30 * time.Second

// Signal is one kind of event of a service. The zero value ignores every
// Signal call.
type Signal[T any] struct {
	ch chan T
	tb TB
}

// Init makes the signal record its events for tb. Tests only.
func (s *Signal[T]) Init(tb TB) {
	s.ch = make(chan T, bufferSize)
	s.tb = tb
}

// Signal records one event, never blocking: without Init it does nothing;
// with a full buffer it fails the test.
func (s *Signal[T]) Signal(v T) {
	if s.ch == nil {
		return
	}
	select {
	case s.ch <- v:
	default:
		s.tb.Errorf("testsignal: %d events unread: the buffer is full", bufferSize)
	}
}

// WaitOrTimeout returns the next event, or fails the test after
// WaitTimeout and returns the zero value.
func (s *Signal[T]) WaitOrTimeout() T {
	s.mustInit()
	s.tb.Helper()
	t := time.NewTimer(WaitTimeout)
	defer t.Stop()
	select {
	case v := <-s.ch:
		return v
	case <-t.C:
		s.tb.Errorf("testsignal: no event within %s", WaitTimeout)
		var zero T
		return zero
	}
}

// RequireEmpty fails the test if an event is waiting.
func (s *Signal[T]) RequireEmpty() {
	s.mustInit()
	s.tb.Helper()
	select {
	case v := <-s.ch:
		s.tb.Errorf("testsignal: want no event, got %v", v)
	default:
	}
}

func (s *Signal[T]) mustInit() {
	if s.ch == nil {
		panic("testsignal: signal not initialized (Init is for tests)")
	}
}
