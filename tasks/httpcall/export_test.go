package httpcall

import "time"

// SetDefaultTimeout lets a test shorten the default rather than wait for
// it; it returns the function that restores it.
func SetDefaultTimeout(d time.Duration) (restore func()) {
	old := defaultTimeout
	defaultTimeout = d
	return func() { defaultTimeout = old }
}
