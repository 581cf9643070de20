package testsignal

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// recorder is a TB that keeps the failures instead of failing the test.
type recorder struct{ errs []string }

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestSignal(t *testing.T) {
	t.Parallel()
	var off Signal[int]
	off.Signal(1) // not initialized: nothing happens
	require.Panics(t, func() { off.RequireEmpty() })

	var s Signal[int]
	s.Init(t)
	s.RequireEmpty()
	s.Signal(1)
	s.Signal(2)
	require.Equal(t, 1, s.WaitOrTimeout())
	require.Equal(t, 2, s.WaitOrTimeout())
	s.RequireEmpty()
}

func TestSignalFull(t *testing.T) {
	t.Parallel()
	var r recorder
	var s Signal[int]
	s.Init(&r)
	for i := range bufferSize + 1 {
		s.Signal(i)
	}
	require.Len(t, r.errs, 1, "the event beyond the buffer fails the test")
	s.RequireEmpty()
	require.Len(t, r.errs, 2, "an unread event fails RequireEmpty")
}
