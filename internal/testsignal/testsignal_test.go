package testsignal

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestZeroSignalRecordsNothing(t *testing.T) {
	t.Parallel()
	var s Signal[int]
	require.False(t, s.Enabled())
	s.Signal(1) // a no-op, as in production
	require.Panics(t, func() { s.Len() }, "waiting on a signal no test initialised is a bug in the test")
}

func TestWaitForFindsEarlierAndLaterValues(t *testing.T) {
	t.Parallel()
	var s Signal[int]
	s.Init(t)
	s.Signal(8)
	s.Signal(7)
	require.Equal(t, 7, s.WaitFor("7", func(v int) bool { return v == 7 }), "a value signalled before the wait counts")
	mark := s.Len()
	go s.Signal(9)
	require.Equal(t, 9, s.WaitFrom(mark, "9", func(v int) bool { return v > 8 }))
	require.Equal(t, []int{8, 7, 9}, s.Values())
}

func TestWaitOrTimeoutInOrder(t *testing.T) {
	t.Parallel()
	var s Signal[string]
	s.Init(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 3 {
			s.Signal(fmt.Sprint(i))
		}
	}()
	for i := range 3 {
		require.Equal(t, fmt.Sprint(i), s.WaitOrTimeout())
	}
	<-done
	s.RequireEmpty()
}

func TestRequireEmptyFailsOnAnUnreadValue(t *testing.T) {
	t.Parallel()
	var s Signal[int]
	tb := &fakeTB{}
	s.Init(tb)
	s.RequireEmpty()
	require.Empty(t, tb.failed)
	s.Signal(1)
	s.Signal(2)
	require.Equal(t, 1, s.WaitOrTimeout())
	s.RequireEmpty()
	require.Contains(t, tb.failed, "want no value, got [2]")
}

// fakeTB records a failure instead of ending the test.
type fakeTB struct{ failed string }

func (f *fakeTB) Helper()                           {}
func (f *fakeTB) Fatalf(format string, args ...any) { f.failed = fmt.Sprintf(format, args...) }

func TestWaitFailsTheTestAfterTimeout(t *testing.T) {
	t.Parallel()
	var s Signal[int]
	tb := &fakeTB{}
	s.Init(tb)
	s.r.timeout = time.Millisecond
	s.WaitFor("job 7", func(v int) bool { return v == 7 })
	require.Contains(t, tb.failed, "no signal of job 7")
}
